"""Runs out: TREC runs and KILT retrieval output of a topics file's queries (read by :mod:`assets.topics`).

Shared by every index (:class:`assets.indexes.hits.Hit` lists keyed by topic id). Pure module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assets.compressed import strict_lines
from assets.files import atomic_path
from assets.indexes.collections import by_collection, collection_of
from assets.indexes.hits import Hit
from assets.limits import input_line_bytes
from assets.storage import SnapshotPaths, check_output_target
from assets.topics import Topic


def write_trec_run(results: Mapping[str, Sequence[Hit]], path: Path | str, tag: str = "kilt-bm25") -> int:
    """A TREC run (``qid Q0 docid rank score tag``), queries in ``results`` order; returns the line count."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"invalid run tag {tag!r}")
    path = check_output_target(path, "search --output")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as sink:
        for qid, hits in results.items():
            if not qid or any(c.isspace() for c in qid):
                raise ValueError(f"query id {qid!r} cannot be written in a TREC run (whitespace)")
            for rank, hit in enumerate(hits, 1):
                sink.write(f"{qid} Q0 {hit.passage_id} {rank} {hit.score:.6f} {tag}\n")
                lines += 1
    return lines


def read_trec_run(path: Path | str, max_line_bytes: int | None = None) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(docid, score), ...]}`` in rank order (each line within ``max_line_bytes``,
    ``limits.input``'s)."""
    run: dict[str, list[tuple[str, int, float]]] = {}
    for number, line in strict_lines(Path(path), input_line_bytes(max_line_bytes)):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ValueError(f"{path}:{number}: expected 6 fields, got {len(parts)}")
        qid, _, docid, rank, score, _ = parts
        run.setdefault(qid, []).append((docid, int(rank), float(score)))
    return {q: [(d, s) for d, _, s in sorted(rows, key=lambda r: r[1])] for q, rows in run.items()}


def _provenance(hit: Hit, row: dict[str, Any]) -> dict[str, Any]:
    """One ranked passage as KILT provenance, located as its collection locates its passages (a text
    passage by paragraph ids and offsets, a table or infobox by its structure and wikitext offsets, a kb
    passage by its entity, properties and statements, a stored question by its answers)."""
    return {
        "wikipedia_id": row["wikipedia_id"],
        "title": row["title"],
        **collection_of(hit.passage_id).kilt_provenance(row),
        "text": row["text"],
        "passage_id": hit.passage_id,
        "score": hit.score,
    }


def write_kilt_output(
    topics: Sequence[Topic], results: Mapping[str, Sequence[Hit]], path: Path | str, paths: SnapshotPaths
) -> int:
    """KILT retrieval output: one line per topic, ``output[0].provenance`` = the ranked passages.

    Each provenance has ``wikipedia_id``, ``title``, where the passage is, its ``text`` (KILT's
    evaluation reads the text for its in-context metrics and the section for section-level ranks),
    ``passage_id`` and ``score``; where a passage is, its collection says (:meth:`Collection.lookup`,
    :meth:`Collection.kilt_provenance`): a text passage's ``section``, ``start/end_paragraph_id`` and
    ``start/end_character``; a table's or infobox's ``kind``, ``structure_index``, ``first_row``/``last_row``
    and offsets in the page's wikitext; a kb passage's entity (``qid``; ``wikipedia_id`` its page or null),
    ``properties`` and ``statement_ids``; a stored question's ``answers`` and where the first is. A hit whose
    passage is not in its collection's Parquet is an error (index and passages from different builds).
    """
    wanted = {hit.passage_id for hits in results.values() for hit in hits}
    groups = by_collection(wanted)
    coordinates: dict[str, dict[str, Any]] = {}
    for collection, ids in groups.items():
        coordinates.update(collection.lookup(paths, ids))
    missing = wanted - coordinates.keys()
    if missing:
        examples = ", ".join(sorted(missing)[:5])
        where = " or ".join(str(collection.passages(paths) / "parquet") for collection in groups)
        raise ValueError(
            f"{len(missing)} retrieved passage(s) are not in {where} (e.g. {examples}): "
            "the index and the passages Parquet come from different builds"
        )
    path = check_output_target(path, "search --output")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as sink:
        for topic in topics:
            provenance = [_provenance(hit, coordinates[hit.passage_id]) for hit in results.get(topic.id, ())]
            record = {"id": topic.id, "input": topic.text, "output": [{"provenance": provenance}]}
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(topics)
