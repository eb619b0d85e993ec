"""The per-snapshot provenance store: lookups of pages, paragraphs, passages and spans.

``provenance.duckdb`` (pages, paragraphs, passages, redirects and the tables of every registered
collection, :mod:`.tables`: tables and infoboxes, the KB's; read by :mod:`.store`, built by :mod:`.build`)
and ``passages.sqlite``, every passage by its id for point and batch lookups at key-value speed
(:mod:`.passage_rows`)."""

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
from assets.provenance_store.tables import (
    KB_PASSAGES,
    STRUCTURED_PASSAGES,
    TEXT_PASSAGES,
    StoredPassages,
    register_stored_passages,
    stored_passages,
)

__all__ = [
    "KB_PASSAGES",
    "LOOKUP_CHUNK",
    "STRUCTURED_PASSAGES",
    "TEXT_PASSAGES",
    "PageMatch",
    "PassageRows",
    "ProvenanceStore",
    "StoreReport",
    "StoredPassages",
    "build_store",
    "covered_fraction",
    "covered_fraction_sql",
    "paragraph_key",
    "register_stored_passages",
    "report_stamp",
    "stored_passages",
    "write_parquet_rows",
    "write_passage_rows",
]
