"""Original FEVER JSONL claims ``{id, label, claim, evidence}``: one output per evidence set (answer =
the label), provenance titles un-escaped from FEVER page ids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.datasets.formats.registry import DatasetFormat, ReadOptions, register
from assets.datasets.records import (
    DatasetReadResult,
    DatasetRecord,
    ReadContext,
    iter_json_lines,
)
from assets.wikipedia.wikitext import decode_fever_escapes


def fever_title(page: str) -> str:
    """A FEVER page id as a Wikipedia title: ``Soul_Food_-LRB-film-RRB-`` -> ``Soul Food (film)``."""
    return decode_fever_escapes(page).replace("_", " ")


def _fever_outputs(label: str | None, evidence: Any) -> list[dict[str, Any]] | str:
    """Outputs for a FEVER claim, or an error message."""
    if evidence is None:
        evidence = []
    if not isinstance(evidence, list):
        return "field 'evidence' must be a list of evidence sets"
    outputs: list[dict[str, Any]] = []
    bare = False  # an evidence set without any page (NOT ENOUGH INFO), emitted once
    for s, evidence_set in enumerate(evidence):
        if not isinstance(evidence_set, list):
            return f"evidence[{s}] must be a list of [annotation_id, evidence_id, page, sentence_id]"
        provenance = []
        for item in evidence_set:
            if not isinstance(item, list) or len(item) != 4:
                return f"evidence[{s}] item must be [annotation_id, evidence_id, page, sentence_id]"
            annotation_id, evidence_id, page, sentence_id = item
            if page is None:
                continue
            if not isinstance(page, str):
                return f"evidence[{s}] page must be a string or null"
            provenance.append(
                {
                    "title": fever_title(page),
                    "fever_page_id": page,
                    "sentence_id": sentence_id,
                    "annotation_id": annotation_id,
                    "evidence_id": evidence_id,
                }
            )
        if provenance:
            out: dict[str, Any] = {} if label is None else {"answer": label}
            out["provenance"] = provenance
            outputs.append(out)
        else:
            bare = True
    if label is not None and (bare or not outputs):
        outputs.append({"answer": label})
    return outputs


def _read(
    path: Path, ctx: ReadContext, options: ReadOptions, result: DatasetReadResult
) -> Iterator[DatasetRecord]:
    for number, obj in iter_json_lines(path, ctx):
        if obj.get("id") is None:
            ctx.problem(number, "missing required field 'id'")
            continue
        claim = obj.get("claim")
        if not isinstance(claim, str):
            ctx.problem(
                number,
                "missing required field 'claim'" if claim is None else "field 'claim' must be a string",
            )
            continue
        label = obj.get("label")
        if label is not None and not isinstance(label, str):
            ctx.problem(number, "field 'label' must be a string")
            continue
        outputs = _fever_outputs(label, obj.get("evidence"))
        if isinstance(outputs, str):
            ctx.problem(number, outputs)
            continue
        record = DatasetRecord(
            id=str(obj["id"]),
            input=claim,
            output=outputs,
            meta={k: v for k, v in obj.items() if k not in ("id", "claim", "label", "evidence")},
            line=number,
        )
        yield ctx.emit(record)


FORMAT = register(
    DatasetFormat(
        name="fever",
        description="original FEVER JSONL {id, label, claim, evidence}",
        read=_read,
        sniff=lambda obj: "claim" in obj,
        dataset_of=lambda name: "fever",
        sniff_priority=20,
    )
)
