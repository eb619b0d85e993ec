"""DVC on the embedded default, in a scratch copy of the repo with the committed ``dvc.lock``.

A clean ``dvc repro`` must reproduce every hash of the committed lock; a second one has nothing to
do; the build ``make demo`` runs (Dagster, all assets at once) gives the same bytes as the DVC stages,
so ``dvc repro`` after it has nothing to do either; and the default local remote round-trips.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
DVC = REPO / ".venv-dvc" / "bin" / "dvc"
KILTPIPE = REPO / ".venv" / "bin" / "kiltpipe"
SNAPSHOT = "data/snapshots/enwiki-20160501"
STAGES = (
    "fetch_default",
    "knowledge_source",
    "export_ks",
    "passages",
    "remapped_datasets",
    "bm25_index",
    "dense_index",
    "retrieval_evaluation",
)


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=2400)
    assert completed.returncode == 0, f"{' '.join(command)}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout + completed.stderr


def _versioned_files(folder: Path) -> dict[Path, bytes]:
    """The files of an output DVC versions: all but the run facts (*.run.json, *.run.log)."""
    return {
        p.relative_to(folder): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and ".run." not in p.name
    }


def _assert_lock_is(expected: str, work: Path, when: str) -> None:
    actual = (work / "dvc.lock").read_text()
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), "committed dvc.lock", f"dvc.lock {when}"
            )
        )
        pytest.fail(f"{when}, dvc.lock differs from the committed one (not reproducible, or stale):\n{diff}")


def test_dvc_repro_reproduces_the_committed_lock(tmp_path: Path, excerpt: Path) -> None:
    if not DVC.is_file():
        pytest.fail(f"{DVC} is missing: `make test` installs DVC into .venv-dvc (make install-dvc)")
    committed = REPO / "dvc.lock"
    assert committed.is_file(), "dvc.lock of the embedded default must be committed (make repro writes it)"
    expected = committed.read_text()
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore"):
        shutil.copy(REPO / name, work / name)
    shutil.copytree(REPO / "assets", work / "assets", ignore=shutil.ignore_patterns("__pycache__"))
    (work / ".venv").symlink_to(REPO / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in ("KILT_PARAMS", "KILT_DATA_DIR")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    _run(["git", "init", "-q"], work, env)
    _run([str(DVC), "init", "-q"], work, env)
    shutil.copy(REPO / ".dvc" / "config", work / ".dvc" / "config")  # the default local remote

    first = _run([str(DVC), "repro"], work, env)
    for stage in STAGES:
        assert f"Running stage '{stage}'" in first
    _assert_lock_is(expected, work, "after a clean dvc repro")
    manifest = json.loads((work / SNAPSHOT / "knowledge_source/manifest.json").read_text())
    assert manifest["articles"] == 106
    for artifact in (
        "exports/kilt_knowledgesource.jsonl",
        "passages/passages.tsv",
        "datasets/hotpotqa-dev-kilt.jsonl",
        "indexes/bm25/segments_1",
        "indexes/dense/faiss/index.faiss",
    ):
        assert (work / SNAPSHOT / artifact).is_file(), artifact
    assert (work / "reports/enwiki-20160501/mapping/fever-dev.md").is_file()
    assert (work / "reports/enwiki-20160501/retrieval/retrieval.md").is_file()
    # run facts are written but not versioned
    assert "seconds" in (work / SNAPSHOT / "knowledge_source/report.run.json").read_text()
    assert "seconds" not in (work / SNAPSHOT / "knowledge_source/report.json").read_text()

    second = _run([str(DVC), "repro"], work, env)
    assert "Data and pipelines are up to date." in second and "Running stage" not in second

    # `make demo`: the whole Dagster build over a fresh data dir, then `dvc commit` fills the DVC cache
    shutil.rmtree(work / "data")
    shutil.rmtree(work / "reports")
    shutil.rmtree(work / ".dvc" / "cache")
    _run([str(KILTPIPE), "fetch-default"], work, env)
    _run([str(KILTPIPE), "build", "--quiet"], work, env)
    _run([str(DVC), "commit", "--force", "--quiet"], work, env)
    _assert_lock_is(expected, work, "after the build make demo runs")
    after_demo = _run([str(DVC), "repro"], work, env)
    assert "Data and pipelines are up to date." in after_demo and "Running stage" not in after_demo

    # DuckDB stores are rebuilt from the versioned Parquet by their first reader
    store = work / SNAPSHOT / "provenance.duckdb"
    store.unlink()
    (work / SNAPSHOT / "datasets.duckdb").unlink()
    page = _run([str(KILTPIPE), "page", "Achilles"], work, env)
    record, _ = json.JSONDecoder().raw_decode(page[page.index("{") :])  # the store's build log follows
    assert record["wikipedia_title"] == "Achilles"
    assert store.is_file() and (work / SNAPSHOT / "datasets.duckdb").is_file()

    # the default remote: push everything, lose the workspace copy and the cache, pull it back
    passages = work / SNAPSHOT / "passages"
    bm25 = work / SNAPSHOT / "indexes" / "bm25"
    versioned = {folder: _versioned_files(folder) for folder in (passages, bm25)}
    pushed = _run([str(DVC), "push"], work, env)
    assert "pushed" in pushed and (work / ".dvc-remote" / "files" / "md5").is_dir()
    shutil.rmtree(passages)
    shutil.rmtree(bm25)
    shutil.rmtree(work / ".dvc" / "cache")
    assert "deleted" in _run([str(DVC), "status"], work, env)
    _run([str(DVC), "pull"], work, env)
    for folder, files in versioned.items():
        assert {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()} == set(files), folder
        assert _versioned_files(folder) == files, folder
    assert "Data and pipelines are up to date." in _run([str(DVC), "status"], work, env)
