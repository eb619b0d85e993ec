"""The knowledge base beside the text: Wikidata's entities and statements aligned to the snapshot (one
read of the entity dump writes both, with the KB graph and the entity linker's mentions), their facts as
the ``kb`` collection's passages, and the checks of both. The ``kb`` collection's indices are
``kb_indexes`` (:mod:`orchestration.assets.collection_indexes`)."""

from pathlib import Path
from typing import Any

import dagster as dg

from assets.datasets import built_from_embedded_excerpt
from assets.disk_space import require_room
from assets.limits import DEFAULT_HOPS
from assets.params import WikidataParams, landing_dir
from assets.storage import SnapshotPaths
from assets.wikidata import (
    KnowledgeBase,
    build_kb_facts,
    build_kb_paths,
    build_wikidata,
    embedded_entity_files,
    kb_checks,
)
from assets.wikipedia.fetch import ENTITY_WIKI, landed_entity_dumps
from orchestration.assets.common import check_result, snapshot_asset, snapshot_check, snapshot_multi_asset
from orchestration.resources import (
    OWNERS,
    PipelineSettings,
    SnapshotHandle,
    column_schema,
    dagster_metadata,
    float_metadata,
    path_entries,
)
from orchestration.run_config import section_config, with_config

GROUP = "wikidata"
LANDING = "landing"
"""The ``wikidata.files`` entry that stands for the newest entity dump fetched into the landing folder."""

WikidataConfig = section_config(
    WikidataParams,
    "The entity dump and what is kept of it: ``wikidata`` of params.yaml (unset fields take its values; "
    "no files: an empty KB that says so).",
)


def entity_files(
    names: tuple[str, ...] | None, pipeline: PipelineSettings, paths: SnapshotPaths
) -> list[Path]:
    """``wikidata.files`` as paths: relative ones from params.yaml's folder; ``landing``: the newest entity
    dump ``kiltpipe fetch --wikidata`` published in the landing folder; None: the embedded entities for the
    embedded default snapshot, none for another. A file that does not exist is an error naming it."""
    if names is None:
        return embedded_entity_files() if built_from_embedded_excerpt(paths) else []
    files = []
    for name in names:
        if name != LANDING:
            files.append(pipeline.params_relative(name))
            continue
        folder = landing_dir() / ENTITY_WIKI
        landed = landed_entity_dumps(folder)
        if not landed:
            raise FileNotFoundError(
                f"wikidata.files names the landing folder, and {folder.absolute()} holds no fetched entity "
                "dump: run `kiltpipe fetch --wikidata` first"
            )
        files.append(landed[0])
    missing = [str(f.absolute()) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(
            f"wikidata.files names {', '.join(missing)}, which do not exist; fetch the entity dump "
            "(kiltpipe fetch --wikidata) or fix params.yaml"
        )
    return files


@snapshot_multi_asset(
    GROUP,
    outs={
        "wikidata_entities": dg.AssetOut(
            kinds={"parquet"},
            owners=OWNERS,
            description="Wikidata's entities of the snapshot: label, description, aliases (its language and "
            "English), the sitelink and the page it is in the snapshot, for the entities with a sitelink to "
            "its wiki and those their statements name (wikidata.scope); with the entity linker's mentions.",
        ),
        "wikidata_statements": dg.AssetOut(
            kinds={"parquet"},
            owners=OWNERS,
            description="Their statements, typed (entity, time with precision, quantity with unit, string, "
            "text, coordinate), with rank, statement id and qualifiers; deprecated ones dropped; the graph "
            "of those between entities for KB paths.",
        ),
    },
    ins={"snapshot": dg.AssetIn("knowledge_source")},
)
def wikidata_tables(
    context: dg.AssetExecutionContext,
    config: WikidataConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
):
    paths = snapshot.paths
    settings = with_config(pipeline.params.wikidata, config)
    files = entity_files(settings.files, pipeline, paths)
    require_room("wikidata", files, paths.root)
    labels = (
        None if settings.label_files is None else [pipeline.params_relative(n) for n in settings.label_files]
    )
    report = build_wikidata(
        paths,
        files,
        settings,
        limits=pipeline.params.limits.wikidata,
        label_files=labels,
        progress=context.log.info,
    )
    if not files:
        context.log.info(
            "no entity files (wikidata.files; the embedded ones serve the embedded default only): an empty "
            "KB, the mentions from the snapshot alone"
        )
    summary = dagster_metadata(
        {
            "files": len(files),
            "entities_read": report.entities_read,
            "skipped_lines": report.read.get("skipped", 0),
            "seconds": report.seconds,
        }
    )
    yield dg.Output(
        snapshot, output_name="wikidata_entities", metadata=_entities_metadata(paths, report, summary)
    )
    yield dg.Output(
        snapshot, output_name="wikidata_statements", metadata=_statements_metadata(paths, report, summary)
    )


def _entities_metadata(paths: Any, report: Any, summary: dict[str, Any]) -> dict[str, Any]:
    return {
        **summary,
        **path_entries("entities_path", paths.wikidata / "entities"),
        **path_entries("mentions_path", paths.wikidata / "mentions.parquet"),
        "subjects": report.subjects,
        "linked_to_pages": report.linked_to_pages,
        "objects": report.objects,
        "objects_missing": report.objects_missing,
        "mentions": report.mentions,
        **column_schema(str(paths.wikidata / "entities" / "*.parquet")),
    }


def _statements_metadata(paths: Any, report: Any, summary: dict[str, Any]) -> dict[str, Any]:
    return {
        **summary,
        **path_entries("statements_path", paths.wikidata / "statements"),
        **path_entries("graph_path", paths.wikidata / "graph"),
        "statements": report.statements,
        "deprecated": report.deprecated,
        "skipped_snaks": sum(report.skipped_snaks.values()),
        "statements_over_limit": report.statements_over_limit,
        "edges": report.edges,
        "seconds": float_metadata(report.seconds),
        **column_schema(str(paths.wikidata / "statements" / "*.parquet")),
    }


@snapshot_asset(
    GROUP,
    kinds={"parquet"},
    ins={"snapshot": dg.AssetIn("wikidata_statements")},
    description="The kb collection: each entity's statements written as text, in passages of at most N "
    "words that cite the entity, its page, the properties and statement ids (searched with --collection kb).",
)
def kb_facts(
    context: dg.AssetExecutionContext, pipeline: PipelineSettings, snapshot: SnapshotHandle
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    report = build_kb_facts(
        paths, pipeline.params.passages, pipeline.params.wikidata, progress=context.log.info
    )
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("kb_facts_path", paths.kb_facts / "parquet"),
            "entities": report.entities,
            "passages": report.passages,
            "statements": report.statements,
            "not_written": report.not_written,
            "unlabelled": len(report.unlabelled),
            "seconds": float_metadata(report.seconds),
        },
    )


class KbPathsConfig(dg.Config):
    """How far the oracle searches."""

    max_hops: int = DEFAULT_HOPS
    """Statements per path, at most (limits.wikidata.max_hops bounds it)."""


@snapshot_asset(
    GROUP,
    kinds={"json"},
    ins={"snapshot": dg.AssetIn("remapped_datasets")},
    deps=["wikidata_statements"],
    description="The KB-path oracle: for each remapped record that names answer entities (MKQA, Mintaka), "
    "its question entities (named or linked), its answer entities and every shortest path of statements "
    "between them, with the share of records with a path and the hops histogram.",
)
def kb_paths(
    context: dg.AssetExecutionContext,
    config: KbPathsConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    with KnowledgeBase(paths, limits=pipeline.params.limits.wikidata) as kb:
        report = build_kb_paths(
            paths,
            kb,
            config.max_hops,
            progress=context.log.info,
            max_line_bytes=pipeline.params.limits.input.max_line_bytes,
        )
    named = {name: split for name, split in report.splits.items() if split.with_answer_entities}
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("kb_paths_path", paths.kb_paths),
            "splits_with_answer_entities": len(named),
            "records_with_answer_entities": sum(s.with_answer_entities for s in named.values()),
            "records_with_paths": sum(s.with_path for s in named.values()),
            "refused_searches": sum(s.refused_searches for s in named.values()),
            "seconds": float_metadata(report.seconds),
        },
    )


@snapshot_check(
    asset=dg.AssetKey("wikidata_statements"),
    blocking=True,
    description="Every statement's subject is an entity of the table, every statement id is unique, and no "
    "deprecated statement is kept.",
)
def statements_consistent(wikidata_statements: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(kb_checks.statements_consistent(wikidata_statements.paths), wikidata_statements)


@snapshot_check(
    asset=dg.AssetKey("kb_facts"),
    blocking=True,
    description="No kb passage is empty or over passages.max_words words, and each cites statements that "
    "exist.",
)
def facts_consistent(kb_facts: SnapshotHandle, pipeline: PipelineSettings) -> dg.AssetCheckResult:
    return check_result(
        kb_checks.facts_consistent(kb_facts.paths, pipeline.params.passages.max_words), kb_facts
    )


WIKIDATA_ASSETS = [wikidata_tables, kb_facts, kb_paths]
WIKIDATA_CHECKS = [statements_consistent, facts_consistent]
