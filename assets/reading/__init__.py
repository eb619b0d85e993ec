"""One door to a built snapshot (stores, retriever, KB, answerer) and its HTTP API.

:class:`Snapshot` opens them; :mod:`.stores` says whether its local lookup stores are current (and
rebuilds them for a build); :mod:`.serving` (imported on its own: it loads FastAPI) serves it.

Above every domain: it assembles the provenance store, the retriever, the Wikidata KB, the QA-pair
answerer and the remapped datasets' queries; nothing below imports it."""

from assets.reading.snapshot import Snapshot, mapping_stores
from assets.reading.stores import (
    ensure_local_stores,
    missing_stores,
    open_qa_lookup,
    qa_lookup_current,
    require_stores,
)

__all__ = [
    "Snapshot",
    "ensure_local_stores",
    "mapping_stores",
    "missing_stores",
    "open_qa_lookup",
    "qa_lookup_current",
    "require_stores",
]
