"""Start the Dagster UI as a user does (`make ui`: the webserver and the daemon on workspace.yaml): a dump
copied into the landing folder is found by the landing sensor, which adds the snapshot partition and runs
the build; then a partition is materialized from the UI over GraphQL, as a user clicking "Materialize"
would, and a `kiltpipe build` run shows under its job and in the asset's history as that one does."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from assets.storage import build_state
from orchestration.run_launcher import prepare_dagster_home
from support.dump_variants import article_subset, read_xml, write_dump
from tests.conftest import REPO

pytestmark = pytest.mark.slow
ARTICLES = ["Achilles", "Albedo", "Ayn Rand"]
KILTPIPE = Path(sys.executable).parent / "kiltpipe"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = json.loads(response.read())
    assert "errors" not in payload, payload["errors"]
    return payload["data"]


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # server still starting
            last_error = exc
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}: {last_error}")


@pytest.fixture
def dagster_ui(tmp_path: Path, excerpt: Path):
    port = _free_port()
    home = tmp_path / "dagster_home"
    home.mkdir()
    prepare_dagster_home(home)  # what `make ui` gives a home without settings: the monitored launcher
    landing = tmp_path / "landing"
    landing.mkdir()
    settings = yaml.safe_load((REPO / "params.yaml").read_text())
    settings["snapshots"].update(sensor_interval_seconds=2, settle_seconds=2, sensor_running=True)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(settings))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "KILT_DATA_DIR": str(tmp_path / "data"),
        "KILT_LANDING_DIR": str(landing),
        "KILT_PARAMS": str(tmp_path / "params.yaml"),
        # every step of a run in its run worker: Dagster's multiprocess default starts a process per step,
        # each importing the pipeline (~3 s), which only slows this test; the Dask tests run steps apart
        "KILT_EXECUTOR": "in_process",
    }
    log = open(tmp_path / "dagster-dev.log", "w")  # noqa: SIM115 - closed below
    # own process group: dagster dev ignores SIGTERM in some sandboxes, so the whole group is killed
    process = subprocess.Popen(  # what a user runs: the webserver and the daemon
        ["make", "--no-print-directory", "ui"],
        cwd=REPO,
        env={**env, "DAGSTER_PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield port, tmp_path / "data", landing, tmp_path / "dagster-dev.log", env
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


RUNS_QUERY = """
    query Runs($filter: RunsFilter) {
      runsOrError(filter: $filter) { ... on Runs { results { runId status tags { key value } } } }
    }
"""


def _finished_run(port: int, run_filter: dict) -> dict | None:
    runs = _graphql(port, RUNS_QUERY, {"filter": run_filter})["runsOrError"]["results"]
    done = [r for r in runs if r["status"] in ("SUCCESS", "FAILURE", "CANCELED")]
    return done[0] if done else None


def test_landing_sensor_builds_a_new_dump_through_the_daemon(
    dagster_ui, excerpt: Path, tmp_path: Path
) -> None:
    port, data_dir, landing, log, env = dagster_ui
    query = "{ assetNodes { assetKey { path } hasAssetChecks } }"
    nodes = _wait_for(lambda: _graphql(port, query)["assetNodes"], 180, f"the UI on port {port} ({log})")
    keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
    assert keys >= {
        "wikipedia_dump",
        "knowledge_source",
        "knowledge_source_jsonl",
        "passages",
        "provenance_store",
        "remapped_datasets",
        "bm25_index",
        "dense_index",
    }
    assert next(n for n in nodes if n["assetKey"]["path"] == ["knowledge_source"])["hasAssetChecks"]

    # a dump lands (three real articles of the excerpt): its md5sums first, then the file under a
    # temporary name, renamed when copied
    snapshot = "enwiki-20160501"
    name = f"{snapshot}-pages-articles.xml.bz2"
    staged = write_dump(tmp_path / name, article_subset(read_xml(excerpt), ARTICLES), "bz2")
    md5 = hashlib.md5(staged.read_bytes()).hexdigest()
    (landing / f"{snapshot}-md5sums.txt").write_text(f"{md5}  {name}\n")
    shutil.copy(staged, landing / f".{name}.partial")
    (landing / f".{name}.partial").rename(landing / name)

    partition = {"tags": [{"key": "dagster/partition", "value": snapshot}]}
    run = _wait_for(lambda: _finished_run(port, partition), 1500, f"the sensor's run ({log})")
    assert run["status"] == "SUCCESS", log.read_text()[-3000:]
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags["kilt/trigger"] == "landing" and tags["dagster/sensor_name"] == "dump_landing_sensor"
    manifest = data_dir / "snapshots" / snapshot / "knowledge_source" / "manifest.json"
    assert json.loads(manifest.read_text())["articles"] == len(ARTICLES)
    assert build_state(data_dir, snapshot).record["command"] == "Dagster run of build_all"  # its executor
    checks = _graphql(
        port,
        """
        { assetNodeOrError(assetKey: {path: ["knowledge_source"]}) {
            ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks {
              name executionForLatestMaterialization { status partition } } } } } } }
        """,
    )["assetNodeOrError"]["assetChecksOrError"]["checks"]
    assert {c["name"]: c["executionForLatestMaterialization"]["status"] for c in checks} == {
        "unique_ids_and_titles": "SUCCEEDED",
        "no_empty_article": "SUCCEEDED",
        "anchors_inside_paragraphs": "SUCCEEDED",
        "redirects_resolved_or_counted": "SUCCEEDED",
    }
    assert {c["executionForLatestMaterialization"]["partition"] for c in checks} == {snapshot}
    partitions = _graphql(
        port,
        """
        { assetNodeOrError(assetKey: {path: ["dense_index"]}) {
            ... on AssetNode { partitionKeys partitionStats { numMaterialized } } } }
        """,
    )["assetNodeOrError"]
    assert partitions["partitionKeys"] == [snapshot] and partitions["partitionStats"]["numMaterialized"] == 1

    # the same partition materialized from the UI: the KILT JSONL export alone
    repos = _graphql(
        port, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
    )
    repo = repos["repositoriesOrError"]["nodes"][0]
    launched = _graphql(
        port,
        """
        mutation Launch($params: ExecutionParams!) {
          launchRun(executionParams: $params) {
            __typename
            ... on LaunchRunSuccess { run { runId } }
            ... on PythonError { message }
            ... on RunConfigValidationInvalid { errors { message } }
          }
        }
        """,
        {
            "params": {
                "selector": {
                    "repositoryLocationName": repo["location"]["name"],
                    "repositoryName": repo["name"],
                    "jobName": "build_all",
                    "assetSelection": [{"path": ["knowledge_source_jsonl"]}],
                },
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": snapshot}]},
                "runConfigData": {},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    exported = _wait_for(lambda: _finished_run(port, {"runIds": [run_id]}), 600, f"run {run_id} ({log})")
    assert exported["status"] == "SUCCESS", log.read_text()[-3000:]
    assert (data_dir / "snapshots" / snapshot / "exports" / "kilt_knowledgesource.jsonl").is_file()
    # every path the UI shows in an asset's metadata exists: the published files, not the staging folder
    paths_shown = _graphql(
        port,
        """
        { assetNodes { assetKey { path }
            assetMaterializations(limit: 1) { runId metadataEntries {
              label ... on PathMetadataEntry { path } } } } }
        """,
    )["assetNodes"]
    shown = {
        f"{'/'.join(node['assetKey']['path'])}.{entry['label']}": entry["path"]
        for node in paths_shown
        for materialization in node["assetMaterializations"]
        for entry in materialization["metadataEntries"]
        if entry.get("path")
    }
    assert len(shown) >= 8 and "knowledge_source.snapshot_path" in shown, shown
    assert not [k for k, v in shown.items() if not Path(v).exists() or "/.staging/" in v], shown

    # a build started with `kiltpipe build` is a run of the job, where the UI lists the job's runs
    cli = subprocess.run(
        [str(KILTPIPE), "build", "--data-dir", str(data_dir), "--snapshot", snapshot, "--quiet",
         "--select", "key:knowledge_source_jsonl"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr[-3000:]
    cli_run = json.loads(cli.stdout)["run_id"]
    job_runs = _graphql(
        port,
        """
        query JobRuns($selector: PipelineSelector!) {
          pipelineOrError(params: $selector) { ... on Pipeline { runs { runId } } } }
        """,
        {
            "selector": {
                "repositoryLocationName": repo["location"]["name"],
                "repositoryName": repo["name"],
                "pipelineName": "build_all",
            }
        },
    )["pipelineOrError"]["runs"]
    assert cli_run in {r["runId"] for r in job_runs} and run_id in {r["runId"] for r in job_runs}
    history = _graphql(
        port,
        """
        query History($partition: String!) {
          assetNodeOrError(assetKey: {path: ["knowledge_source_jsonl"]}) {
            ... on AssetNode { assetMaterializations(partitions: [$partition]) { runId } } } }
        """,
        {"partition": snapshot},
    )["assetNodeOrError"]["assetMaterializations"]
    assert {cli_run, run_id} <= {m["runId"] for m in history}

    assert "superseded" not in log.read_text()  # `make ui` uses the current entry points

    # the sensor requested the dump once: one sensor run in all
    by_sensor = {"tags": [{"key": "dagster/sensor_name", "value": "dump_landing_sensor"}]}
    sensor_runs = _graphql(port, RUNS_QUERY, {"filter": by_sensor})["runsOrError"]["results"]
    assert len(sensor_runs) == 1
