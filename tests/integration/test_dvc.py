"""DVC on the embedded default, in a scratch copy of the repo with the committed ``dvc.lock``.

``make demo``'s build (the session's :func:`demo_build`) handed to DVC with ``dvc commit`` must reproduce
the committed lock: every byte-reproducible output byte for byte, the float outputs (embeddings, FAISS
index, retrieval report) within tolerance of the committed reference, whatever the CPU; ``dvc repro``
after it has nothing to do; the DuckDB stores come back from the versioned Parquet; the default remote
round-trips. A clean ``dvc repro`` of every stage is ``make repro-check``, which ``.ci/run`` runs after
the tests (the same checks, stage by stage).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from assets.indexes.reproducibility import compare_locks, is_float_output, verify_reference
from assets.indexes.retriever import Retriever
from assets.storage import SnapshotPaths
from tests.conftest import REPO

pytestmark = pytest.mark.slow
DVC = REPO / ".venv-dvc" / "bin" / "dvc"
KILTPIPE = REPO / ".venv" / "bin" / "kiltpipe"
SNAPSHOT = "data/snapshots/enwiki-20160501"
REFERENCE = REPO / "reproducibility" / "float_reference.json"


def _run(command: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> str:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=2400)
    assert completed.returncode == expect, f"{' '.join(command)}:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout + completed.stderr


def _versioned_files(folder: Path) -> dict[Path, bytes]:
    """The files of an output DVC versions: all but the run facts (*.run.json, *.run.log)."""
    return {
        p.relative_to(folder): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and ".run." not in p.name
    }


@pytest.fixture(scope="module")
def scratch_repo(demo_build, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git + DVC repo with the project's pipeline files, code and committed lock, and a copy of the
    demo build's data in it (``make demo`` builds into the checkout's data/)."""
    if not DVC.is_file():
        pytest.fail(f"{DVC} is missing: `make test` installs DVC into .venv-dvc (make install-dvc)")
    work = tmp_path_factory.mktemp("repo")
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore"):
        shutil.copy(REPO / name, work / name)
    for folder in ("assets", "reproducibility"):
        shutil.copytree(REPO / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (work / ".venv").symlink_to(REPO / ".venv")
    demo_build.copy(work / "data")
    env = {k: v for k, v in os.environ.items() if k not in ("KILT_PARAMS", "KILT_DATA_DIR")}
    env["DAGSTER_HOME"] = str(demo_build.root / "dagster_home")
    _run(["git", "init", "-q"], work, env)
    _run([str(DVC), "init", "-q"], work, env)
    shutil.copy(REPO / ".dvc" / "config", work / ".dvc" / "config")  # the default local remote
    return work, env


def test_demo_build_reproduces_the_committed_lock(scratch_repo) -> None:
    work, env = scratch_repo
    committed = REPO / "dvc.lock"
    assert committed.is_file(), "dvc.lock of the embedded default must be committed (make repro writes it)"
    _run([str(DVC), "commit", "--force", "--quiet"], work, env)
    out = _run([str(KILTPIPE), "verify-repro", "--committed", str(committed)], work, env)
    verdict = json.loads(out[: out.rindex("}") + 1])
    assert verdict["reproducible"], out
    assert not verdict["differences"]
    deterministic = set(verdict["byte_identical_outputs"])
    assert {
        f"{SNAPSHOT}/knowledge_source",
        f"{SNAPSHOT}/passages",
        f"{SNAPSHOT}/indexes/bm25",
    } <= deterministic
    assert f"{SNAPSHOT}/datasets" in deterministic and "data/reports/enwiki-20160501/mapping" in deterministic
    assert all(is_float_output(path) for path in verdict["float_outputs_rebuilt_with_other_bytes"])
    assert "kiltpipe: reproducible: " in out and "within tolerance of the committed reference" in out
    after = _run([str(DVC), "repro"], work, env)
    assert "Data and pipelines are up to date." in after and "Running stage" not in after
    # run facts are written beside the reports but not versioned
    assert "seconds" in (work / SNAPSHOT / "knowledge_source/report.run.json").read_text()
    assert "seconds" not in (work / SNAPSHOT / "knowledge_source/report.json").read_text()


def test_stores_rebuilt_and_remote_round_trip(scratch_repo) -> None:
    work, env = scratch_repo
    _run([str(DVC), "commit", "--force", "--quiet"], work, env)
    # DuckDB stores are not versioned: a read of a snapshot without them writes nothing and says what to
    # run; `kiltpipe restore-stores` rebuilds them from the versioned Parquet
    store = work / SNAPSHOT / "provenance.duckdb"
    store.unlink()
    (work / SNAPSHOT / "datasets.duckdb").unlink()
    before = sorted(p.relative_to(work) for p in (work / "data").rglob("*"))
    refused = _run([str(KILTPIPE), "page", "Achilles"], work, env, expect=1)
    assert "provenance.duckdb is missing and datasets.duckdb is missing" in refused
    assert "kiltpipe restore-stores" in refused
    assert sorted(p.relative_to(work) for p in (work / "data").rglob("*")) == before
    restored = _run([str(KILTPIPE), "restore-stores"], work, env)
    built, _ = json.JSONDecoder().raw_decode(restored[restored.index("{") :])  # build logs follow
    assert built["built"] == ["provenance.duckdb", "datasets.duckdb"]
    page = _run([str(KILTPIPE), "page", "Achilles"], work, env)
    assert json.JSONDecoder().raw_decode(page[page.index("{") :])[0]["wikipedia_title"] == "Achilles"
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
    assert "deleted" in _run([str(DVC), "status"], work, env, expect=0)
    _run([str(DVC), "pull"], work, env)
    for folder, files in versioned.items():
        assert {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()} == set(files), folder
        assert _versioned_files(folder) == files, folder
    assert "Data and pipelines are up to date." in _run([str(DVC), "status"], work, env)


# ------------------------------------------------------------------------------ what the check catches
def test_lock_comparison_separates_float_outputs_from_the_rest() -> None:
    """On the committed lock itself: another CPU's float hashes pass (to the tolerance check); any other
    hash, a param or a command that differs is a reproducibility failure."""
    committed = (REPO / "dvc.lock").read_text()
    assert compare_locks(committed, committed).differences == []
    lines = committed.splitlines()

    def with_changed_md5(path_suffix: str) -> str:
        changed, after = list(lines), False
        for i, line in enumerate(changed):
            after = after or (line.strip().startswith("- path:") and line.rstrip().endswith(path_suffix))
            if after and line.strip().startswith("md5:"):
                changed[i] = line[: line.index("md5:")] + "md5: 00000000000000000000000000000000.dir"
                return "\n".join(changed)
        raise AssertionError(path_suffix)

    other_cpu = compare_locks(committed, with_changed_md5("indexes/dense/embeddings"))
    assert other_cpu.differences == [] and other_cpu.float_changed == [f"{SNAPSHOT}/indexes/dense/embeddings"]
    changed_passages = compare_locks(committed, with_changed_md5(f"{SNAPSHOT}/passages"))
    assert any(f"{SNAPSHOT}/passages" in d for d in changed_passages.differences)
    other_param = compare_locks(committed, committed.replace("max_words: 100", "max_words: 120"))
    assert other_param.differences == [  # each cuts its passages by passages.max_words
        "stage kb_facts: params differs",
        "stage passages: params differs",
        "stage structured_passages: params differs",
    ]


def test_float_check_catches_what_is_beyond_rounding(demo_build, tmp_path: Path) -> None:
    """The committed reference accepts the demo build, and refuses a copy in which one vector moved past
    cosine 0.9999 (a rebuild with another model or backend moves every vector far more)."""
    reference = json.loads(REFERENCE.read_text())
    retrieval = lambda data: data / "reports" / "enwiki-20160501" / "retrieval" / "retrieval.json"  # noqa: E731
    with Retriever(demo_build.paths) as retriever:
        assert verify_reference(demo_build.paths, retrieval(demo_build.data_dir), reference, retriever).passed
    data = demo_build.copy(tmp_path / "data")
    paths = SnapshotPaths(data, "enwiki-20160501")
    shard = sorted(paths.dense_embeddings.glob("emb-*.npy"))[0]
    vectors = np.load(shard)
    row = reference["sample_rows"][3]
    direction = np.roll(vectors[row], 1)
    moved = vectors[row] + 0.02 * direction / np.linalg.norm(direction)
    vectors[row] = moved / np.linalg.norm(moved)
    np.save(shard, vectors)
    with Retriever(paths) as retriever:
        check = verify_reference(paths, retrieval(data), reference, retriever)
    assert not check.passed and check.min_cosine < 0.9999
    assert any("1 sampled vectors have cosine" in problem for problem in check.problems), check.problems


def test_another_cpus_rounding_is_verified_by_tolerance(scratch_repo, tmp_path: Path) -> None:
    """What a CPU with other SIMD kernels writes: every vector off in its last bits (here +-1 ulp-scale
    noise), so the embeddings' and FAISS index's hashes differ from the lock's. The rebuild is
    reproducible by tolerance, `make demo`'s verdict says so, and DVC has nothing to re-run."""
    from assets.indexes.dense import build_faiss_index

    source, env = scratch_repo
    work = tmp_path / "repo"
    shutil.copytree(source, work, symlinks=True)
    _run([str(DVC), "commit", "--force", "--quiet"], work, env)
    snapshot = SnapshotPaths(work / "data", "enwiki-20160501")
    rng = np.random.default_rng(0)
    for shard in sorted(snapshot.dense_embeddings.glob("emb-*.npy")):
        vectors = np.load(shard)
        noisy = vectors * (1 + rng.uniform(-2e-7, 2e-7, vectors.shape)).astype(np.float32)
        np.save(shard, (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32))
    index = json.loads((snapshot.dense_index / "index.json").read_text())
    shutil.rmtree(snapshot.dense_index)
    build_faiss_index(snapshot.dense_embeddings, snapshot.dense_index, index["factory"])
    _run([str(DVC), "commit", "--force", "--quiet"], work, env)
    out = _run([str(KILTPIPE), "verify-repro", "--committed", str(REPO / "dvc.lock")], work, env)
    verdict = json.loads(out[: out.rindex("}") + 1])
    assert verdict["reproducible"] and not verdict["differences"], out
    # the noise changed the text collection's vectors; which other float outputs differ from the lock depends
    # on this CPU's rounding (another CPU's lock may differ in all of them): tolerance promises only that
    # every differing output is a float output, within the reference
    rebuilt = set(verdict["float_outputs_rebuilt_with_other_bytes"])
    assert {f"{SNAPSHOT}/indexes/dense/embeddings", f"{SNAPSHOT}/indexes/dense/faiss"} <= rebuilt, out
    assert all(is_float_output(path) for path in rebuilt), out
    assert "rebuilt with this CPU's rounding" in out
    after = _run([str(DVC), "repro"], work, env)
    assert "Data and pipelines are up to date." in after and "Running stage" not in after
