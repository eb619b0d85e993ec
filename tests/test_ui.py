"""Start the Dagster UI (`dagster dev -w workspace.yaml`), find the assets over GraphQL and
materialize them from there, as a user clicking "Materialize all" would."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
DAGSTER = Path(sys.executable).parent / "dagster"


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
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "KILT_DATA_DIR": str(tmp_path / "data")}
    log = open(tmp_path / "dagster-dev.log", "w")  # noqa: SIM115 - closed below
    # own process group: dagster dev ignores SIGTERM in some sandboxes, so the whole group is killed
    process = subprocess.Popen(
        [str(DAGSTER), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield port, tmp_path / "data", tmp_path / "dagster-dev.log"
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


def test_ui_lists_assets_and_materializes(dagster_ui) -> None:
    port, data_dir, log = dagster_ui
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
    }
    assert next(n for n in nodes if n["assetKey"]["path"] == ["knowledge_source"])["hasAssetChecks"]

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
                },
                "runConfigData": {},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    status_query = """
        query Status($runId: ID!) { runOrError(runId: $runId) { ... on Run { status } } }
    """

    def finished() -> str | None:
        status = _graphql(port, status_query, {"runId": run_id})["runOrError"]["status"]
        return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None

    assert _wait_for(finished, 1500, f"run {run_id} ({log})") == "SUCCESS", log.read_text()[-3000:]
    manifest = data_dir / "snapshots" / "enwiki-20160501" / "knowledge_source" / "manifest.json"
    assert json.loads(manifest.read_text())["articles"] == 106
    checks = _graphql(
        port,
        """
        { assetNodeOrError(assetKey: {path: ["knowledge_source"]}) {
            ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks {
              name executionForLatestMaterialization { status } } } } } } }
        """,
    )["assetNodeOrError"]["assetChecksOrError"]["checks"]
    assert {c["name"]: c["executionForLatestMaterialization"]["status"] for c in checks} == {
        "unique_ids_and_titles": "SUCCEEDED",
        "no_empty_article": "SUCCEEDED",
        "anchors_inside_paragraphs": "SUCCEEDED",
        "redirects_resolved_or_counted": "SUCCEEDED",
    }
