"""Shared fixtures: the real data in ../shared/data (skip cleanly when absent) and a built snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("KILT_SHARED_DATA", REPO.parent / "shared" / "data"))
EXCERPT_NAME = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"real data not available: {path} (../shared/data is absent)")
    return path


@pytest.fixture(scope="session")
def excerpt() -> Path:
    return shared_file("wikipedia", EXCERPT_NAME)


@pytest.fixture(scope="session")
def built_excerpt(tmp_path_factory: pytest.TempPathFactory, excerpt: Path):
    """The excerpt built once as snapshot enwiki-20160501 (2 worker processes, 3 shards)."""
    from assets.storage import SnapshotPaths
    from assets.wikipedia.knowledge_source import build_knowledge_source

    data_dir = tmp_path_factory.mktemp("data")
    report = build_knowledge_source(excerpt, data_dir, workers=2, rows_per_shard=40, progress=False)
    return SnapshotPaths(data_dir, report.snapshot_id), report


@pytest.fixture(autouse=True)
def _offline_embedded_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the embedded-corpus fetcher copy the shared file instead of calling pip, when present."""
    path = SHARED_DATA / "wikipedia" / EXCERPT_NAME
    if path.is_file():
        monkeypatch.setenv("KILT_EMBEDDED_DUMP", str(path))


@pytest.fixture(scope="session")
def built_store(built_excerpt):
    """Passages (kilt mode, N=100) and the provenance store on top of the built excerpt."""
    from assets.provenance_store import build_store
    from assets.wikipedia.passage_build import build_passages

    paths, _ = built_excerpt
    passages_report = build_passages(paths, max_words=100, mode="kilt", workers=2, progress=False)
    build_store(paths)
    return paths, passages_report
