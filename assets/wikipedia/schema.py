"""The knowledge source's Arrow schemas (stage 1, published pages, redirects) and its build report: what
``kilt_jsonl``, ``passage_build`` and every stage of the build share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from assets.input_forms import XML_FORM, bytes_name
from assets.skips import SkipLog

_ANCHOR_FIELDS = [
    ("paragraph_id", pa.int32()),
    ("start", pa.int32()),
    ("end", pa.int32()),
    ("text", pa.string()),
    ("href", pa.string()),
]


ANCHOR_TYPE = pa.struct([*_ANCHOR_FIELDS, ("target_key", pa.string())])  # stage 1: target not resolved yet


RESOLVED_ANCHOR_TYPE = pa.struct(
    [*_ANCHOR_FIELDS, ("wikipedia_title", pa.string()), ("wikipedia_id", pa.string())]
)


HISTORY_TYPE = pa.struct(
    [
        ("revid", pa.int64()),
        ("parentid", pa.int64()),
        ("pageid", pa.int64()),
        ("timestamp", pa.string()),
        ("url", pa.string()),
        ("pre_dump", pa.bool_()),
    ]
)
"""KILT's ``history``: the ids as integers, as KILT's release types them."""


def _page_fields(anchor_type: pa.DataType) -> list[tuple[str, pa.DataType]]:
    return [
        ("wikipedia_id", pa.string()),
        ("wikipedia_title", pa.string()),
        ("text", pa.list_(pa.string())),
        ("anchors", pa.list_(anchor_type)),
        ("categories", pa.list_(pa.string())),
        ("history", HISTORY_TYPE),
        ("is_disambiguation", pa.bool_()),
        ("text_sha1", pa.string()),
        ("wikitext_bytes", pa.int64()),
    ]


STAGE1_SCHEMA = pa.schema([("ord", pa.int64()), *_page_fields(ANCHOR_TYPE)])


REDIRECT_STAGE1_SCHEMA = pa.schema(
    [
        ("source_title", pa.string()),
        ("source_id", pa.string()),
        ("target_title", pa.string()),
        ("target_fragment", pa.string()),
    ]
)


WIKIDATA_INFO_TYPE = pa.struct([("wikidata_id", pa.string())])
"""KILT's ``wikidata_info`` (its release adds labels and aliases; the page_props table gives the id)."""


PAGES_SCHEMA = pa.schema([*_page_fields(RESOLVED_ANCHOR_TYPE), ("wikidata_info", WIKIDATA_INFO_TYPE)])
"""Schema of the published ``pages/part-*.parquet`` shards (KILT's fields plus two of ours);
``wikidata_info`` is null when the build had no page_props table or the page has no QID."""


REDIRECT_FINAL_SCHEMA = pa.schema(
    [
        *REDIRECT_STAGE1_SCHEMA,
        ("target_wikipedia_title", pa.string()),
        ("target_wikipedia_id", pa.string()),
        ("hops", pa.int32()),
        ("status", pa.string()),
        ("wikidata_id", pa.string()),
    ]
)
"""Schema of ``redirects.parquet``: status is resolved, missing_target or loop_or_too_long;
``wikidata_id`` is the redirect page's own QID (rare; null without a page_props table)."""


RESIDUAL_SAMPLE_SIZE = 20


@dataclass(slots=True)
class KnowledgeSourceReport:
    """Everything a build measured; saved as ``report.json`` and shown as Dagster metadata."""

    snapshot_id: str
    dump_path: str
    dump_bytes: int
    compression: str
    input_bytes: int  # bytes of the dump's input read: XML, or an Enterprise dump's HTML (see input_name)
    dbname: str | None
    language: str | None
    dump_files: list[str] = field(default_factory=list)  # every file read, parts in order
    pages_read: int = 0
    articles: int = 0
    redirects: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[str] = field(default_factory=list)
    paragraphs: int = 0
    residual_markup_paragraphs: int = 0
    residual_markup_examples: list[dict[str, Any]] = field(default_factory=list)
    anchors: int = 0
    pages_reused: int = 0  # copied from an earlier snapshot instead of converted (page_reuse)
    reuse: str | None = None  # the snapshot they came from, or why none could serve
    route: str = XML_FORM  # the form of the dump it was built from (assets.input_forms)
    anchors_resolved: int = 0
    redirects_resolved: int = 0
    redirects_unresolved: dict[str, int] = field(default_factory=dict)
    wikidata: dict[str, Any] = field(default_factory=dict)  # the page_props table read, or why absent
    pages_with_qid: int = 0
    redirects_with_qid: int = 0
    redirect_table: dict[str, Any] = field(default_factory=dict)  # the redirect table cross-check
    shards: int = 0
    parquet_bytes: int = 0
    seconds: float = 0.0
    parse_seconds: float = 0.0
    resolve_seconds: float = 0.0

    def add_skips(self, skips: SkipLog) -> None:
        """Add a read's or a batch's :class:`~assets.skips.SkipLog`: its counts into ``skipped``, its named
        skips into ``skipped_examples`` (the first :data:`RESIDUAL_SAMPLE_SIZE` of the build's)."""
        for reason, count in skips.by_reason.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.skipped_examples.extend(skips.named[: max(RESIDUAL_SAMPLE_SIZE - len(self.skipped_examples), 0)])

    @property
    def residual_markup_fraction(self) -> float:
        return self.residual_markup_paragraphs / self.paragraphs if self.paragraphs else 0.0

    @property
    def pages_per_second(self) -> float:
        return self.pages_read / self.seconds if self.seconds else 0.0

    @property
    def input_mb_per_second(self) -> float:
        return self.input_bytes / 1e6 / self.seconds if self.seconds else 0.0

    @property
    def input_name(self) -> str:
        """What the route reads, as its byte counts are named where a user looks: ``xml`` or ``html``."""
        return bytes_name(self.route)

    def metadata(self) -> dict[str, Any]:
        """What the ``knowledge_source`` asset shows in the Dagster UI (plain values)."""
        return {
            "snapshot_id": self.snapshot_id,
            "pages": self.articles,
            "redirects": self.redirects,
            "pages_read": self.pages_read,
            "skipped_by_reason": dict(self.skipped),
            "paragraphs": self.paragraphs,
            "anchors": self.anchors,
            "anchors_resolved": self.anchors_resolved,
            "pages_reused": self.pages_reused,
            "reuse": self.reuse or "none",
            "residual_markup_fraction": float(self.residual_markup_fraction),
            "route": self.route,
            "compression": self.compression,
            f"{self.input_name}_bytes": self.input_bytes,
            "parquet_bytes": self.parquet_bytes,
            "shards": self.shards,
            "parse_seconds_summed": float(self.parse_seconds),
            "resolve_seconds": float(self.resolve_seconds),
            "seconds": float(self.seconds),
            "pages_per_second": float(self.pages_per_second),
            f"{self.input_name}_mb_per_second": float(self.input_mb_per_second),
            "pages_with_qid": self.pages_with_qid,
            "redirects_with_qid": self.redirects_with_qid,
            "wikidata": dict(self.wikidata),
            **({"redirect_table": dict(self.redirect_table)} if self.redirect_table else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["residual_markup_fraction"] = self.residual_markup_fraction
        payload["pages_per_second"] = self.pages_per_second
        payload["input_mb_per_second"] = self.input_mb_per_second
        return payload
