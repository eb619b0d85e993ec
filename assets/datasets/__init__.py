"""KILT's tasks read from any format and remapped onto a snapshot.

``records`` (the typed records), ``formats/`` (one module per format, one registry), ``readers``
(detection, ``read_dataset``), ``span_search`` and ``mapping`` (KILT's mapping, offline: provenance spans
of the snapshot), ``outputs`` (the remapped files and tables), ``pipeline`` (the stage), ``queries`` (record
lookups).
"""

from assets.datasets.mapping import TargetPage
from assets.datasets.outputs import build_datasets_db
from assets.datasets.pipeline import (
    DatasetSpec,
    MappedSplit,
    built_from_embedded_excerpt,
    configured_specs,
    map_datasets,
    remap_snapshot,
)
from assets.datasets.queries import DatasetQueries
from assets.datasets.records import require_file
from assets.datasets.span_search import content_start, find_best_span, prepare_page, searched_paragraph_ids

__all__ = [
    "DatasetQueries",
    "DatasetSpec",
    "MappedSplit",
    "TargetPage",
    "build_datasets_db",
    "built_from_embedded_excerpt",
    "configured_specs",
    "content_start",
    "find_best_span",
    "map_datasets",
    "prepare_page",
    "remap_snapshot",
    "require_file",
    "searched_paragraph_ids",
]
