"""FEVER as Anserini ships it: topics (``id<TAB>claim``) and TREC qrels (``claim_id 0 Page rel``), read as a
pair (``topics.fever.<split>.txt`` beside ``qrels.fever.<split>.txt``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets.formats.fever import fever_title
from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    iter_lines,
    plain_name,
    require_file,
    split_from_name,
)
from assets.limits import input_line_bytes

_FEVER_QRELS_NAME = re.compile(r"^(?P<kind>topics|qrels)\.fever\.(?P<split>[a-z0-9_-]+)\.txt$")


def _relevant_pages(qctx: ReadContext) -> dict[str, list[dict[str, Any]]]:
    """The relevant pages of each claim in the qrels file of ``qctx``, in file order, each page once."""
    pages: dict[str, list[dict[str, Any]]] = {}
    for number, raw in iter_lines(qctx.path, qctx):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
            qctx.problem(number, f"qrels: expected 'claim_id 0 page relevance', got {raw.strip()!r}")
            continue
        claim_id, _, page, relevance = parts
        qctx.counts["qrels"] += 1
        if int(relevance) <= 0:
            continue
        entries = pages.setdefault(claim_id, [])
        if all(e["fever_page_id"] != page for e in entries):
            entries.append({"title": fever_title(page), "fever_page_id": page, "relevance": int(relevance)})
    return pages


def read_fever_qrels(
    topics_path: str | Path,
    qrels_path: str | Path,
    *,
    strict: bool = False,
    split: str | None = None,
    lazy: bool = False,
    max_line_bytes: int | None = None,
) -> DatasetReadResult:
    """FEVER claims (``id<TAB>claim``) with their TREC qrels pages (``claim_id 0 Page_Title rel``).

    One record per claim, in topics order: one answer-less output per relevant page (the qrels do not
    say which pages form one evidence set, so each page is an alternative provenance set, as in most
    FEVER claims), provenance ``title`` un-escaped, ``fever_page_id`` raw, ``relevance``; claims without
    qrels get no output (counted as ``claims_without_provenance``). Problems carry topics line numbers,
    or qrels line numbers prefixed ``qrels:`` in the message. Qrels for claims not in the topics are
    counted and noted.
    """
    topics_path, qrels_path = (
        require_file(topics_path, "FEVER topics file"),
        require_file(qrels_path, "qrels file"),
    )
    split = split or split_from_name(plain_name(topics_path))
    result = DatasetReadResult(
        path=topics_path, format="fever_qrels", dataset="fever", split=split, records=[]
    )
    bound = input_line_bytes(max_line_bytes)
    pages = _relevant_pages(
        ReadContext(qrels_path, strict, result.skips, result.counts, max_line_bytes=bound)
    )
    ctx = ReadContext(topics_path, strict, result.skips, result.counts, max_line_bytes=bound)

    def generate() -> Iterator[DatasetRecord]:
        for number, line in iter_lines(topics_path, ctx):
            if not line.strip():
                continue
            ctx.counts["lines"] += 1
            claim_id, tab, claim = line.partition("\t")
            if not tab or not claim_id.strip() or not claim.strip():
                ctx.problem(number, f"expected 'id<TAB>claim', got {line[:80]!r}")
                continue
            claim_id = claim_id.strip()
            provenance = pages.get(claim_id)
            if provenance:
                ctx.counts["claims_with_provenance"] += 1
            else:
                ctx.counts["claims_without_provenance"] += 1
            record = DatasetRecord(
                id=claim_id,
                input=claim,
                output=[{"provenance": [entry]} for entry in provenance or []],
                line=number,
            )
            yield ctx.emit(record)
        orphans = sorted(set(pages) - set(ctx.seen))
        if orphans:
            ctx.counts["qrels_claims_without_topic"] = len(orphans)
            ctx.note(0, f"{len(orphans)} qrels claims are not in {topics_path.name} (e.g. {orphans[0]})")

    generator = generate()
    result.records = generator if lazy else list(generator)
    return result


def _pair(path: Path, qrels_path: str | Path | None) -> tuple[Path, Path]:
    name = path.name
    if qrels_path is not None:
        return path, Path(qrels_path)
    if name.startswith("topics."):
        return path, path.with_name("qrels." + name.removeprefix("topics."))
    if name.startswith("qrels."):
        return path.with_name("topics." + name.removeprefix("qrels.")), path
    raise ValueError(f"{path}: pass qrels_path= (no sibling qrels.* file can be derived from the name)")


def _read_result(path: Path, options: ReadOptions) -> DatasetReadResult:
    topics, qrels = _pair(path, options.qrels_path)
    return read_fever_qrels(
        topics,
        qrels,
        strict=options.strict,
        split=options.split,
        lazy=options.lazy,
        max_line_bytes=options.max_line_bytes,
    )


def _match_name(name: str) -> tuple[str | None, str | None] | None:
    match = _FEVER_QRELS_NAME.match(name)
    return ("fever", match["split"]) if match else None


FORMAT = register(
    DatasetFormat(
        name="fever_qrels",
        description="FEVER topics TSV (id<TAB>claim) + TREC qrels (claim_id 0 Page 2)",
        read_result=_read_result,
        aliases=("fever-qrels",),
        match_name=_match_name,
        sniff_text=lambda head, first_line: re.match(r"^\d+\t[^\t\[]+$", first_line) is not None,
        dataset_of=lambda name: "fever",
        priority=20,
        sniff_priority=90,
    )
)
