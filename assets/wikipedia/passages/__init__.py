"""Passages of at most N words with KILT coordinates, and tables and infoboxes as passages.

* :mod:`~assets.wikipedia.passages.chunk`: a page cut into passages (``kilt`` or ``dpr`` mode);
* :mod:`~assets.wikipedia.passages.build`: a snapshot's passages as Parquet, JsonCollection and TSV;
* :mod:`~assets.wikipedia.passages.structured` and :mod:`~assets.wikipedia.passages.structured_build`:
  the structured collection.
"""

from assets.wikipedia.passages.build import PASSAGES_SCHEMA, build_passages
from assets.wikipedia.passages.chunk import (
    ABSTRACT_SECTION,
    SECTION_PREFIX,
    SPAN_COLUMNS,
    chunk_page,
    content_bounds,
)
from assets.wikipedia.passages.structured import STRUCTURED_FIELDS, structured_passages, table_units
from assets.wikipedia.passages.structured_build import (
    STRUCTURED_SCHEMA,
    build_structured_passages,
    structured_preview,
)

__all__ = [
    "ABSTRACT_SECTION",
    "PASSAGES_SCHEMA",
    "SECTION_PREFIX",
    "SPAN_COLUMNS",
    "STRUCTURED_FIELDS",
    "STRUCTURED_SCHEMA",
    "build_passages",
    "build_structured_passages",
    "chunk_page",
    "content_bounds",
    "structured_passages",
    "structured_preview",
    "table_units",
]
