"""`dvc repro` of the embedded default in a scratch copy of the repo: builds, then has nothing to do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
DVC = REPO / ".venv-dvc" / "bin" / "dvc"


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=2400)
    assert completed.returncode == 0, f"{' '.join(command)}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout + completed.stderr


def test_dvc_repro_builds_then_is_up_to_date(tmp_path: Path, excerpt: Path) -> None:
    if not DVC.is_file():
        pytest.fail(f"{DVC} is missing: `make test` installs DVC into .venv-dvc (make install-dvc)")
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("dvc.yaml", "params.yaml", ".dvcignore"):
        shutil.copy(REPO / name, work / name)
    shutil.copytree(REPO / "assets", work / "assets", ignore=shutil.ignore_patterns("__pycache__"))
    (work / ".venv").symlink_to(REPO / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in ("KILT_PARAMS", "KILT_DATA_DIR")}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    _run(["git", "init", "-q"], work, env)
    _run([str(DVC), "init", "-q"], work, env)
    shutil.copy(REPO / ".dvc" / "config", work / ".dvc" / "config")  # the default local remote

    first = _run([str(DVC), "repro"], work, env)
    stages = (
        "fetch_default",
        "knowledge_source",
        "export_ks",
        "passages",
        "provenance_store",
        "remapped_datasets",
        "bm25_index",
        "dense_index",
        "retrieval_evaluation",
    )
    for stage in stages:
        assert f"Running stage '{stage}'" in first
    manifest = json.loads(
        (work / "data/snapshots/enwiki-20160501/knowledge_source/manifest.json").read_text()
    )
    assert manifest["articles"] == 106
    assert (work / "data/snapshots/enwiki-20160501/exports/kilt_knowledgesource.jsonl").is_file()
    assert (work / "data/snapshots/enwiki-20160501/passages/passages.tsv").is_file()
    assert (work / "data/snapshots/enwiki-20160501/provenance.duckdb").is_file()
    assert (work / "data/snapshots/enwiki-20160501/datasets/hotpotqa-dev-kilt.jsonl").is_file()
    assert (work / "reports/enwiki-20160501/mapping/fever-dev.md").is_file()
    assert (work / "data/snapshots/enwiki-20160501/indexes/bm25").is_dir()
    assert (work / "data/snapshots/enwiki-20160501/indexes/dense/faiss/index.faiss").is_file()
    assert (work / "reports/enwiki-20160501/retrieval/retrieval.md").is_file()
    lock = (work / "dvc.lock").read_text()
    assert "knowledge_source" in lock and "export_ks" in lock

    second = _run([str(DVC), "repro"], work, env)
    assert "Data and pipelines are up to date." in second
    assert "Running stage" not in second
    status = _run([str(DVC), "status"], work, env)
    assert "Data and pipelines are up to date." in status

    # the default remote: push everything, lose the workspace copy and the cache, pull it back
    store = work / "data/snapshots/enwiki-20160501/provenance.duckdb"
    passages = work / "data/snapshots/enwiki-20160501/passages"
    before = {p.relative_to(passages): p.read_bytes() for p in passages.rglob("*") if p.is_file()}
    store_bytes = store.read_bytes()
    pushed = _run([str(DVC), "push"], work, env)
    assert "pushed" in pushed and (work / ".dvc-remote" / "files" / "md5").is_dir()
    shutil.rmtree(passages)
    store.unlink()
    shutil.rmtree(work / ".dvc" / "cache")
    assert "deleted" in _run([str(DVC), "status"], work, env)
    _run([str(DVC), "pull"], work, env)
    assert {p.relative_to(passages): p.read_bytes() for p in passages.rglob("*") if p.is_file()} == before
    assert store.read_bytes() == store_bytes
    assert "Data and pipelines are up to date." in _run([str(DVC), "status"], work, env)
