"""BM25: an Anserini (Lucene) index, searched in-process through pyserini.

The index is built byte-reproducibly.

* :mod:`~assets.indexes.bm25.index`: building (:func:`build_bm25`, :func:`build_bm25_index`);
* :mod:`~assets.indexes.bm25.searcher`: :class:`Bm25Searcher`, the ``bm25`` index type's searcher;
* :mod:`~assets.indexes.bm25.settings`: :class:`Bm25Settings` (``indexes.bm25``);
* :mod:`~assets.indexes.bm25.java` and :mod:`~assets.indexes.bm25.lucene_files`: the Java runtime, and
  what Lucene would take from the clock, the host and chance.
"""

from __future__ import annotations

from operator import attrgetter

from assets.indexes.bm25.index import (
    META_FILE,
    Bm25IndexError,
    Bm25IndexReport,
    build_bm25,
    build_bm25_index,
    build_bm25_over,
    index_collection_args,
    lucene_buffer_mb,
    parse_index_log,
    read_index_metadata,
    snapshot_language,
)
from assets.indexes.bm25.java import (
    anserini_command,
    anserini_version,
    configure_jnius,
    import_pyserini,
    java_runtime,
    run_anserini,
)
from assets.indexes.bm25.lucene_files import (
    LuceneFileError,
    pin_segment_diagnostics,
    pin_segment_info,
    pinned_diagnostics,
    segment_id_seed,
)
from assets.indexes.bm25.searcher import Bm25Searcher, bm25_documents, search_topics
from assets.indexes.bm25.settings import Bm25Settings
from assets.indexes.registry import SearcherType

__all__ = [
    "BM25",
    "META_FILE",
    "Bm25IndexError",
    "Bm25IndexReport",
    "Bm25Searcher",
    "Bm25Settings",
    "LuceneFileError",
    "anserini_command",
    "anserini_version",
    "build_bm25",
    "build_bm25_index",
    "configure_jnius",
    "import_pyserini",
    "index_collection_args",
    "java_runtime",
    "lucene_buffer_mb",
    "parse_index_log",
    "pin_segment_diagnostics",
    "pin_segment_info",
    "pinned_diagnostics",
    "read_index_metadata",
    "run_anserini",
    "search_topics",
    "segment_id_seed",
    "snapshot_language",
]

BM25 = SearcherType(
    "bm25",
    "BM25 (Anserini/Lucene)",
    Bm25Searcher.open,
    asset="bm25_index",
    index_dir=attrgetter("bm25_index"),
    build=build_bm25_over,
    documents=bm25_documents,
    sources=("assets/indexes/bm25", "assets/languages.py", "assets/segmentation.py"),
    dvc_outs=("bm25",),
)
"""The ``bm25`` index type (registered by :mod:`assets.indexes`)."""
