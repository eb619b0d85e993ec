"""The QA-pair KB of the session's ``make demo`` build, from the real pairs that ship with the project (DPR's
NQ dev topics, 8,757 questions of Natural Questions' train split): grouped by question, placed on the
excerpt where its passages hold the answer, answered by ``kiltpipe answer`` (one question, a topics file
scored by ``kiltpipe eval``, an abstention and its fallback), by ``/answer`` of the HTTP API, and rebuilt
from PAQ-metadata lines derived from the stored pairs (their passages found, a passage that does not
exist counted)."""

from __future__ import annotations

import http.client
import json
import lzma
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.limits import Limits
from assets.provenance_store import PassageRows, ProvenanceStore
from assets.qa import answer_pattern, build_qa_pairs, embedded_qa_files
from assets.reading import Snapshot
from assets.reading.serving import SearchApp, SearchService, serving_in_thread
from assets.storage import SnapshotPaths
from support.real_data import real_file
from tests.conftest import REPO

QA_ASSETS = {"qa_pairs", "qa_indexes"}


def _placed(paths: SnapshotPaths) -> list[dict]:
    rows = pq.read_table(paths.qa_pairs / "parquet").to_pylist()
    return [row for row in rows if row["provenance_method"] != "none"]


def test_the_demo_build_holds_the_qa_kb_placed_on_the_excerpt(demo_build) -> None:
    paths = demo_build.paths
    assert set(demo_build.summary["assets"]) >= QA_ASSETS
    report = json.loads((paths.qa_pairs / "report.json").read_text())
    assert report["pairs_read"] == 8757 and report["read"]["skipped"] == 0
    assert report["passages"] == 8757 - report["duplicate_lines"] and report["duplicate_lines"] > 0
    assert report["conflicting"] >= 1  # DPR's topics hold a question twice with other answers: both kept
    rows = pq.read_table(paths.qa_pairs / "parquet").to_pylist()
    conflicting = [row for row in rows if row["conflicting"]]
    assert len(conflicting) == report["conflicting"] and all(len(row["sources"]) > 1 for row in conflicting)
    placed = _placed(paths)
    assert report["provenance"]["bm25"] == len(placed) > 100  # the excerpt holds a few hundred answers
    assert report["provenance"]["none"] == report["passages"] - len(placed)
    with ProvenanceStore(paths) as store:
        for row in placed[:50]:  # the span is the answer, on its page, inside the passage cited
            page = store.page(row["wikipedia_id"], by="id").record
            paragraph = page["text"][row["start_paragraph_id"]]
            written = paragraph[row["start_character"] : row["end_character"]]
            assert written == row["provenance_text"] and written.lower() == row["provenance_answer"].lower()
            passage = store.passage(row["provenance_passage_id"])
            assert passage["start_paragraph_id"] <= row["start_paragraph_id"] <= passage["end_paragraph_id"]
    assert (
        json.loads((paths.root / "indexes" / "qa" / "dense" / "faiss" / "index.json").read_text())["factory"]
        == "Flat"
    )  # 8,751 questions fit the 500MB budget exactly


def test_answer_one_question_abstain_and_fall_back(demo_build, kiltpipe) -> None:
    data = ("--data-dir", str(demo_build.data_dir))
    row = _placed(demo_build.paths)[0]
    code, out, err = kiltpipe("answer", *data, row["text"])
    assert code == 0, err
    answer = json.loads(out)
    top = answer["answers"][0]
    assert not answer["abstained"] and top["answer"] == row["answers"][0] and top["confidence"] == 1.0
    assert top["match"] == "exact" and top["score"] > 0.99  # k = 5: searched too, scored by the index
    code, out, err = kiltpipe("answer", *data, row["text"].upper() + " ?", "--k", "1")
    alone = json.loads(out)["answers"]  # k = 1 and asked before: looked up by its text, nothing searched
    assert code == 0 and [(a["question_id"], a["match"], a["score"]) for a in alone] == [
        (row["passage_id"], "exact", None)
    ]
    assert top["provenance"]["passage_id"] == row["provenance_passage_id"]
    assert row["provenance_text"] in top["provenance"]["passage_text"]
    with open(real_file("original", "nq_open", "NQ-open.dev.jsonl"), encoding="utf-8") as handle:
        unseen = json.loads(handle.readline())["question"]  # NQ's dev set: not in a KB of NQ train questions
    code, out, _ = kiltpipe("answer", *data, unseen, "--index", "bm25", "--abstain-below", "0.99")
    assert code == 0 and json.loads(out)["abstained"] and json.loads(out)["answers"] == []
    code, out, _ = kiltpipe("answer", *data, unseen, "--abstain-below", "0.99", "--fallback", "bm25")
    fallback = json.loads(out)["fallback"]
    assert fallback["index"] == "bm25" and len(fallback["passages"]) == 5 and fallback["passages"][0]["text"]
    code, _, err = kiltpipe("answer", *data, unseen, "--abstain-below", "1.5")
    assert code == 2 and "between 0 and 1" in err


def test_the_lookup_file_is_local_and_rebuilt_when_missing_or_stale(
    demo_build, kiltpipe, tmp_path: Path
) -> None:
    """``qa_pairs.sqlite`` is not versioned: a snapshot without it (a ``dvc pull``), or with one from another
    build of ``qa_pairs`` (a ``dvc checkout``), is refused by a read naming ``kiltpipe restore-stores``,
    which rebuilds it; its rows are the Parquet's, found by id and by normalised question."""
    data_dir = demo_build.copy(tmp_path / "data")
    paths = SnapshotPaths(data_dir, demo_build.paths.snapshot_id)
    data = ("--data-dir", str(data_dir))
    row = _placed(paths)[0]
    paths.qa_lookup.unlink()
    code, _, err = kiltpipe("answer", *data, row["text"])
    assert code != 0 and "qa_pairs.sqlite is missing" in err and "kiltpipe restore-stores" in err
    code, out, err = kiltpipe("restore-stores", *data)
    assert code == 0 and json.loads(out)["built"] == ["qa_pairs.sqlite"], err
    report = paths.qa_pairs / "report.json"
    report.write_text(report.read_text() + "\n")  # another build's report (another stamp)
    code, _, err = kiltpipe("answer", *data, row["text"])
    assert code != 0 and "another build of qa_pairs" in err
    code, out, err = kiltpipe("page", *data, "Anarchism")  # a stale QA lookup refuses answers only
    assert code == 0 and json.loads(out)["wikipedia_id"] == "12", err
    code, out, err = kiltpipe("restore-stores", *data)
    assert code == 0 and json.loads(out)["built"] == ["qa_pairs.sqlite"], err
    rows = PassageRows(paths.qa_lookup)
    stored = pq.read_table(paths.qa_pairs / "parquet").to_pylist()
    assert rows.resolve([r["question_norm"] for r in stored[:200]]) == {
        r["question_norm"]: r["passage_id"] for r in stored[:200]
    }
    assert rows.many([r["passage_id"] for r in stored[:200]]) == {r["passage_id"]: r for r in stored[:200]}
    rows.close()


def test_answering_opens_the_kb_lookup_once(demo_build, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Snapshot.answerer`` opens ``qa_pairs.sqlite`` once, checks its stamp on that handle, and the
    answerer reads its rows through it (it was opened twice: once to check, once to read)."""
    from assets.provenance_store import passage_rows
    from assets.reading import Snapshot

    opened: list[str] = []
    real_init = passage_rows.PassageRows.__init__

    def counting(self, path, *args, **kwargs) -> None:
        opened.append(Path(path).name)
        real_init(self, path, *args, **kwargs)

    monkeypatch.setattr(passage_rows.PassageRows, "__init__", counting)
    row = _placed(demo_build.paths)[0]
    with Snapshot.open(demo_build.data_dir, demo_build.paths.snapshot_id) as snapshot:
        answered = snapshot.answerer.answer([row["text"]], index="bm25", k=1)[0]
    assert answered["answers"][0]["match"] == "exact"
    assert opened.count("qa_pairs.sqlite") == 1, opened


def test_a_topics_file_answered_and_scored(demo_build, kiltpipe, tmp_path: Path) -> None:
    source = real_file("original", "nq_open", "NQ-open.dev.jsonl")
    topics = tmp_path / "nq-open-dev-first500.jsonl"
    topics.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:500]))
    preds, gold = tmp_path / "preds.jsonl", tmp_path / "gold.jsonl"
    data = ("--data-dir", str(demo_build.data_dir))
    files = ("--topics", topics, "--output", preds, "--gold-output", gold)
    code, out, err = kiltpipe("answer", *data, *files, "--abstain-below", "0.5")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["questions"] == 500 and 0 < summary["abstained"] < 500
    code, out, err = kiltpipe("eval", "--guess", preds, "--gold", gold)
    assert code == 0, err
    scores = json.loads(out)
    assert 0.0 < scores["downstream"]["em"] < 0.5  # a KB of 8.7k other questions: few exact answers


def test_a_topics_file_is_read_within_the_limits_of_the_params_file(
    demo_build, kiltpipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``answer --topics`` reads its file with ``limits.qa`` of the params file in use (here lines of at
    most 80 bytes: the longer questions are skipped), not the built-in limits."""
    source = real_file("original", "nq_open", "NQ-open.dev.jsonl")
    topics = tmp_path / "nq-open-dev-first200.jsonl"
    topics.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:200]))
    short = sum(len(line) <= 80 for line in topics.read_bytes().splitlines())  # the newline not counted
    settings = yaml.safe_load((REPO / "params.yaml").read_text())
    settings["limits"]["qa"]["max_line_bytes"] = 80
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(settings))
    monkeypatch.setenv("KILT_PARAMS", str(tmp_path / "params.yaml"))
    data = ("--data-dir", str(demo_build.data_dir))
    code, out, err = kiltpipe("answer", *data, "--topics", topics, "--output", tmp_path / "preds.jsonl")
    assert code == 0, err
    assert 0 < short < 200 and json.loads(out)["questions"] == short


def test_stored_questions_searched_from_topics_are_written_as_kilt_output(
    demo_build, kiltpipe, tmp_path: Path
) -> None:
    """``search --collection qa --topics --output``: each stored question's provenance comes from the QA
    collection's own lookup (its answers and where the first is), never taken for a structured passage."""
    source = real_file("original", "nq_open", "NQ-open.dev.jsonl")
    questions = [json.loads(line)["question"] for line in source.read_text(encoding="utf-8").splitlines()[:5]]
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{i}\t{question}\n" for i, question in enumerate(questions)))
    run = tmp_path / "run.jsonl"
    data = ("--data-dir", str(demo_build.data_dir))
    code, _, err = kiltpipe("search", *data, "--collection", "qa", "--topics", topics, "--output", run)
    assert code == 0, err
    records = [json.loads(line) for line in run.read_text().splitlines()]
    assert [r["input"] for r in records] == questions
    provenance = [p for r in records for p in r["output"][0]["provenance"]]
    assert provenance and all(p["kind"] == "qa" and p["passage_id"].startswith("qa-q") for p in provenance)
    assert all(isinstance(p["answers"], list) and p["answers"] and p["text"] for p in provenance)


def test_the_http_api_answers(demo_build) -> None:
    paths = demo_build.paths
    service = SearchService.of(Snapshot(paths), ["bm25", "dense@qa", "bm25@qa"], answers=True)
    row = _placed(paths)[0]
    limits = Limits()
    limits = limits.model_copy(update={"http": limits.http.model_copy(update={"max_body_bytes": 4096})})
    with serving_in_thread(SearchApp(service, limits=limits)) as base:
        query = urllib.parse.urlencode({"q": row["text"], "k": "3"})
        with urllib.request.urlopen(f"{base}/answer?{query}", timeout=60) as response:
            one = json.loads(response.read())
        body = json.dumps({"queries": [row["text"], "x"], "index": "bm25", "abstain_below": 0.9}).encode()
        request = urllib.request.Request(f"{base}/answer", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            batch = json.loads(response.read())
        refusals = []
        for bad in ({"q": "x", "abstain_below": "2"}, {"q": "x", "k": "0"}, {"q": "x", "fallback": "dense"}):
            try:
                urllib.request.urlopen(f"{base}/answer?{urllib.parse.urlencode(bad)}", timeout=60)
            except urllib.error.HTTPError as error:
                refusals.append((error.code, json.loads(error.read())["error"]))
        long_number = {"q": "x", "abstain_below": "0." + "0" * 999 + "1"}  # 1,002 characters: not 1.0
        try:
            urllib.request.urlopen(f"{base}/answer?{urllib.parse.urlencode(long_number)}", timeout=60)
        except urllib.error.HTTPError as error:
            refusals.append((error.code, json.loads(error.read())["error"]))
        for flag in (True, False):  # JSON true/false are not confidences 1.0/0.0
            body = json.dumps({"query": "x", "abstain_below": flag}).encode()
            request = urllib.request.Request(f"{base}/answer", body, {"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(request, timeout=60)
            except urllib.error.HTTPError as error:
                refusals.append((error.code, json.loads(error.read())["error"]))
        port = int(base.rsplit(":", 1)[1])
        oversized = json.dumps({"queries": [row["text"]] * 200}).encode()  # over 4,096 bytes
        for declared in (False, True):  # streamed without a length (capped as it comes), or declared
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            headers = {"Content-Type": "application/json"}
            if declared:
                headers["Content-Length"] = str(len(oversized))
            connection.request("POST", "/answer", iter([oversized[:3000], oversized[3000:]]), headers)
            response = connection.getresponse()
            refusals.append((response.status, json.loads(response.read())["error"]))
            connection.close()
    service.close()
    top = one["answers"][0]
    assert top["answer"] == row["answers"][0] and top["provenance"]["passage_text"]
    assert [a["abstained"] for a in batch["answers"]] == [False, True]
    assert [code for code, _ in refusals] == [400, 400, 400, 400, 400, 400, 413, 413]
    assert all("limits.http.max_body_bytes" in why for _, why in refusals[6:])
    assert "between 0 and 1" in refusals[0][1] and "is not served" in refusals[2][1]
    assert "1,002" in refusals[3][1] and "limits.http.max_number_chars" in refusals[3][1]
    assert "not true" in refusals[4][1] and "not false" in refusals[5][1]


def test_paq_metadata_places_answers_on_their_passages(demo_build, tmp_path: Path) -> None:
    """PAQ-metadata lines derived from the stored pairs that were placed: 40 naming their passage of this
    snapshot with the answer's offset in it, 20 naming it by another id in a DPR-format passage file (the
    snapshot's own ``passages.tsv``, its rows renumbered as ``psgs_w100``'s are: mapped back by title and
    KILT's span mapping), and one naming a passage that exists nowhere."""
    import duckdb

    data_dir = demo_build.copy(tmp_path / "data")
    paths = SnapshotPaths(data_dir, demo_build.paths.snapshot_id)
    placed = _placed(paths)[:60]
    tsv = (
        duckdb.connect()
        .execute(
            "SELECT id, text, title FROM read_csv(?, delim='\t', header=true, quote='\"', escape='\"', "
            "columns={'id': 'VARCHAR', 'text': 'VARCHAR', 'title': 'VARCHAR'})",
            [str(paths.passages_tsv)],
        )
        .fetchall()
    )
    renumbered = {pid: str(9_000_000 + n) for n, (pid, _, _) in enumerate(tsv)}
    source = tmp_path / "psgs_w100.tsv"
    source.write_text(
        "id\ttext\ttitle\n" + "".join(f'{renumbered[pid]}\t"{text.replace(chr(34), chr(34) * 2)}"\t{title}\n'
                                   for pid, text, title in tsv)
    )  # fmt: skip
    lines = []
    with ProvenanceStore(paths) as store:
        for n, row in enumerate(placed):
            text = store.passage(row["provenance_passage_id"])["text"]
            start = answer_pattern(row["provenance_answer"]).search(text).start()
            named = row["provenance_passage_id"] if n < 40 else renumbered[row["provenance_passage_id"]]
            answer = {"text": row["provenance_answer"], "passage_id": named, "start": start, "end": start + 1}
            lines.append({"question": row["text"], "answers": [answer]})
        nowhere = {"text": "x", "passage_id": "0-0"}  # no passage of the snapshot or the file has this id
        lines.append({"question": placed[0]["text"] + " today", "answers": [nowhere]})
        metadata = tmp_path / "PAQ.metadata.jsonl"
        metadata.write_text("".join(json.dumps(line) + "\n" for line in lines))
        asked = {row["text"] for row in placed}  # the topics lines of these questions, and 100 others
        with lzma.open(embedded_qa_files()[0], "rt", encoding="utf-8") as handle:
            kept = [
                line
                for n, line in enumerate(handle)
                if n < 100 or " ".join(line.split("\t")[0].split()) in asked
            ]
        topics = tmp_path / "topics.txt"
        topics.write_text("".join(kept), encoding="utf-8")
        with Retriever(paths, IndexSettings.from_params()) as retriever:
            report = build_qa_pairs(
                paths,
                [metadata, topics],
                store,
                lambda questions, k: retriever.batch_search("bm25", questions, k, with_text=True),
                source_passages=source,
            )
    summary = report.to_dict()
    assert summary["source_passages_kept"] == 20 and summary["metadata_passages_missing"] == 1
    # 19 of 20 map: one passage crosses 14 one-line paragraphs (a list) and maps to none above KILT's
    # BLEU threshold; it falls back to BM25
    assert summary["provenance"]["metadata"] == 40 and summary["provenance"]["mapped"] >= 18
    assert summary["duplicate_lines"] >= 60  # the metadata lines' questions are the topics' again
    by_question = {row["text"]: row for row in pq.read_table(paths.qa_pairs / "parquet").to_pylist()}
    methods = [by_question[row["text"]]["provenance_method"] for row in placed]
    assert methods[:40] == ["metadata"] * 40 and set(methods[40:]) <= {"mapped", "bm25"}
    for row in placed:
        again = by_question[row["text"]]
        if again["provenance_method"] != "bm25":  # found from the metadata: the same passage as before
            assert again["provenance_passage_id"] == row["provenance_passage_id"]
        assert again["answers"][0] == row["provenance_answer"]  # the metadata's answer read first


def test_one_question_repeated_with_other_answers_is_one_bounded_row(demo_build, tmp_path: Path) -> None:
    """5,000 lines of one real question, each with another answer (once: every answer and source kept in
    one row, 1M lines -> 1,000,002 answers, 2.3 GB): the stored row holds at most max_answers answers and
    max_lines_per_question sources, and the report counts what was dropped."""
    from assets.limits import QALimits

    data_dir = demo_build.copy(tmp_path / "data")
    paths = SnapshotPaths(data_dir, demo_build.paths.snapshot_id)
    row = _placed(paths)[0]
    lines = tmp_path / "repeated.jsonl"
    lines.write_text(
        "".join(json.dumps({"question": row["text"], "answer": [f"{row['answers'][0]} {n}"]}) + "\n"
                for n in range(5000))
    )  # fmt: skip
    limits = QALimits(max_answers=20, max_lines_per_question=300)
    with ProvenanceStore(paths) as store, Retriever(paths, IndexSettings.from_params()) as retriever:
        report = build_qa_pairs(
            paths,
            [lines],
            store,
            lambda questions, k: retriever.batch_search("bm25", questions, k, with_text=True),
            limits=limits,
        )
    stored = pq.read_table(paths.qa_pairs / "parquet").to_pylist()
    assert len(stored) == 1 and report.questions == 1 and report.duplicate_lines == 4999
    assert stored[0]["answers"] == [f"{row['answers'][0]} {n}" for n in range(20)]
    assert len(stored[0]["sources"]) == 300 and stored[0]["sources"][-1] == "repeated.jsonl:300"
    assert report.read.fixed == {"extra_lines": 4700, "extra_answers": 280}


def test_concurrent_answers_are_answered_together_and_a_wordless_question_abstains(demo_build) -> None:
    """Issue 63, part 7: 48 clients asking /answer at once (stored questions of the demo's KB): every
    answer right, and the questions answered in batches (they ran one request at a time behind a lock);
    a question of NUL characters abstains with confidence 0 (it got an answer at 0.37)."""
    import threading

    paths = demo_build.paths
    service = SearchService.of(Snapshot(paths), ["bm25", "bm25@qa"], answers=True)
    rows = _placed(paths)[:48]
    app = SearchApp(service)
    answered: dict[int, dict] = {}
    with serving_in_thread(app) as base:

        def ask(number: int) -> None:
            query = urllib.parse.urlencode({"q": rows[number]["text"], "index": "bm25", "k": "1"})
            with urllib.request.urlopen(f"{base}/answer?{query}", timeout=120) as response:
                answered[number] = json.loads(response.read())

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(rows))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        query = urllib.parse.urlencode({"q": "\x00" * 20, "index": "bm25"})
        with urllib.request.urlopen(f"{base}/answer?{query}", timeout=60) as response:
            nul = json.loads(response.read())
        (batcher,) = [b for _, b in app.answer_batchers.values()]
    service.close()
    assert all(answered[n]["answers"][0]["answer"] == rows[n]["answers"][0] for n in range(len(rows)))
    assert batcher.largest > 1 and batcher.batches < len(rows) + 1
    assert nul["abstained"] and nul["confidence"] == 0.0 and nul["answers"] == []
