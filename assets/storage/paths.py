"""Where a snapshot's artifacts live, and which snapshot a lookup reads: paths and snapshot resolution."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from assets.files import temp_sibling
from assets.snapshot_ids import check_snapshot_id, is_snapshot_id, snapshot_order_key
from assets.storage.builds import (
    WORK_DIR,
    BuildLock,
    build_state,
    building,
    building_file,
    builds_dir,
    new_owner,
    published_root,
    staging_root,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotPaths:
    """Where every artifact of one snapshot lives: ``<data_dir>/snapshots/<snapshot_id>/`` (the published
    version readers open), or the staging folder of a build under way (``version_root``, see
    :func:`build_paths`)."""

    data_dir: Path
    snapshot_id: str
    version_root: Path | None = None

    def __post_init__(self) -> None:
        check_snapshot_id(self.snapshot_id)  # a plain file name: never a path outside data_dir

    @property
    def root(self) -> Path:
        if self.version_root is not None:
            return self.version_root
        return published_root(self.data_dir, self.snapshot_id)

    @property
    def knowledge_source(self) -> Path:
        return self.root / "knowledge_source"

    @property
    def pages_dir(self) -> Path:
        return self.knowledge_source / "pages"

    @property
    def redirects_file(self) -> Path:
        return self.knowledge_source / "redirects.parquet"

    @property
    def report_file(self) -> Path:
        return self.knowledge_source / "report.json"

    @property
    def manifest_file(self) -> Path:
        return self.knowledge_source / "manifest.json"

    @property
    def pages_glob(self) -> str:
        return str(self.pages_dir / "*.parquet")

    @property
    def passages(self) -> Path:
        return self.root / "passages"

    @property
    def passages_parquet(self) -> Path:
        return self.passages / "parquet"

    @property
    def passages_glob(self) -> str:
        return str(self.passages_parquet / "*.parquet")

    @property
    def passages_collection(self) -> Path:
        """pyserini JsonCollection: ``{"id", "contents"}`` JSONL files."""
        return self.passages / "collection"

    @property
    def passages_tsv(self) -> Path:
        """DPR format: ``id<TAB>text<TAB>title`` with a header line."""
        return self.passages / "passages.tsv"

    @property
    def passages_report(self) -> Path:
        return self.passages / "report.json"

    @property
    def structured_passages(self) -> Path:
        """Tables and infoboxes as passages (``parquet/``, ``collection/``, ``report.json``)."""
        return self.root / "structured_passages"

    @property
    def structured_parquet(self) -> Path:
        return self.structured_passages / "parquet"

    @property
    def wikidata(self) -> Path:
        """Wikidata aligned to the snapshot: ``entities/``, ``statements/`` (Parquet), ``graph/`` (the
        statements' adjacency), ``mentions/`` (the entity linker's dictionary), ``report.json``."""
        return self.root / "wikidata"

    @property
    def kb_facts(self) -> Path:
        """Wikidata statements written as passages, per entity (``parquet/``, ``collection/``,
        ``report.json``): the ``kb`` collection."""
        return self.root / "kb_facts"

    @property
    def kb_paths(self) -> Path:
        """The KB-path oracle of the remapped datasets that name answer entities (``<dataset>-<split>.jsonl``,
        ``report.json``)."""
        return self.root / "kb_paths"

    @property
    def qa_pairs(self) -> Path:
        """The QA-pair knowledge base: its stored questions as a collection (``parquet/`` with their answers
        and provenance, ``collection/``, ``report.json``): the ``qa`` collection."""
        return self.root / "qa_pairs"

    @property
    def qa_lookup(self) -> Path:
        """The QA-pair KB's stored questions by id and by normalised text (``qa_pairs.sqlite``, built with
        ``qa_pairs``; not versioned: ``kiltpipe restore-stores`` rebuilds it)."""
        return self.root / "qa_pairs.sqlite"

    @property
    def passage_rows(self) -> Path:
        """Every passage by its id for point lookups (``passages.sqlite``, built with the provenance
        store)."""
        return self.root / "passages.sqlite"

    @property
    def provenance_store(self) -> Path:
        return self.root / "provenance.duckdb"

    @property
    def datasets(self) -> Path:
        """Remapped datasets: ``<dataset>-<split>-kilt.jsonl`` and ``parquet/``."""
        return self.root / "datasets"

    @property
    def datasets_db(self) -> Path:
        """Dataset tables (records, outputs, provenance, covering passages), attached to the store."""
        return self.root / "datasets.duckdb"

    @property
    def indexes(self) -> Path:
        return self.root / "indexes"

    @property
    def bm25_index(self) -> Path:
        """Lucene index of the passages (Anserini ``IndexCollection``; docids = passage ids)."""
        return self.indexes / "bm25"

    @property
    def dense_embeddings(self) -> Path:
        """Passage embeddings, one ``.npy`` shard per ``shard_size`` passages (resumable)."""
        return self.indexes / "dense" / "embeddings"

    @property
    def dense_index(self) -> Path:
        """FAISS index with its row -> passage id mapping."""
        return self.indexes / "dense" / "faiss"

    @property
    def kilt_jsonl(self) -> Path:
        return self.root / "exports" / "kilt_knowledgesource.jsonl"


class NotInBuild(RuntimeError):
    """An artifact was about to be written outside a build of its snapshot."""


def build_paths(data_dir: Path | str, snapshot_id: str) -> SnapshotPaths:
    """Where the build of ``snapshot_id`` under way writes: its staging folder (``assets.storage.builds``).
    Raises :class:`NotInBuild` when no build holds the snapshot's lock: only a build writes artifacts."""
    data_dir = Path(data_dir)
    if (
        not building_file(data_dir, snapshot_id).is_file()
        or BuildLock(data_dir, snapshot_id).holder() is None
    ):
        raise NotInBuild(
            f"snapshot {snapshot_id}: no build holds its lock, and only a build writes its artifacts; build "
            "it with `kiltpipe build` or a Dagster run"
        )
    return SnapshotPaths(data_dir, snapshot_id, staging_root(data_dir, snapshot_id))


def current_paths(data_dir: Path | str, snapshot_id: str) -> SnapshotPaths:
    """The snapshot as a writer sees it: the staging folder of the build under way, else the published
    version."""
    try:
        return build_paths(data_dir, snapshot_id)
    except NotInBuild:
        return SnapshotPaths(Path(data_dir), snapshot_id)


@contextlib.contextmanager
def snapshot_writer(data_dir: Path | str, snapshot_id: str, asset: str) -> Iterator[SnapshotPaths]:
    """Where to publish ``asset`` of a snapshot: the staging folder of the build under way; outside a build
    (a library call: tests, benchmarks, a notebook) a build of its own around the write, which takes the
    lock, stages, and swaps the result in as ``kiltpipe build`` does."""
    try:
        yield build_paths(data_dir, snapshot_id)
        return
    except NotInBuild:
        pass
    owner = new_owner(command=f"{asset} (library call)")
    with building(data_dir, snapshot_id, owner) as session:
        yield SnapshotPaths(Path(data_dir), snapshot_id, session.root)
        session.materialized(asset)


def work_dir(data_dir: Path | str, snapshot_id: str) -> Path:
    """A fresh scratch folder for a build step of ``snapshot_id`` on the data dir's filesystem (so a
    rename publishes what it holds), outside every snapshot folder."""
    return temp_sibling(Path(data_dir) / "snapshots" / WORK_DIR / check_snapshot_id(snapshot_id))


def builds_under_way(data_dir: Path) -> list[str]:
    """Ids of the snapshots with a build under way or killed before it finished."""
    found = [p.name.removesuffix(".building.json") for p in builds_dir(data_dir).glob("*.building.json")]
    return sorted((s for s in found if is_snapshot_id(s)), key=snapshot_order_key)


def list_snapshots(data_dir: Path) -> list[str]:
    """Ids of the snapshots that have a knowledge source, oldest dump first (newest last), whether or not
    their last build completed (:func:`complete_snapshots` has only those that did)."""
    base = data_dir / "snapshots"
    if not base.is_dir():
        return []
    found = [
        child.name
        for child in base.iterdir()
        if child.is_dir()
        and is_snapshot_id(child.name)  # not .parse, .tmp-..., or a folder someone else put there
        and (child / "knowledge_source" / "manifest.json").is_file()
    ]
    return sorted(found, key=snapshot_order_key)


def complete_snapshots(data_dir: Path) -> list[str]:
    """:func:`list_snapshots` whose last build completed (``assets.storage.builds``), newest last."""
    return [s for s in list_snapshots(data_dir) if build_state(data_dir, s).complete]


def resolve_snapshot(data_dir: Path, snapshot_id: str | None) -> SnapshotPaths:
    """The named snapshot, or the newest one whose build completed; a clear error when there is none.

    A newer snapshot whose build failed, was interrupted or is still running is never the default: it is
    named in a warning (and in the error when no snapshot is complete). Naming an incomplete snapshot
    explicitly works, with a warning saying why it is incomplete.
    """
    snapshots = list_snapshots(data_dir)
    if snapshot_id is None:
        if not snapshots:
            underway = "; ".join(build_state(data_dir, s).describe() for s in builds_under_way(data_dir))
            raise LookupError(
                f"no snapshot is built under {data_dir / 'snapshots'}"
                + (f" ({underway})" if underway else "; run `kiltpipe build`")
            )
        states = [build_state(data_dir, s) for s in snapshots]
        complete = [state.snapshot_id for state in states if state.complete]
        if not complete:
            raise LookupError(
                f"no snapshot under {data_dir / 'snapshots'} is complete: "
                + "; ".join(state.describe() for state in states)
            )
        newest = snapshot_order_key(complete[-1])
        for state in states:
            if not state.complete and snapshot_order_key(state.snapshot_id) > newest:
                log.warning(f"{state.describe()}; using {complete[-1]}")
        return SnapshotPaths(data_dir, complete[-1])
    check_snapshot_id(snapshot_id)
    if snapshot_id not in snapshots:
        known = ", ".join(snapshots) or "none"
        underway = build_state(data_dir, snapshot_id) if snapshot_id in builds_under_way(data_dir) else None
        why = f": {underway.reason}" if underway is not None else ""
        raise LookupError(f"snapshot {snapshot_id!r} is not built under {data_dir}{why} (built: {known})")
    state = build_state(data_dir, snapshot_id)
    if not state.complete:
        log.warning(state.describe())
    return SnapshotPaths(data_dir, snapshot_id)
