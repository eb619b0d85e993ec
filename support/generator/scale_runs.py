"""The dataset of the scale runs (issue 28, part 4): drawn from snapshot N (``gen_scale_dataset.py``), mapped
onto N by ``kiltpipe build`` (``bench_scale.py``), and what its mapping is checked against: every span drawn
from N must map onto N to itself.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from assets.reading import Snapshot
from assets.storage import SnapshotPaths, read_report_json
from assets.wikipedia.passages import SPAN_COLUMNS
from support.generator.dataset import DATASET_VERSION, TASKS, generate_dataset
from support.workspace import REPO_ROOT, log

RECORDS = 100_000
COORDINATES = ("wikipedia_id", "title", *SPAN_COLUMNS)
GONE = ("deleted", "emptied")  # pages of N that N+1 has no text of


def ensure_dataset(snapshot: SnapshotPaths, out: Path, *, records: int = RECORDS, seed: int = 0) -> dict:
    """The dataset drawn from ``snapshot`` under ``out`` (drawn now unless drawn with these arguments)."""
    summary_file = out / "dataset.json"
    if summary_file.is_file():
        summary = json.loads(summary_file.read_text())
        drawn = (summary["snapshot"], summary["records"], summary["seed"], summary.get("version"))
        if drawn == (snapshot.snapshot_id, records, seed, DATASET_VERSION):
            return summary
    log(f"drawing {records:,} records from {snapshot.snapshot_id} into {out}")
    return generate_dataset(snapshot, out, records=records, seed=seed)


def dataset_files(out: Path) -> list[dict[str, str]]:
    """The ``datasets.files`` entries of the drawn dataset (one dev split per task)."""
    return [
        {"path": str(out / f"{task}-dev-kilt.jsonl"), "format": "kilt", "dataset": task, "split": "dev"}
        for task in TASKS
    ]


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _coordinates(record: dict[str, Any]) -> list[tuple]:
    return [
        tuple(entry.get(key) for key in COORDINATES)
        for output in record["output"]
        for entry in output.get("provenance") or []
    ]


def mapped_onto_source(out: Path, mapped: SnapshotPaths) -> dict[str, Any]:
    """How many drawn provenance spans map onto their own snapshot to themselves (the target: all)."""
    counts: dict[str, Counter] = {}
    for task in TASKS:
        count = counts.setdefault(task, Counter())
        result = {r["id"]: r for r in read_jsonl(mapped.datasets / f"{task}-dev-kilt.jsonl")}
        for record in read_jsonl(out / f"{task}-dev-kilt.jsonl"):
            count["records"] += 1
            new = result.get(record["id"])
            if new is None:
                count["records_dropped"] += 1
                continue
            drawn, mapped_to = _coordinates(record), _coordinates(new)
            count["provenance"] += len(drawn)
            count["identical"] += sum(
                before == after for before, after in zip(drawn, mapped_to, strict=False)
            )
    total = sum(counts.values(), Counter())
    return {
        "provenance": total["provenance"],
        "identical": total["identical"],
        "identical_fraction": round(total["identical"] / max(1, total["provenance"]), 6),
        "records_dropped": total["records_dropped"],
        "by_task": {task: dict(count) for task, count in counts.items()},
    }


def mapping_rate(mapped: SnapshotPaths, stage_wall_seconds: float) -> dict[str, Any]:
    """Records mapped per second: of the mapping itself (the reports' seconds) and of the whole stage."""
    summaries = read_report_json(mapped.datasets / "mapping_summary.json")
    records = sum(s["records_in"] for s in summaries)
    seconds = sum(s["seconds"] for s in summaries)
    return {
        "records": records,
        "mapping_seconds": round(seconds, 1),
        "records_per_second": round(records / seconds, 1) if seconds else None,
        "stage_records_per_second": round(records / stage_wall_seconds, 1),
    }


def _truth_classes(truth_file: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Page id -> what the month did to it (``deleted``, ``edited``, ``renamed``; pages it left as they were
    are absent, a changed QID or redirect target leaves the article's text alone), and the renamed pages'
    new titles."""
    classes: dict[str, str] = {}
    titles: dict[str, str] = {}
    for change in read_jsonl(truth_file):
        page_id = str(change["page_id"])
        if change.get("change") == "deleted":
            classes[page_id] = "deleted"
        elif change.get("edits"):
            classes[page_id] = "edited"
        elif "renamed_from" in change:
            classes[page_id] = "renamed"
        if "renamed_from" in change:
            titles[page_id] = change["title"]
    return classes, titles


def _span_text(text: list[str], entry: dict[str, Any]) -> str:
    return text[entry["start_paragraph_id"]][entry["start_character"] : entry["end_character"]]


def _as_expected(how: str, want: Any, entry: dict[str, Any], after: dict[str, list[str]]) -> bool:
    """Whether a mapped provenance ``entry`` is what its class predicts (:func:`remapped_against_truth`)."""
    if how == "page":
        return {k: str(entry.get(k)) for k in want} == want
    if how == "identical":
        return all(entry.get(k) == want[k] for k in COORDINATES) and entry.get("bleu_score") == 1.0
    if how == "text":
        return _span_text(after[str(entry["wikipedia_id"])], entry) == want and entry.get("bleu_score") == 1.0
    found = (entry["start_paragraph_id"], entry["start_character"], entry["end_character"])
    best = (want.paragraph_id, want.start_character, want.end_character)
    return found == best and abs(entry["bleu_score"] - want.bleu) < 1e-9


class _TruthCheck:
    """What the mapping must make of each drawn record, and what it made of it (counted)."""

    def __init__(self, classes: dict[str, str], new_titles: dict[str, str], bleu_threshold: float) -> None:
        self.classes, self.new_titles, self.bleu_threshold = classes, new_titles, bleu_threshold
        self.before: dict[str, list[str]] = {}  # N's text of the pages the month changed
        self.after: dict[str, list[str]] = {}  # N+1's text of them (or of the page a gone one's title finds)
        self.elsewhere: dict[str, str] = {}  # gone page id -> the page its title finds in N+1
        self.prepared: dict[str, Any] = {}
        self.counts: Counter = Counter()
        self.expected_drops: Counter = Counter()
        self.wrong: list[dict[str, Any]] = []

    def read_pages(self, source: SnapshotPaths, target: SnapshotPaths, cited: dict[str, str]) -> None:
        """N's and N+1's text of the changed pages the records cite, looked up as the mapping does."""
        classes, new_titles = self.classes, self.new_titles
        before, after, elsewhere = self.before, self.after, self.elsewhere
        with Snapshot(source) as source_snapshot, Snapshot(target) as target_snapshot:
            source_store, store = source_snapshot.store, target_snapshot.store
            for page_id, title in cited.items():
                before[page_id] = source_store.page(page_id, by="id").record["text"]
                now = store.page(page_id, by="id") if classes[page_id] == "edited" else None
                if now is not None:
                    after[page_id] = now.record["text"]
                    continue
                if classes[page_id] == "edited":  # the edit left no text: the build skips the page (reported)
                    classes[page_id] = "emptied"
                # looked up by its title too, as the mapping does (redirects, then the store's
                # case-insensitive match): where that finds another page, the span is searched there, by
                # the BLEU rule
                match = store.page(title, by="title")
                if match is not None:
                    classes[page_id] = "gone_title_found_elsewhere"
                    new_titles[page_id] = match.record["wikipedia_title"]
                    after[page_id] = match.record["text"]
                    elsewhere[page_id] = match.record["wikipedia_id"]

    def expectation(self, entry: dict[str, Any]) -> tuple[str, Any, bool]:
        """What the mapping must make of an entry on a page N+1 has: (how, what, below the threshold)."""
        from assets.datasets import find_best_span, prepare_page

        classes, new_titles, counts = self.classes, self.new_titles, self.counts
        before, after, elsewhere = self.before, self.after, self.elsewhere
        page_id = str(entry["wikipedia_id"])
        kind = classes.get(page_id, "unchanged")
        title = new_titles.get(page_id, entry["title"])
        if "start_paragraph_id" not in entry:  # entity linking: the page
            counts[f"page_{kind}"] += 1
            return "page", {"wikipedia_id": elsewhere.get(page_id, page_id), "title": title}, False
        if kind not in ("edited", "gone_title_found_elsewhere"):
            counts[f"span_{kind}"] += 1
            return "identical", {**entry, "title": title}, False
        text = _span_text(before[page_id], entry)
        if kind == "edited" and before[page_id][entry["start_paragraph_id"]] in after[page_id]:
            counts["span_on_edited_page_paragraph_kept"] += 1
            return "text", text, False
        counts["span_on_edited_page_paragraph_changed" if kind == "edited" else f"span_{kind}"] += 1
        best = find_best_span(text, self.prepared.setdefault(page_id, prepare_page(after[page_id])))
        below = best is None or best.bleu < self.bleu_threshold
        counts[f"span_changed_bleu_{'below_threshold' if below else 'kept'}"] += 1
        return "best", best, below

    def mismatch(self, example: dict[str, Any], entries: int) -> None:
        self.counts["not_as_expected"] += entries
        self.counts["mismatches"] += 1
        if len(self.wrong) < 20:
            self.wrong.append(example)

    def check(self, record: dict[str, Any], mapped: dict[str, Any]) -> None:
        """One drawn record against its remapped one (dropped as the truth predicts, or each entry as
        expected)."""
        classes, counts, expected_drops, after = self.classes, self.counts, self.expected_drops, self.after
        expectation, mismatch = self.expectation, self.mismatch
        entries = record["output"][0]["provenance"]
        alive = []
        for entry in entries:
            kind = classes.get(str(entry["wikipedia_id"]))
            if kind in GONE:
                counts[f"provenance_on_{kind}_page"] += 1
            else:
                alive.append(entry)
        expected = [expectation(entry) for entry in alive]
        dropped = "output_pages_missing" if not alive else None
        dropped = dropped or ("output_low_bleu" if any(below for *_, below in expected) else None)
        result = mapped.get(record["id"])
        if dropped:
            expected_drops[dropped] += 1
            if result is not None:
                mismatch({"id": record["id"], "expected": "dropped", "got": result["output"]}, len(entries))
            return
        got = (result or {"output": [{}]})["output"][0].get("provenance") or []
        if len(got) != len(expected):
            mismatch({"id": record["id"], "expected": len(expected), "got": got}, len(entries))
            return
        for (how, want, _), entry in zip(expected, got, strict=True):
            if _as_expected(how, want, entry, after):
                counts["as_expected"] += 1
            else:
                mismatch({"id": record["id"], "expected": how, "want": str(want), "got": entry}, 1)


def remapped_against_truth(
    out: Path, source: SnapshotPaths, target: SnapshotPaths, truth_file: Path, *, bleu_threshold: float
) -> dict[str, Any]:
    """The dataset drawn from ``source`` (N), as the pipeline remapped it onto ``target`` (N+1), against the
    generator's truth of what the month changed. Each drawn provenance span falls in one class:

    * on a page the month left alone, or only renamed: the identical span (same paragraph and characters,
      the page's new title after a rename);
    * on an edited page, in a paragraph the month kept word for word: the identical text, BLEU 1.0 (the
      paragraph may have moved: its coordinates are the page's first copy of those words, KILT's rule);
    * on an edited page, in a paragraph it deleted or rewrote: KILT's BLEU rule, checked independently (the
      best span of the new page is kept when its BLEU reaches the threshold, else the output is dropped);
    * on a deleted page, or one whose edit left no text (the build skips it, and says so): reported
      missing, never mapped; unless its title finds another page of N+1 as the mapping looks titles up
      (a redirect, or the store's case-insensitive match: ``gone_title_found_elsewhere``), where the span
      is searched by the BLEU rule.

    The mapping report's drop counts must equal the counts these classes predict."""
    classes, new_titles = _truth_classes(truth_file)
    drawn = {task: list(read_jsonl(out / f"{task}-dev-kilt.jsonl")) for task in TASKS}
    cited = {
        str(entry["wikipedia_id"]): entry["title"]
        for records in drawn.values()
        for record in records
        for entry in record["output"][0]["provenance"]
        if classes.get(str(entry["wikipedia_id"])) in ("edited", "deleted")
    }
    truth = _TruthCheck(classes, new_titles, bleu_threshold)
    truth.read_pages(source, target, cited)
    for task, records in drawn.items():
        mapped = {r["id"]: r for r in read_jsonl(target.datasets / f"{task}-dev-kilt.jsonl")}
        for record in records:
            truth.check(record, mapped)
    counts, expected_drops, wrong = truth.counts, truth.expected_drops, truth.wrong
    reports = read_report_json(target.datasets / "mapping_summary.json")
    reported: Counter = sum((Counter(r["dropped"]) for r in reports), Counter())
    truth_drops = {
        "provenance_page_missing": sum(counts[f"provenance_on_{kind}_page"] for kind in GONE),
        "output_pages_missing": expected_drops["output_pages_missing"],
        "output_low_bleu": expected_drops["output_low_bleu"],
        "record_without_outputs": sum(expected_drops.values()),
    }
    mismatches = counts.pop("mismatches", 0)
    return {
        "classes": dict(sorted(counts.items())),
        "as_expected_fraction": round(
            counts["as_expected"] / max(1, counts["as_expected"] + counts["not_as_expected"]), 6
        ),
        "dropped_reported": {key: reported.get(key, 0) for key in truth_drops},
        "dropped_by_truth": truth_drops,
        "report_counts_equal_truth": all(reported.get(k, 0) == v for k, v in truth_drops.items()),
        "mismatches": wrong,
        "mismatch_count": mismatches,
    }


EVALUATION_QUERIES = 2_000  # records of each split the retrieval evaluation scores (all 100k: hours at 1M)


def bench_params(data_dir: Path, snapshot: str, dataset_dir: Path, *, dense: bool) -> Path:
    """params.yaml with the bench's data dir, no fixed snapshot id, the fast CPU encoder (int8 ONNX), the
    drawn dataset mapped with the snapshot as its evidence, and the first ``EVALUATION_QUERIES`` records of
    each split evaluated on the indexes built (``dense``: also the dense index, else BM25 only)."""
    params = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
    params["data_dir"] = str(data_dir)
    params["knowledge_source"].update(snapshot=None, dump=None)
    params["indexes"]["dense"]["backend"] = "onnx"
    params["indexes"]["build"] = ["bm25", "dense"] if dense else ["bm25"]
    params["datasets"].update(files=dataset_files(dataset_dir), source_snapshot=snapshot)
    params["indexes"]["evaluation"].update(
        indexes=["bm25", "dense", "hybrid"] if dense else ["bm25"], max_queries=EVALUATION_QUERIES
    )
    path = data_dir.parent / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path
