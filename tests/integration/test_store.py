"""The provenance store: lookups through the Python API and the CLI, atomic rebuilds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assets.provenance_store import ProvenanceStore, build_store

KILTPIPE = Path(sys.executable).parent / "kiltpipe"


@pytest.fixture
def store(built_store):
    paths, _ = built_store
    with ProvenanceStore(paths) as opened:
        yield opened


def test_page_lookups(store: ProvenanceStore) -> None:
    assert store.page("736").record["wikipedia_title"] == "Albert Einstein"
    assert store.page("albert_Einstein").via == "title"  # underscores, first-letter case
    assert store.page("Albert&#32;Einstein").record["wikipedia_id"] == "736"  # HTML entities
    assert store.page("albert einstein").via == "title_case_insensitive"
    assert (
        store.page("Android_-LRB-robot-RRB-").record["wikipedia_title"] == "Android (robot)"
    )  # FEVER escapes
    match = store.page("AynRand")
    assert match.via == "redirect" and match.record["wikipedia_title"] == "Ayn Rand"
    assert store.page("Anarchism#History").record["wikipedia_id"] == "12"
    assert store.page("No such page at all") is None
    assert store.page("x' OR '1'='1") is None  # parameterized: no injection
    with pytest.raises(LookupError, match="redirect to 'Computer accessibility'"):
        store.page("AccessibleComputing")
    record = store.page("Ayn Rand").record
    assert set(record) >= {
        "_id",
        "wikipedia_id",
        "wikipedia_title",
        "text",
        "anchors",
        "categories",
        "history",
    }
    history = record["history"]  # typed as in KILT's release
    assert history["pageid"] == int(record["wikipedia_id"]) and history["pre_dump"] is True
    assert history["url"].startswith("https://en.wikipedia.org/w/index.php?title=Ayn%20Rand&oldid=")


def test_passage_lookup(store: ProvenanceStore) -> None:
    passage = store.passage("12-0")
    assert passage["title"] == "Anarchism" and passage["section"] == "Section::::Abstract."
    assert passage["text"].startswith("Anarchism is a political philosophy")
    assert store.passage("12-999999") is None


def test_passage_rows_are_the_duckdb_rows_by_id_and_in_batches(store: ProvenanceStore) -> None:
    """``passages.sqlite`` answers each passage as the DuckDB store does (every passage, every column),
    one at a time and in one batch call; ids it lacks are absent, never an error."""
    assert store.rows is not None and store.paths.passage_rows.is_file()
    ids = store.rows.ids()
    assert len(ids) == store.con.execute("SELECT count(*) FROM passages").fetchone()[0]
    fast = {pid: store.passage(pid) for pid in ids}
    texts = {pid: (fast[pid]["title"], fast[pid]["text"]) for pid in ids[:50]}
    batch = store.passages([*ids, "12-999999", "x' OR '1'='1"])
    rows, store.rows = store.rows, None  # the DuckDB path
    try:
        assert fast == {pid: store.passage(pid) for pid in ids}
        assert batch == fast
        assert store.passage_texts(ids[:50]) == {
            pid: (fast[pid]["title"], fast[pid]["text"]) for pid in ids[:50]
        }
    finally:
        store.rows = rows
    assert store.passage_texts(ids[:50]) == texts


def test_span_lookup(store: ProvenanceStore) -> None:
    page = store.page("Anarchism").record
    first = store.passage("12-0")
    end = first["end_character"]
    span = store.span("12", 1, 0, 1, end)
    assert span["text"] == page["text"][1][:end]
    assert span["passages"][0]["passage_id"] == "12-0" and span["passages"][0]["covered_fraction"] == 1.0
    # a span across two passages: fractions add up to 1 minus the joining newline
    second = store.passage("12-1")
    across = store.span("12", 1, end - 20, second["end_paragraph_id"], 30)
    fractions = {p["passage_id"]: p["covered_fraction"] for p in across["passages"]}
    assert set(fractions) == {"12-0", "12-1"} and 0.95 < sum(fractions.values()) <= 1.0
    assert store.span("999999999", 1, 0, 1, 5) is None
    with pytest.raises(ValueError, match=r"has paragraphs 0\.\."):
        store.span("12", 1, 0, 100000, 5)
    with pytest.raises(ValueError, match="ends before it starts"):
        store.span("12", 2, 0, 1, 5)


def test_rebuild_while_a_reader_holds_the_store(built_store, tmp_path: Path) -> None:
    """A reader process keeps the old store open read-only; the rebuild still succeeds and swaps."""
    paths, _ = built_store
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import duckdb, sys
            con = duckdb.connect({str(paths.provenance_store)!r}, read_only=True)
            print(con.execute("SELECT count(*) FROM passages").fetchone()[0], flush=True)
            sys.stdin.readline()
            print(con.execute("SELECT count(*) FROM passages").fetchone()[0], flush=True)
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    before = int(reader.stdout.readline())
    inode = paths.provenance_store.stat().st_ino
    report = build_store(paths)
    assert report.passages == before and paths.provenance_store.stat().st_ino != inode
    reader.stdin.write("\n")
    reader.stdin.flush()
    assert int(reader.stdout.readline()) == before  # the old store still answers
    assert reader.wait(timeout=30) == 0
    assert not list(paths.root.glob(".tmp-*"))
    with ProvenanceStore(paths) as fresh:
        assert fresh.passage("12-0") is not None


def test_cli_verbs(built_store) -> None:
    paths, _ = built_store
    env = {**os.environ, "KILT_DATA_DIR": str(paths.data_dir)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(KILTPIPE), *args], capture_output=True, text=True, env=env, timeout=120)

    passage = json.loads(run("passage", "12-0").stdout)
    assert passage["wikipedia_id"] == "12"
    span = json.loads(run("span", "12", "1", "0", "1", "20").stdout)
    assert span["text"] == "Anarchism is a polit" and span["passages"][0]["passage_id"] == "12-0"
    page = json.loads(run("page", "Android_-LRB-robot-RRB-").stdout)
    assert page["wikipedia_title"] == "Android (robot)"
    missing = run("passage", "nope-1")
    assert missing.returncode == 1 and "passage not found" in missing.stderr and not missing.stdout
    missing_page = run("span", "999999999", "1", "0", "1", "5")
    assert missing_page.returncode == 1 and "page not found" in missing_page.stderr
    bad = run("span", "12", "1", "0", "100000", "5")
    assert bad.returncode == 2 and "has paragraphs 0.." in bad.stderr and "Traceback" not in bad.stderr


def test_a_reader_holds_its_memory_to_the_duckdb_limit(built_store, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1M articles a reader without a limit grew to 9.8 GB RSS (DuckDB's buffer pool defaults to 80 %
    of RAM and filled with the 12 GB store's blocks): readers take KILT_DUCKDB_MEMORY as builds do."""
    paths, _ = built_store
    for configured, shown in ((None, "953.6 MiB"), ("256MB", "244.1 MiB")):
        if configured:
            monkeypatch.setenv("KILT_DUCKDB_MEMORY", configured)
        with ProvenanceStore(paths) as reader:
            assert reader.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == shown
            assert reader.page("Anarchism", by="title") is not None


def test_one_buffer_pool_per_store_file_when_mapping(built_store, tmp_path: Path, monkeypatch) -> None:
    """At 1M articles the mapping stage opened the same store twice (target, and source as the evidence,
    the staging copy hard-linked to the published one): two 1 GB buffer pools. One store file now gets one
    pool (a cursor of the other reader) of ``datasets.store_memory``; two snapshots' stores one each."""
    import shutil

    from assets.datasets import pipeline
    from assets.params import DatasetsParams
    from assets.reading import mapping_stores
    from assets.reading import snapshot as reading_snapshot
    from assets.storage import SnapshotPaths, linked_copy, memory_bytes

    paths, _ = built_store
    linked = SnapshotPaths(tmp_path / "linked", paths.snapshot_id)
    linked_copy(paths.root, linked.root)
    copied = SnapshotPaths(tmp_path / "copied", "enwiki-20990101")
    shutil.copytree(paths.root, copied.root)
    limits: list[str] = []  # each store the mapping opened: its memory limit when it closed

    class Recording(ProvenanceStore):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            if kwargs.get("sharing") is None:  # the first reader of a database: every cursor of it sees this
                self.con.execute("SET GLOBAL memory_limit = '300MB'")

        def close(self) -> None:
            limits.append(self.con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
            super().close()

    monkeypatch.setattr(reading_snapshot, "ProvenanceStore", Recording)
    monkeypatch.setattr(pipeline, "build_datasets_db", lambda target: {})
    limits.clear()
    with mapping_stores(linked, paths) as (target, source):  # one store file, linked
        pipeline.map_datasets([], target, tmp_path / "reports", source=source)
    assert limits == ["286.1 MiB", "286.1 MiB"], limits  # one database: the source is a cursor of it
    opened: list[str] = []

    class Separate(ProvenanceStore):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self.con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

    monkeypatch.setattr(reading_snapshot, "ProvenanceStore", Separate)
    with mapping_stores(linked, copied) as (target, source):  # two snapshots: two pools
        pipeline.map_datasets([], target, tmp_path / "reports", source=source)
    assert opened == ["1.4 GiB", "1.4 GiB"], opened  # datasets.store_memory (1536MB) each
    assert memory_bytes("1GB") == 10**9 and memory_bytes("1536MB") == 1536 * 10**6
    assert memory_bytes("1GiB") == 2**30 and memory_bytes("512 kib") == 2**19
    with pytest.raises(ValueError, match="'-1GB' is not a memory size"):
        DatasetsParams(store_memory="-1GB")
