"""The KB-path oracle of the remapped datasets whose records name answer entities (MKQA, Mintaka): per
record, its question entities (those the record names, and those the entity linker finds in its input),
its answer entities, and every shortest path of statements between each question entity and each answer
entity, up to ``max_hops`` (what the KB-augmented Natural Questions work gives a reader beside the
passages).

Written to ``<snapshot>/kb_paths/`` atomically: ``<dataset>-<split>.jsonl`` (one line per record: its linked
question entities for every record, paths where it names answer entities) and ``report.json`` per split:
records read, records with a linked entity, with answer entities, with a question entity in the KB, with
a path (and their share), the histogram of the shortest path's hops, and searches refused by
``limits.wikidata`` (counted, never fatal).

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.compressed import strict_lines
from assets.files import atomic_path
from assets.limits import DEFAULT_HOPS, LimitExceeded, input_line_bytes
from assets.storage import SnapshotPaths, write_report_json
from assets.wikidata.graph import UnknownEntity
from assets.wikidata.kb import KnowledgeBase
from assets.wikidata.linker import EntityLinker

__all__ = ["OracleReport", "answer_entities", "build_kb_paths", "question_entities"]

QID = re.compile(r"Q[1-9][0-9]*")
KILT_FILE = re.compile(r"^(?P<dataset>.+)-(?P<split>[^-]+)-kilt\.jsonl$")


def answer_entities(record: dict[str, Any]) -> list[str]:
    """The QIDs a record's answers name (``meta.entities``, or each output's ``meta.entity``), in order."""
    named = list((record.get("meta") or {}).get("entities") or [])
    for output in record.get("output") or []:
        entity = (output.get("meta") or {}).get("entity") if isinstance(output, dict) else None
        if entity:
            named.append(entity)
    return [qid for qid in dict.fromkeys(named) if isinstance(qid, str) and QID.fullmatch(qid)]


def question_entities(record: dict[str, Any], linker: EntityLinker | None) -> list[dict[str, Any]]:
    """The entities of a record's question: those it names (``meta.question_entities``, Mintaka), then
    the best candidate with a QID of each mention the linker finds in its input."""
    found: dict[str, dict[str, Any]] = {}
    for entity in (record.get("meta") or {}).get("question_entities") or []:
        name = entity.get("name") if isinstance(entity, dict) else None
        if isinstance(name, str) and QID.fullmatch(name):
            found.setdefault(name, {"qid": name, "source": "record", "mention": entity.get("mention")})
    text = record.get("input")
    if linker is not None and isinstance(text, str) and text:
        for mention in linker.link(text[: linker.limits.max_text_chars]):
            best = next((c for c in mention.candidates if c.qid), None)
            if best is not None:
                found.setdefault(
                    best.qid,
                    {"qid": best.qid, "source": "linked", "mention": mention.text, "score": best.score},
                )
    return list(found.values())


@dataclass(slots=True)
class SplitReport:
    records: int = 0
    with_linked_entity: int = 0
    """Records whose question the entity linker found an entity with a QID in."""
    with_answer_entities: int = 0
    with_question_entity_in_kb: int = 0
    with_answer_entity_in_kb: int = 0
    with_path: int = 0
    hops: dict[str, int] = field(default_factory=dict)
    refused_searches: int = 0

    def to_dict(self) -> dict[str, Any]:
        named = self.with_answer_entities
        return {
            "records": self.records,
            "with_linked_entity": self.with_linked_entity,
            "with_answer_entities": named,
            "with_question_entity_in_kb": self.with_question_entity_in_kb,
            "with_answer_entity_in_kb": self.with_answer_entity_in_kb,
            "with_path": self.with_path,
            "share_with_path": round(self.with_path / named, 4) if named else None,
            "hops": dict(sorted(self.hops.items())),
            "refused_searches": self.refused_searches,
        }


@dataclass(slots=True)
class OracleReport:
    snapshot_id: str
    max_hops: int
    splits: dict[str, SplitReport] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "max_hops": self.max_hops,
            "splits": {name: split.to_dict() for name, split in sorted(self.splits.items())},
            "seconds": self.seconds,
        }


def _records(path: Path, max_line_bytes: int | None) -> Iterator[dict[str, Any]]:
    for _, line in strict_lines(path, input_line_bytes(max_line_bytes)):
        if line.strip():
            yield json.loads(line)


def _oracle_line(
    record: dict[str, Any], kb: KnowledgeBase, linker: EntityLinker, max_hops: int, report: SplitReport
) -> dict[str, Any]:
    answers = answer_entities(record)
    questions = question_entities(record, linker)
    finder = kb.finder()
    in_graph = {qid for qid in {*answers, *(q["qid"] for q in questions)} if _in_graph(finder, qid)}
    report.with_question_entity_in_kb += any(q["qid"] in in_graph for q in questions)
    report.with_answer_entity_in_kb += any(a in in_graph for a in answers)
    found, shortest = [], None
    for question in questions:
        for answer in answers:
            if question["qid"] not in in_graph or answer not in in_graph or question["qid"] == answer:
                continue
            try:
                search = finder.shortest_paths(question["qid"], answer, max_hops)
            except LimitExceeded:
                report.refused_searches += 1
                continue
            if search.paths:
                described = kb.describe(search)
                found.append(
                    {
                        "source": question["qid"],
                        "target": answer,
                        "hops": search.hops,
                        "paths": [
                            {"text": p["text"], "statement_ids": [s["statement_id"] for s in p["steps"]]}
                            for p in described["paths"]
                        ],
                        "more_paths": search.more_paths,
                    }
                )
                shortest = search.hops if shortest is None else min(shortest, search.hops)
    if shortest is not None:
        report.with_path += 1
        report.hops[str(shortest)] = report.hops.get(str(shortest), 0) + 1
    return {
        "id": record.get("id"),
        "input": record.get("input"),
        "question_entities": questions,
        "answer_entities": answers,
        "shortest_hops": shortest,
        "paths": found,
    }


def _in_graph(finder: Any, qid: str) -> bool:
    try:
        finder.index_of(qid)
    except UnknownEntity:
        return False
    return True


def build_kb_paths(
    paths: SnapshotPaths,
    kb: KnowledgeBase,
    max_hops: int = DEFAULT_HOPS,
    *,
    progress: Callable[[str], None] | None = None,
    max_line_bytes: int | None = None,
) -> OracleReport:
    """Write ``paths``' KB-path oracle (``kb_paths/``) for every remapped split (its lines read within
    ``max_line_bytes``, ``limits.input``'s)."""
    started = time.perf_counter()
    report = OracleReport(paths.snapshot_id, max_hops)
    out = paths.kb_paths
    with atomic_path(out) as work:
        work.mkdir()
        with EntityLinker(paths.wikidata / "mentions.parquet", kb.limits) as linker:
            for source in sorted(paths.datasets.glob("*-kilt.jsonl")):
                match = KILT_FILE.match(source.name)
                if match is None:
                    continue
                name = f"{match['dataset']}-{match['split']}"
                split = report.splits.setdefault(name, SplitReport())
                with open(work / f"{name}.jsonl", "w", encoding="utf-8") as sink:
                    for record in _records(source, max_line_bytes):
                        split.records += 1
                        split.with_answer_entities += bool(answer_entities(record))
                        line = _oracle_line(record, kb, linker, max_hops, split)
                        split.with_linked_entity += any(
                            q["source"] == "linked" for q in line["question_entities"]
                        )
                        sink.write(json.dumps(line, ensure_ascii=False) + "\n")
        report.seconds = round(time.perf_counter() - started, 3)
        write_report_json(work / "report.json", report.to_dict())
    if progress is not None:
        for name, split in sorted(report.splits.items()):
            if split.with_answer_entities:
                progress(
                    f"kb paths {name}: {split.with_path:,} of {split.with_answer_entities:,} records with "
                    f"answer entities have a path of at most {max_hops} hops"
                )
    return report
