"""Whether a snapshot's local lookup stores can be read, and the one place missing ones are rebuilt.

The two DuckDB files (``provenance.duckdb``, ``datasets.duckdb``) and the QA-pair KB's SQLite lookup
(``qa_pairs.sqlite``) are lookup indexes over versioned Parquet, and the only artifacts that are not
byte-reproducible: DuckDB writes a random database id into the file header, and slack bytes of its
string-compression segments (duckdb/duckdb#23382); SQLite writes its library version into the header. So
DVC versions the Parquet, not these files: after a ``dvc pull`` (or a deleted store) they are missing until
``kiltpipe restore-stores`` rebuilds them. A read never writes: it names that command
(:func:`require_stores`); a build rebuilds them in its staging folder (:func:`ensure_local_stores`).
"""

from __future__ import annotations

import logging

from assets.datasets import build_datasets_db
from assets.provenance_store import PassageRows, build_store, report_stamp
from assets.qa import write_qa_lookup
from assets.storage import SnapshotPaths

__all__ = [
    "ensure_local_stores",
    "missing_stores",
    "open_qa_lookup",
    "qa_lookup_current",
    "require_stores",
]

log = logging.getLogger(__name__)


def missing_stores(paths: SnapshotPaths, *, qa_lookup: bool = True) -> list[str]:
    """The local stores of a snapshot that are missing (or, the QA lookup, stale) while the Parquet they are
    built from is there; ``qa_lookup`` False: the QA-pair KB's lookup file is left out (not opened)."""
    missing = []
    if (
        not paths.provenance_store.is_file()
        and paths.manifest_file.is_file()
        and paths.passages_parquet.is_dir()
    ):
        missing.append(paths.provenance_store.name)
    if not paths.datasets_db.is_file() and any((paths.datasets / "parquet").glob("*/*.parquet")):
        missing.append(paths.datasets_db.name)
    if qa_lookup and (paths.qa_pairs / "parquet").is_dir() and not qa_lookup_current(paths):
        missing.append(paths.qa_lookup.name)
    return missing


def qa_lookup_current(paths: SnapshotPaths) -> bool:
    """Whether the QA-pair KB's lookup file is there and was built from the KB's current build (a
    ``dvc checkout`` of another build leaves an older one behind)."""
    try:
        open_qa_lookup(paths).close()
    except LookupError:
        return False
    return True


def ensure_local_stores(paths: SnapshotPaths) -> list[str]:
    """Build the :func:`missing_stores` of ``paths`` (a build's staging folder: only a build writes);
    returns their names. A snapshot without the Parquet to build from is left to the store's own error."""
    missing = missing_stores(paths)
    for name in missing:
        log.info("snapshot %s: building %s from its Parquet", paths.snapshot_id, name)
        if name == paths.provenance_store.name:
            build_store(paths)
        elif name == paths.qa_lookup.name:
            write_qa_lookup(paths)
        else:
            build_datasets_db(paths)
    return missing


def require_stores(paths: SnapshotPaths) -> None:
    """A :class:`LookupError` naming ``kiltpipe restore-stores`` when ``paths`` (a snapshot someone else
    publishes: read, never written) lacks the provenance or datasets store its Parquet could rebuild.
    The QA-pair KB's lookup is checked when the KB is opened (:func:`open_qa_lookup`): a stale one
    refuses ``kiltpipe answer``, not a page or KB lookup."""
    missing = missing_stores(paths, qa_lookup=False)
    if missing:
        what = " and ".join(f"{name} is missing" for name in missing)
        raise LookupError(
            f"snapshot {paths.snapshot_id} ({paths.root.resolve()}): {what} (DVC versions their Parquet, not "
            f"these lookup files); rebuild them with `kiltpipe restore-stores --snapshot {paths.snapshot_id}`"
        )


def open_qa_lookup(paths: SnapshotPaths) -> PassageRows:
    """The QA-pair KB's lookup file, open (once: the answerer reads its rows through it), after checking
    it was built from the KB's current build: missing or stale, a :class:`LookupError` naming
    ``kiltpipe restore-stores``; no KB at all, a :class:`FileNotFoundError` naming the build."""
    if not (paths.qa_pairs / "parquet").is_dir():
        raise FileNotFoundError(
            f"snapshot {paths.snapshot_id} has no QA-pair KB ({paths.qa_pairs.absolute()}); build it "
            f"with `kiltpipe build --snapshot {paths.snapshot_id}` (qa.files in params.yaml)"
        )
    rows = PassageRows(paths.qa_lookup) if paths.qa_lookup.is_file() else None
    if rows is None or rows.stamp != report_stamp(paths.qa_pairs):
        if rows is not None:
            rows.close()
        raise LookupError(
            f"snapshot {paths.snapshot_id}: the QA-pair KB's lookup {paths.qa_lookup.absolute()} is "
            "missing or from another build of qa_pairs (DVC versions the Parquet, not this file); "
            f"rebuild it with `kiltpipe restore-stores --snapshot {paths.snapshot_id}`"
        )
    return rows
