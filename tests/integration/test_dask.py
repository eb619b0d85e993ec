"""Builds on Dask: the excerpt up to the passages on a 2-worker ``LocalCluster`` (through ``execute_job`` and
``kiltpipe build --executor dask``) gives the same artifacts as an in-process build, its steps running on the
cluster's worker processes; so does the dense index, encoded and FAISS-added shard by shard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import distributed
import polars as pl
import pytest
from dagster import AssetKey, DagsterInstance, execute_job, instance_for_test

from assets.indexes.dense import build_faiss_index, encode_passages
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import build_knowledge_source
from assets.wikipedia.passages import build_passages
from orchestration.assets.wikipedia import WIKIPEDIA_CHECKS
from orchestration.cli import build_parser
from orchestration.cli.build import executor_choice
from orchestration.definitions import build_definitions
from orchestration.executors import ExecutorChoice, dask_executor, executor_from_env
from orchestration.reconstruct import reconstructable_job
from orchestration.resources import SNAPSHOTS, PipelineSettings
from support.dump_variants import page_with_title, read_xml, set_field, split_dump, write_dump, write_parts

SNAPSHOT = "enwiki-20160501"
UP_TO_PASSAGES = ["wikipedia_dump", "knowledge_source", "passages", "passage_collection", "passage_tsv"]
CHECKS = {spec.name for check in WIKIPEDIA_CHECKS for spec in check.check_specs}  # up to passages
KILTPIPE = Path(sys.executable).parent / "kiltpipe"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[distributed.LocalCluster, distributed.Client]]:
    """Two single-threaded worker processes; not daemonic, as the steps start process pools."""
    with dask.config.set({"distributed.worker.daemon": False}):
        local = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
    client = distributed.Client(local, set_as_default=False)
    yield local, client
    client.close()
    local.close()


def _run_config(excerpt: Path) -> dict:
    return {"ops": {"wikipedia_dump": {"config": {"dump_paths": [str(excerpt)]}}}}


@pytest.fixture(scope="module")
def in_process_build(tmp_path_factory: pytest.TempPathFactory, excerpt: Path) -> Path:
    data_dir = tmp_path_factory.mktemp("in_process")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SNAPSHOTS.name, [SNAPSHOT])
    job = build_definitions(PipelineSettings(data_dir=str(data_dir))).resolve_job_def("build_all")
    result = job.execute_in_process(
        run_config=_run_config(excerpt),
        instance=instance,
        partition_key=SNAPSHOT,
        raise_on_error=False,
        asset_selection=[AssetKey(name) for name in UP_TO_PASSAGES],
    )
    assert result.success
    return data_dir / "snapshots" / SNAPSHOT


def _run_on_cluster(
    scheduler: str,
    settings: PipelineSettings,
    tmp_path: Path,
    partition: str,
    run_config: dict,
    selection: list[str],
) -> tuple[Any, dict[str, str]]:
    """``build_all`` for ``selection`` of one partition on the cluster; the result and the run's tags."""
    job = reconstructable_job("build_all", settings, ExecutorChoice("dask", scheduler=scheduler))
    (tmp_path / "dagster_home").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster_home")) as instance:
        instance.add_dynamic_partitions(SNAPSHOTS.name, [partition])
        result = execute_job(
            job,
            instance,
            run_config=run_config,
            tags={"dagster/partition": partition},
            asset_selection=[AssetKey(name) for name in selection],
        )
        return result, dict(instance.get_run_by_id(result.run_id).tags)


def _assert_same_artifacts(built: Path, reference: Path) -> None:
    """Knowledge-source tables, manifest and report equal; passages byte-identical."""
    ks, ks_ref = built / "knowledge_source", reference / "knowledge_source"
    tables = sorted(p.relative_to(ks_ref) for p in ks_ref.rglob("*.parquet"))
    assert tables and tables == sorted(p.relative_to(ks) for p in ks.rglob("*.parquet"))
    for table in tables:
        assert pl.read_parquet(ks / table).equals(pl.read_parquet(ks_ref / table)), table
    for name in ("report.json", "manifest.json"):
        assert (ks / name).read_bytes() == (ks_ref / name).read_bytes(), name
    assert json.loads((ks / "report.json").read_text())["articles"] == 106
    files = sorted(
        p.relative_to(reference / "passages")
        for p in (reference / "passages").rglob("*")
        if p.is_file() and p.suffix in {".parquet", ".jsonl", ".tsv"}
    )
    assert {f.suffix for f in files} == {".parquet", ".jsonl", ".tsv"}
    for name in files:
        assert (built / "passages" / name).read_bytes() == (reference / "passages" / name).read_bytes(), name


def test_executor_choice_from_env_and_errors() -> None:
    assert ExecutorChoice.from_env({}) == ExecutorChoice("multiprocess")
    assert ExecutorChoice.from_env({"KILT_EXECUTOR": "dask", "KILT_DASK_WORKERS": "3"}).cluster_config() == {
        "local": {"n_workers": 3, "processes": True}
    }
    remote = ExecutorChoice.from_env({"KILT_EXECUTOR": "dask", "KILT_DASK_SCHEDULER": "tcp://h:8786"})
    assert remote.cluster_config() == {"existing": {"address": "tcp://h:8786"}}
    assert executor_from_env({"KILT_EXECUTOR": "dask"}).name == dask_executor.name == "dask"
    with pytest.raises(ValueError, match="KILT_EXECUTOR='spark': expected one of"):
        ExecutorChoice.from_env({"KILT_EXECUTOR": "spark"})
    with pytest.raises(ValueError, match="KILT_DASK_WORKERS='two' is not an integer"):
        ExecutorChoice.from_env({"KILT_EXECUTOR": "dask", "KILT_DASK_WORKERS": "two"})
    with pytest.raises(ValueError, match="'h:8786' is not PROTOCOL://HOST:PORT"):
        ExecutorChoice("dask", scheduler="h:8786")
    with pytest.raises(ValueError, match="not both"):
        ExecutorChoice("dask", scheduler="tcp://h:8786", workers=2)
    with pytest.raises(ValueError, match="executor 'in_process' takes no Dask"):
        ExecutorChoice("in_process", workers=2)


def test_cli_executor_options(monkeypatch: pytest.MonkeyPatch) -> None:
    def choice(*argv: str) -> ExecutorChoice:
        return executor_choice(build_parser().parse_args(["build", *argv]))

    monkeypatch.delenv("KILT_EXECUTOR", raising=False)
    assert choice() == ExecutorChoice("in_process")  # the CLI's default stays one process
    assert choice("--dask-workers", "2") == ExecutorChoice("dask", workers=2)
    assert choice("--executor", "multiprocess") == ExecutorChoice("multiprocess")
    monkeypatch.setenv("KILT_EXECUTOR", "dask")
    monkeypatch.setenv("KILT_DASK_SCHEDULER", "tcp://127.0.0.1:8786")
    assert (
        choice() == choice("--executor", "dask") == ExecutorChoice("dask", scheduler="tcp://127.0.0.1:8786")
    )
    with pytest.raises(ValueError, match="need --executor dask, not --executor multiprocess"):
        choice("--executor", "multiprocess", "--dask-workers", "2")
    with pytest.raises(SystemExit):  # argparse: one or the other
        choice("--dask-workers", "2", "--dask-scheduler", "tcp://127.0.0.1:8786")


def test_dask_build_matches_in_process(
    cluster, in_process_build: Path, excerpt: Path, tmp_path: Path
) -> None:
    local, client = cluster
    worker_pids = set(client.run(os.getpid).values())
    data_dir = tmp_path / "data"
    settings = PipelineSettings(data_dir=str(data_dir))
    result, tags = _run_on_cluster(
        local.scheduler_address, settings, tmp_path, SNAPSHOT, _run_config(excerpt), UP_TO_PASSAGES
    )
    assert result.success and tags["dagster/partition"] == SNAPSHOT
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == set(UP_TO_PASSAGES)
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == dict.fromkeys(
        CHECKS, True
    )
    started = [e for e in result.all_events if e.event_type_value == "STEP_START"]
    # dump, knowledge source (plan, one parse step, assemble), passages (one multi-asset step), checks
    assert len(started) == 5 + len(CHECKS)
    assert {e.pid for e in started} <= worker_pids and os.getpid() not in worker_pids
    _assert_same_artifacts(data_dir / "snapshots" / SNAPSHOT, in_process_build)


def test_dump_parts_parse_as_steps_on_dask_workers(cluster, excerpt: Path, tmp_path: Path) -> None:
    """A dump in 3 part files: one parse step per part, run by the workers; the knowledge source is
    byte-identical to the one-process build of the same parts."""
    local, client = cluster
    worker_pids = set(client.run(os.getpid).values())
    (tmp_path / "dump").mkdir()
    parts = write_parts(tmp_path / "dump", read_xml(excerpt), SNAPSHOT, 3)
    data_dir = tmp_path / "data"
    settings = PipelineSettings(data_dir=str(data_dir))
    run_config = {
        "ops": {
            "wikipedia_dump": {"config": {"dump_paths": [str(p) for p in parts]}},
            "knowledge_source": {"config": {"workers": 0, "rows_per_shard": 40}},
        }
    }
    result, _ = _run_on_cluster(
        local.scheduler_address,
        settings,
        tmp_path,
        SNAPSHOT,
        run_config,
        ["wikipedia_dump", "knowledge_source"],
    )
    assert result.success
    started = {e.step_key: e.pid for e in result.all_events if e.event_type_value == "STEP_START"}
    parse_steps = sorted(k for k in started if ".parse_dump_part_step[" in k)
    assert parse_steps == [f"knowledge_source.parse_dump_part_step[part_{i:05d}]" for i in range(3)]
    assert set(started.values()) <= worker_pids
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key.path == ["knowledge_source"]
    ]
    meta = event.step_materialization_data.materialization.metadata
    assert (meta["parse_steps"].value, meta["pages"].value, meta["compression"].value) == (
        3,
        106,
        "bz2 (3 parts)",
    )

    reference = tmp_path / "reference"
    build_knowledge_source(
        parts, reference, KnowledgeSourceParams(workers=0, rows_per_shard=40), progress=False
    )
    built_dir = data_dir / "snapshots" / SNAPSHOT / "knowledge_source"
    reference_dir = reference / "snapshots" / SNAPSHOT / "knowledge_source"
    files = sorted(
        p.relative_to(reference_dir)
        for p in reference_dir.rglob("*")
        if p.is_file() and ".run." not in p.name
    )
    assert len([f for f in files if f.parent.name == "pages"]) >= 3  # every part has its own shards
    assert files == sorted(
        p.relative_to(built_dir) for p in built_dir.rglob("*") if p.is_file() and ".run." not in p.name
    )
    for name in files:
        assert (built_dir / name).read_bytes() == (reference_dir / name).read_bytes(), name
    assert not (data_dir / "snapshots" / ".parse").exists()  # parsed parts are removed once assembled
    assert not (data_dir / ".steps").exists() or not any((data_dir / ".steps").iterdir())


@pytest.fixture(scope="module")
def tiny_passages(tmp_path_factory: pytest.TempPathFactory, tiny_excerpt: Path) -> Path:
    """Three real articles' knowledge source and passages (54 passages): the dense graph's input."""
    data_dir = tmp_path_factory.mktemp("tiny")
    report = build_knowledge_source(tiny_excerpt, data_dir, KnowledgeSourceParams(workers=0), progress=False)
    paths = SnapshotPaths(data_dir, report.snapshot_id)
    build_passages(paths, PassagesParams(workers=0), progress=False)
    return paths.root


def test_dense_shard_steps_spread_over_dask_workers(
    cluster, tiny_passages: Path, tmp_path: Path, fast_encoder
) -> None:
    """The dense index graph on the cluster: one encode step and one FAISS add step per shard, run by the
    workers; the embeddings and the merged IVF index equal one process encoding and indexing everything."""
    local, client = cluster
    worker_pids = set(client.run(os.getpid).values())
    data_dir = tmp_path / "data"
    shutil.copytree(tiny_passages, data_dir / "snapshots" / SNAPSHOT)
    index = {"factory": "IVF2,SQ8", "search_params": "nprobe=2", "train_sample": 40}
    # the fast int8 encoder: what is tested here is where the steps run and what they assemble
    config = {"backend": "onnx", "shard_size": 30, **index}
    run_config = {"ops": {"dense_index": {"config": config}}}
    settings = PipelineSettings(data_dir=str(data_dir))
    result, _ = _run_on_cluster(
        local.scheduler_address, settings, tmp_path, SNAPSHOT, run_config, ["dense_index"]
    )
    assert result.success
    started = {e.step_key: e.pid for e in result.all_events if e.event_type_value == "STEP_START"}
    encode_steps = sorted(k for k in started if ".encode_embedding_shard_step[" in k)
    add_steps = sorted(k for k in started if ".add_shard_to_faiss_step[" in k)
    assert encode_steps == [f"dense_index.encode_embedding_shard_step[shard_{i:05d}]" for i in range(2)]
    assert len(add_steps) == 2 and set(started.values()) <= worker_pids
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == {
        "dense_document_count": True,
        "dense_self_retrieval": True,
        "dense_approximate_recall": True,
    }
    built = data_dir / "snapshots" / SNAPSHOT / "indexes" / "dense"
    reference = tmp_path / "reference"
    encode_passages(
        tiny_passages / "passages" / "parquet", reference / "embeddings", fast_encoder, 30, progress=False
    )
    build_faiss_index(reference / "embeddings", reference / "faiss", **index)
    for name in sorted(p.name for p in (reference / "embeddings").iterdir()):
        assert (built / "embeddings" / name).read_bytes() == (reference / "embeddings" / name).read_bytes(), (
            name
        )
    for name in ("index", "docid", "index.json"):
        assert (built / "faiss" / name).read_bytes() == (reference / "faiss" / name).read_bytes(), name
    assert not (data_dir / ".steps").exists() or not any((data_dir / ".steps").iterdir())


def test_dask_skips_what_a_failed_blocking_check_guards(cluster, excerpt: Path, tmp_path: Path) -> None:
    """Two pages of one title: the uniqueness check fails on a worker and the passages are not built."""
    local, _ = cluster
    header, pages, footer = split_dump(read_xml(excerpt))
    twin = set_field(page_with_title(pages, "Ayn Rand"), "id", "90000009")
    dump = write_dump(tmp_path / "twins.xml", header + b"".join(pages) + twin + footer)
    settings = PipelineSettings(data_dir=str(tmp_path / "data"), workers=0)
    result, _ = _run_on_cluster(
        local.scheduler_address, settings, tmp_path, "twins", _run_config(dump), UP_TO_PASSAGES
    )
    assert not result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["unique_ids_and_titles"].passed
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"wikipedia_dump", "knowledge_source"}
    assert not (tmp_path / "data" / "snapshots" / "twins" / "passages").exists()


@pytest.mark.slow
def test_cli_build_on_a_local_dask_cluster(in_process_build: Path, excerpt: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "KILT_DATA_DIR": str(tmp_path / "data"),
    }
    command = [str(KILTPIPE), "build", "--dump", str(excerpt), "--quiet", "--executor", "dask"]
    command += ["--dask-workers", "2", "--select", " or ".join(f"key:{name}" for name in UP_TO_PASSAGES)]
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert completed.returncode == 0, completed.stderr
    assert "executing steps with dask (local cluster, 2 workers)" in completed.stderr
    summary = json.loads(completed.stdout)
    assert set(summary) == {"success", "run_id", "seconds", "assets", "checks", "snapshot_id"}
    assert summary["success"] and set(summary["assets"]) == set(UP_TO_PASSAGES)
    assert all(check["passed"] for check in summary["checks"].values()) and len(summary["checks"]) == 8
    _assert_same_artifacts(tmp_path / "data" / "snapshots" / SNAPSHOT, in_process_build)


@pytest.mark.filterwarnings(
    "ignore:Port 8787 is already in use"
)  # another test's cluster: Dask takes a free one
def test_the_local_cluster_of_the_executor_listens_on_loopback_only() -> None:
    """The cluster ``--executor dask --dask-workers N`` starts (scheduler, worker, dashboard) listens on
    ``limits.network.bind_host`` (127.0.0.1); Dask's own default put the dashboard on 0.0.0.0:8787. An
    address the configuration names is kept."""
    import psutil

    from orchestration.executors import local_cluster_addresses

    assert local_cluster_addresses({"dashboard_address": ":9999"})["dashboard_address"] == ":9999"
    assert local_cluster_addresses({}, "::1")["dashboard_address"] == "[::1]:8787"
    local = {**local_cluster_addresses({"n_workers": 1}), "threads_per_worker": 1, "processes": True}
    with distributed.LocalCluster(**local) as cluster:
        this = psutil.Process()
        listening = {
            (c.laddr.ip, c.laddr.port)
            for process in [this, *this.children(recursive=True)]
            for c in process.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        }
        dashboard = cluster.scheduler.services["dashboard"].port
        assert any(port == dashboard for _, port in listening)
        assert all(ip == "127.0.0.1" for ip, _ in listening), listening
