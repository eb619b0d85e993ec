"""Topics in, runs out: query files (TSV, KILT JSONL, DPR QA TSV), TREC runs and KILT retrieval output.

Shared by every index (:class:`assets.indexes.hits.Hit` lists keyed by topic id). Pure module.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.compressed import open_text
from assets.files import atomic_path
from assets.indexes.hits import Hit, passage_kind
from assets.storage import sql_literal
from assets.wikipedia.passages import SPAN_COLUMNS

STRUCTURED_PROVENANCE = (
    "kind",
    "structure_index",
    "first_row",
    "last_row",
    "start_character",
    "end_character",
)
"""Where a table or infobox passage is on its page (character offsets into the page's wikitext)."""
KB_PROVENANCE = ("qid", "properties", "statement_ids")
"""What a ``kb`` passage states: its entity, the properties and the statements (Wikidata ids)."""


@dataclass(frozen=True, slots=True)
class Topic:
    id: str
    text: str


_TSV_HEADERS = {("id", "text"), ("qid", "query"), ("id", "query")}


def read_topics(path: Path | str, fmt: str | None = None) -> list[Topic]:
    """Queries from a TSV (``id<TAB>text``), KILT JSONL (``id``, ``input``) or DPR QA TSV file.

    ``fmt`` is ``"tsv"``, ``"kilt"`` or ``"dpr"`` (``question<TAB>['answer', ...]``: ids are 0-based
    line numbers); by default ``.jsonl``/``.json`` mean KILT and anything else TSV. Ids must be unique.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "topics file not found", str(path))
    fmt = fmt or ("kilt" if path.name.endswith((".jsonl", ".json", ".jsonl.gz")) else "tsv")
    if fmt not in ("tsv", "kilt", "dpr"):
        raise ValueError(f"unknown topics format {fmt!r} (tsv, kilt or dpr)")
    topics: list[Topic] = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if fmt == "kilt":
                try:
                    record = json.loads(line)
                    topics.append(Topic(str(record["id"]), str(record["input"])))
                except (ValueError, KeyError, TypeError) as error:
                    message = f"{path}:{number}: not a KILT record with id and input ({error})"
                    raise ValueError(message) from None
            elif fmt == "dpr":
                question, tab, _ = line.partition("\t")
                if not tab:
                    raise ValueError(f"{path}:{number}: expected question<TAB>answers")
                topics.append(Topic(str(number - 1), question.strip()))
            else:
                qid, tab, text = line.partition("\t")
                if not tab or not qid.strip():
                    raise ValueError(f"{path}:{number}: expected id<TAB>text")
                if number == 1 and (qid.strip().lower(), text.strip().lower()) in _TSV_HEADERS:
                    continue
                topics.append(Topic(qid.strip(), text.strip()))
    seen: set[str] = set()
    for topic in topics:
        if topic.id in seen:
            raise ValueError(f"{path}: duplicate topic id {topic.id!r}")
        seen.add(topic.id)
    return topics


def write_trec_run(results: Mapping[str, Sequence[Hit]], path: Path | str, tag: str = "kilt-bm25") -> int:
    """A TREC run (``qid Q0 docid rank score tag``), queries in ``results`` order; returns the line count."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"invalid run tag {tag!r}")
    path = Path(path)
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


def read_trec_run(path: Path | str) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(docid, score), ...]}`` in rank order."""
    run: dict[str, list[tuple[str, int, float]]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ValueError(f"{path}:{number}: expected 6 fields, got {len(parts)}")
            qid, _, docid, rank, score, _ = parts
            run.setdefault(qid, []).append((docid, int(rank), float(score)))
    return {q: [(d, s) for d, _, s in sorted(rows, key=lambda r: r[1])] for q, rows in run.items()}


PROVENANCE_COLUMNS = ("wikipedia_id", "title", *SPAN_COLUMNS)


def lookup_passages(
    passages_parquet_dir: Path | str,
    passage_ids: Iterable[str],
    columns: Sequence[str] = PROVENANCE_COLUMNS,
) -> dict[str, dict[str, Any]]:
    """``columns`` (provenance coordinates by default) of ``passage_ids`` from the passages Parquet, in
    one DuckDB query; ids not found are absent."""
    import duckdb
    import pyarrow as pa

    directory = Path(passages_parquet_dir)
    if not directory.is_dir() or not any(directory.glob("*.parquet")):
        raise FileNotFoundError(f"no passages Parquet files in {directory}")
    ids = sorted(set(passage_ids))
    if not ids:
        return {}
    con = duckdb.connect()
    try:
        con.register("wanted", pa.table({"passage_id": pa.array(ids, pa.string())}))
        shards = sql_literal(directory / "*.parquet")
        rows = con.execute(
            f"SELECT passage_id, {', '.join(columns)} FROM read_parquet({shards}) "
            "WHERE passage_id IN (SELECT passage_id FROM wanted)"
        ).fetchall()
    finally:
        con.close()
    return {row[0]: dict(zip(columns, row[1:], strict=True)) for row in rows}


TEXT_COORDINATES = ("start_paragraph_id", "start_character", "end_paragraph_id", "end_character")


def _provenance(hit: Hit, row: dict[str, Any]) -> dict[str, Any]:
    """One ranked passage as KILT provenance, located as its kind is: a text passage by paragraph ids and
    offsets, a table or infobox by its structure and wikitext offsets, a kb passage by its entity, the
    properties and the statements it states."""
    if hit.kind == "kb":
        where = {"kind": "kb", **{name: row[name] for name in KB_PROVENANCE}}
    elif hit.kind != "text":
        where = {"section": row["section"], **{name: row[name] for name in STRUCTURED_PROVENANCE}}
    else:
        where = {"section": row["section"], **{name: row[name] for name in TEXT_COORDINATES}}
    return {
        "wikipedia_id": row["wikipedia_id"],
        "title": row["title"],
        **where,
        "text": row["text"],
        "passage_id": hit.passage_id,
        "score": hit.score,
    }


def write_kilt_output(
    topics: Sequence[Topic],
    results: Mapping[str, Sequence[Hit]],
    path: Path | str,
    passages_parquet_dir: Path | str,
    structured_parquet_dir: Path | str | None = None,
    kb_parquet_dir: Path | str | None = None,
) -> int:
    """KILT retrieval output: one line per topic, ``output[0].provenance`` = the ranked passages.

    Each provenance has ``wikipedia_id``, ``title``, ``section``, ``start/end_paragraph_id``,
    ``start/end_character`` and the passage ``text`` (from the passages Parquet: KILT's evaluation reads
    the text for its in-context metrics and the section for section-level ranks), ``passage_id`` and
    ``score``. A table or infobox hit (from ``structured_parquet_dir``) has ``kind``, ``structure_index``,
    ``first_row``/``last_row`` and ``start/end_character`` in the page's wikitext instead of paragraph
    ids. A KB hit (from ``kb_parquet_dir``) has ``kind`` ``kb``, its entity's ``qid`` (``wikipedia_id``: the
    entity's page, or null), and the ``properties`` and ``statement_ids`` it states. A hit whose passage is
    not in the Parquet is an error (index and passages from different builds).
    """
    wanted = {hit.passage_id for hits in results.values() for hit in hits}
    kb = {pid for pid in wanted if passage_kind(pid) == "kb"}
    structured = {pid for pid in wanted if passage_kind(pid) != "text"} - kb
    coordinates = lookup_passages(
        passages_parquet_dir, wanted - structured - kb, (*PROVENANCE_COLUMNS, "section", "text")
    )
    if structured and structured_parquet_dir is not None:
        columns = ("wikipedia_id", "title", "section", *STRUCTURED_PROVENANCE, "text")
        coordinates.update(lookup_passages(structured_parquet_dir, structured, columns))
    if kb and kb_parquet_dir is not None:
        columns = ("wikipedia_id", "title", *KB_PROVENANCE, "text")
        coordinates.update(lookup_passages(kb_parquet_dir, kb, columns))
    missing = wanted - coordinates.keys()
    if missing:
        examples = ", ".join(sorted(missing)[:5])
        where = " or ".join(
            str(folder) for folder in (passages_parquet_dir, structured_parquet_dir, kb_parquet_dir) if folder
        )
        raise ValueError(
            f"{len(missing)} retrieved passage(s) are not in {where} (e.g. {examples}): "
            "the index and the passages Parquet come from different builds"
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as sink:
        for topic in topics:
            provenance = [_provenance(hit, coordinates[hit.passage_id]) for hit in results.get(topic.id, ())]
            record = {"id": topic.id, "input": topic.text, "output": [{"provenance": provenance}]}
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(topics)
