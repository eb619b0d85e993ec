"""The indices of each collection other than the text passages (the structured one: tables and infoboxes):
one asset per collection (``structured_indexes``), beside the text passages' ``bm25_index`` and
``dense_index``, and its blocking check; both made from the collection registry."""

from typing import Any

import dagster as dg

from assets.disk_space import require_room
from assets.incremental import previous_snapshot
from assets.indexes import (
    Collection,
    IndexSettings,
    build_collection_indexes,
    collection_count,
    collection_view,
    get_searcher_type,
    indexed_collections,
    searcher_types,
)
from orchestration.assets.common import snapshot_asset, snapshot_check
from orchestration.resources import (
    PipelineSettings,
    SnapshotHandle,
    dagster_metadata,
    path_entries,
)

GROUP = "indexes"


class CollectionIndexesConfig(dg.Config):
    """The indices of ``indexes.build``, each as its section of ``indexes`` says."""

    incremental: bool | None = None
    """Reuse the previous snapshot's vectors of the collection's unchanged passages (default
    ``snapshots.incremental``)."""


def collection_indexes_asset(collection: Collection) -> dg.AssetsDefinition:
    """The asset that builds ``collection``'s indices with each index type's ``build``."""

    def reusable(paths: Any) -> bool:  # an earlier snapshot with work of this collection a build reuses
        view = collection_view(paths, collection.name)
        return any(kind.reusable(view) for kind in searcher_types() if kind.reusable)

    @snapshot_asset(
        GROUP,
        name=collection.index_asset,
        kinds={"faiss", "lucene"},
        ins={"snapshot": dg.AssetIn(collection.asset)},
        description=f"The indices of the {collection.name} collection ({collection.description}), under "
        f"indexes/{collection.indexes}/: searched alone or with the text passages' (collection "
        f"{collection.name} or both).",
    )
    def collection_indexes(
        context: dg.AssetExecutionContext,
        config: CollectionIndexesConfig,
        pipeline: PipelineSettings,
        snapshot: SnapshotHandle,
    ) -> dg.Output[SnapshotHandle]:
        paths = snapshot.paths
        view = collection_view(paths, collection.name)
        require_room(collection.index_asset, [view.passages_collection], paths.root)  # none: 0 bytes
        previous = None
        if pipeline.incremental(config.incremental):  # the newest earlier snapshot with reusable work
            previous = previous_snapshot(pipeline.data_path, paths.snapshot_id, has=reusable)
        report = build_collection_indexes(
            paths,
            collection.name,
            IndexSettings.from_params(pipeline.params.indexes),
            pipeline.params.indexes.build,
            reuse_from=previous,
            progress=pipeline.progress_bars,
            log=context.log.info,
        )
        if report.skipped:
            context.log.info(f"{collection.index_asset} of {paths.snapshot_id}: none ({report.skipped})")
        built = {name: get_searcher_type(name).index_dir(view) for name in report.built}
        return dg.Output(
            snapshot,
            metadata={
                **dagster_metadata(report.metadata()),
                **{
                    key: value
                    for name, path in built.items()
                    for key, value in path_entries(f"{name}_path", path).items()
                },
            },
        )

    return collection_indexes


def collection_index_counts(collection: Collection, indexes: dg.AssetsDefinition) -> Any:
    """The blocking check of ``indexes``: each index holds one document (vector) per passage."""

    @snapshot_check(
        asset=indexes,
        name=f"{collection.name}_index_counts",
        blocking=True,
        description=f"Each {collection.name} index holds exactly one document (vector) per {collection.name} "
        "passage.",
    )
    def index_counts(indexes: SnapshotHandle) -> dg.AssetCheckResult:
        paths = indexes.paths
        view = collection_view(paths, collection.name)
        expected = collection_count(paths, collection.name) or 0
        counts = {  # what each index holds (Lucene's, FAISS's own count), not what the build reported
            kind.name: kind.documents(kind.index_dir(view))
            for kind in searcher_types()
            if kind.documents and kind.index_dir and kind.index_dir(view).is_dir()
        }
        wrong = {name: count for name, count in counts.items() if count != expected}
        return dg.AssetCheckResult(
            passed=not wrong,
            severity=dg.AssetCheckSeverity.ERROR,
            description=(
                ", ".join(f"{name}: {count:,}" for name, count in counts.items())
                or f"no {collection.name} index"
            )
            + f" for {expected:,} {collection.name} passages",
            metadata={
                f"{collection.name}_passages": expected,
                **{f"{name}_documents": count for name, count in counts.items()},
            },
        )

    return index_counts


COLLECTION_INDEX_ASSETS = [collection_indexes_asset(collection) for collection in indexed_collections()]
COLLECTION_INDEX_CHECKS = [
    collection_index_counts(collection, indexes)
    for collection, indexes in zip(indexed_collections(), COLLECTION_INDEX_ASSETS, strict=True)
]
