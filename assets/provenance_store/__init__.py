"""The per-snapshot provenance store: lookups of pages, paragraphs, passages and spans.

``provenance.duckdb`` (pages, paragraphs, passages, redirects, the KB's tables; read by :mod:`.store`,
built by :mod:`.build`) and ``passages.sqlite``, every passage by its id for point and batch lookups at
key-value speed (:mod:`.passage_rows`)."""

from assets.provenance_store.build import StoreReport, build_store
from assets.provenance_store.passage_rows import (
    LOOKUP_CHUNK,
    PassageRows,
    report_stamp,
    write_parquet_rows,
    write_passage_rows,
)
from assets.provenance_store.store import (
    PageMatch,
    ProvenanceStore,
    covered_fraction,
    covered_fraction_sql,
    paragraph_key,
)

__all__ = [
    "LOOKUP_CHUNK",
    "PageMatch",
    "PassageRows",
    "ProvenanceStore",
    "StoreReport",
    "build_store",
    "covered_fraction",
    "covered_fraction_sql",
    "paragraph_key",
    "report_stamp",
    "write_parquet_rows",
    "write_passage_rows",
]
