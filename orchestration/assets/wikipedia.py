"""The Wikipedia assets: dump -> knowledge source -> passages -> provenance store, and their checks."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from assets import charts
from assets.disk_space import require_room
from assets.incremental import previous_snapshot
from assets.input_forms import FORM_NAMES
from assets.params import PASSAGE_UNIT, KnowledgeSourceParams, PassagesParams
from assets.provenance_store import build_store
from assets.snapshot_ids import check_snapshot_id
from assets.storage import SnapshotPaths, register_dump
from assets.wikipedia import checks
from assets.wikipedia.dump import (
    ABSENT,
    EMBEDDED_ORIGIN,
    SideTables,
    dump_form,
    side_tables_beside,
)
from assets.wikipedia.pages import (
    DumpPart,
    DumpPlan,
    ParseSettings,
    assemble_knowledge_source,
    export_kilt_jsonl,
    iter_pages,
    parse_dump_part,
    plan_dump_parts,
    progress_bar,
    read_parsed_part,
    replacement_problem,
)
from assets.wikipedia.passages import build_passages, build_structured_passages, structured_preview
from orchestration.assets.common import check_result, snapshot_asset, snapshot_check, snapshot_graph_asset
from orchestration.resources import (
    OWNERS,
    SNAPSHOTS,
    STEP_IO_MANAGER,
    DumpHandle,
    PipelineSettings,
    SnapshotHandle,
    column_schema,
    dagster_metadata,
    float_metadata,
    path_entries,
    recorded_dump,
    remove_step_values,
)
from orchestration.run_config import section_config, with_config

GROUP = "wikipedia"


class DumpConfig(dg.Config):
    """Dump files of the partition's snapshot; empty means the dump its knowledge source was last built
    from, or the embedded default excerpt for its snapshot id. The dump is recorded for the snapshot
    (``data/dumps/<id>.json``) only once its knowledge source is published."""

    dump_paths: list[str] = Field(default_factory=list)
    source: str = "config"  # who chose the files: cli, landing, config
    details: dict[str, str] = Field(default_factory=dict)  # e.g. the landing sensor's run key
    page_props: str | None = None  # {wiki}-{date}-page_props.sql.gz (default: found beside the dump)
    redirect_table: str | None = None  # {wiki}-{date}-redirect.sql.gz (default: found beside the dump)


class KnowledgeSourceConfig(
    section_config(
        KnowledgeSourceParams,
        "Revision choice, decoding and parse steps: ``knowledge_source`` of params.yaml (unset fields take "
        "its values; the dump is the wikipedia_dump asset's, the snapshot id the partition key).",
        exclude=("dump", "snapshot"),
    )
):
    """``knowledge_source`` of params.yaml (unset fields take its values), and ``force``."""

    force: bool = False
    """Replace a snapshot built from another dump or another as_of."""


def _chosen_dump(snapshot_id: str, config: DumpConfig, data_dir: Path) -> DumpHandle:
    """The config's files, else those the snapshot was last built from, else the embedded excerpt for
    its snapshot id. Nothing is recorded here: a failed build must not change the snapshot's dump."""
    if config.dump_paths:
        handle = DumpHandle(
            tuple(str(Path(f).resolve()) for f in config.dump_paths), config.source, dict(config.details)
        )
    else:
        handle = recorded_dump(data_dir, snapshot_id, "drop the dump into the landing folder, set dump_paths")
    # the SQL tables: as configured, else as recorded for this dump, else beside its files
    recorded, beside = SideTables.of(handle.details), side_tables_beside(handle.files)
    tables = SideTables(
        Path(config.page_props) if config.page_props else (recorded.page_props or beside.page_props),
        Path(config.redirect_table)
        if config.redirect_table
        else (recorded.redirect_table or beside.redirect_table),
    )
    return DumpHandle(handle.files, handle.source, {**handle.details, **tables.to_details()})


DUMP_TAG = "kiltpipe/dump"
"""The run tag naming the dump file a run builds (its first part)."""
TOLD_FORM = "form"
"""The dump handle's detail ``[knowledge_source.input as declared, the form told from the file]``."""
ROUTE_TAG = "kiltpipe/route"
"""The run tag naming the form of the dump a run builds from (its route): ``xml`` or ``enterprise-html``."""


def told_form(dump: DumpHandle, declared: str) -> str | None:
    """The form the ``wikipedia_dump`` asset told for ``dump`` under the same ``knowledge_source.input``
    (``declared``), else None (the plan reads the head): a handle from the dump registry, a file a user
    may have edited, is taken only as ``[input, form]`` with a form this project knows."""
    told = dump.details.get(TOLD_FORM)
    if isinstance(told, list) and len(told) == 2 and told[0] == declared and told[1] in FORM_NAMES:
        return told[1]
    return None


@snapshot_asset(
    GROUP,
    kinds={"xml", "html"},
    description="The dump of a snapshot: a MediaWiki XML dump (one file or the parts of a multi-part dump; "
    "default: the real enwiki excerpt from gensim 4.4.0; route xml) or a Wikimedia Enterprise HTML dump "
    "(route enterprise-html): its metadata says which (route). Materialize here is Dagster's "
    "jobless asset run (__ASSET_JOB); launch the build_all job for the run to be listed under it.",
)
def wikipedia_dump(
    context: dg.AssetExecutionContext, config: DumpConfig, pipeline: PipelineSettings
) -> dg.Output[DumpHandle]:
    snapshot_id = check_snapshot_id(context.partition_key, what="partition key")
    handle = _chosen_dump(snapshot_id, config, pipeline.data_path)
    missing = [f for f in handle.files if not Path(f).is_file()] + SideTables.of(handle.details).missing()
    if missing:
        raise FileNotFoundError(
            f"snapshot {snapshot_id}: dump file not found: {', '.join(missing)} (set dump_paths to where the "
            "dump is now)"
        )
    if handle.embedded:
        context.log.info(f"embedded default corpus: {EMBEDDED_ORIGIN}")
    tables = SideTables.of(handle.details)
    if tables.page_props is None:
        context.log.info(f"snapshot {snapshot_id}: Wikidata ids {ABSENT}")
    declared = pipeline.params.knowledge_source.input
    route = dump_form(Path(handle.files[0]), declared)
    # the form travels with the dump: the knowledge source's plan reads the head again only when its run
    # declares another knowledge_source.input
    handle = DumpHandle(handle.files, handle.source, {**handle.details, TOLD_FORM: [declared, route]})
    # the run says which dump and route it builds, however it was launched (the UI's runs said nothing)
    context.instance.add_run_tags(
        context.run.run_id, {DUMP_TAG: Path(handle.files[0]).name, ROUTE_TAG: route}
    )
    return dg.Output(
        handle,
        metadata={
            "snapshot_id": snapshot_id,
            "route": route,
            **path_entries("dump_path", handle.files[0]),
            "files": dg.MetadataValue.json(list(handle.files)),
            "parts": len(handle.files),
            "bytes": sum(Path(f).stat().st_size for f in handle.files),
            "source": handle.source,
            "embedded_default": handle.embedded,
            "page_props": str(tables.page_props) if tables.page_props else "absent",
            "redirect_table": str(tables.redirect_table) if tables.redirect_table else "absent",
        },
    )


def _passages_preview(paths: SnapshotPaths, rows: int = 3) -> str:
    """The first passages as the indices hold them, with their KILT coordinates (text shown as text)."""
    import polars as pl

    first = pl.scan_parquet(paths.passages_glob).head(rows).collect()
    text = charts.markdown_text
    lines = []
    for row in first.iter_rows(named=True):
        lines += [f"**{text(row['passage_id'])}** — {text(row.get('title', ''))}", ""]
        lines += [f"> {text(charts.shortened(str(row.get('text', '')), 400))}", ""]
    return "\n".join(lines)


def _page_preview(paths: SnapshotPaths, paragraphs: int = 4) -> str:
    page = next(iter_pages(paths, batch_size=1))
    text = charts.markdown_text  # page text is the dump's: shown as text, never as markup
    lines = [f"### {text(page['wikipedia_title'])} (id {text(page['wikipedia_id'])})", ""]
    for paragraph in page["text"][1 : 1 + paragraphs]:
        lines.append(f"> {text(charts.shortened(paragraph.strip(), 400))}")
        lines.append(">")
    lines.append("")
    lines.append(
        f"{len(page['text']) - 1} paragraphs, {len(page['anchors'])} anchors, categories: "
        f"{text(', '.join(page['categories'][:8]))}"
    )
    return "\n".join(lines)


@dg.op(out=dg.DynamicOut(dict, io_manager_key=STEP_IO_MANAGER))
def plan_dump_part_steps(
    context: dg.OpExecutionContext,
    config: KnowledgeSourceConfig,
    pipeline: PipelineSettings,
    dump: DumpHandle,
) -> Iterator[dg.DynamicOutput[dict]]:
    """One parse step per part file of the dump, or per group of streams of one multistream file (after
    refusing, before any work, to replace a snapshot built from another dump without ``force``)."""
    ks = with_config(pipeline.params.knowledge_source, config)
    problem = replacement_problem(
        pipeline.data_path,
        context.partition_key,
        dump.files,
        ks.as_of,
        SideTables.of(dump.details).page_props,
    )
    if problem and not config.force:
        raise ValueError(problem)
    require_room("knowledge_source", list(dump.files), pipeline.data_path)
    settings = ParseSettings(ks, html_limits=pipeline.params.limits.html)
    reuse_for = context.partition_key if pipeline.params.snapshots.incremental else None
    plan = plan_dump_parts(
        list(dump.files),
        pipeline.data_path,
        settings,
        part_bytes=ks.part_bytes,
        reuse_for=reuse_for,
        form=told_form(dump, ks.input),
    )
    resumable = sum(read_parsed_part(part) is not None for part in plan.parts)
    context.log.info(
        f"knowledge source: {len(plan.parts)} parse steps over {len(plan.dumps)} dump file(s)"
        + (f", {resumable} already parsed by an earlier run" if resumable else "")
    )
    for part in plan.parts:
        yield dg.DynamicOutput(part.to_dict(), mapping_key=f"part_{part.index:05d}")


@dg.op(out=dg.Out(dict, io_manager_key=STEP_IO_MANAGER))
def parse_dump_part_step(context: dg.OpExecutionContext, pipeline: PipelineSettings, part: dict) -> dict:
    """Parse one part of the dump into stage-1 shards and its redirects (wikitext conversion in
    ``knowledge_source.workers`` processes); a part an earlier run finished is kept."""
    dump_part = DumpPart.from_dict(part)
    bar = progress_bar([Path(dump_part.path)], dump_part.end - dump_part.start, pipeline.progress_bars)
    with bar:
        parsed = parse_dump_part(
            dump_part, workers=dump_part.settings.section.workers, bar=bar, on_progress=context.log.info
        )
    counts = parsed.report
    context.log.info(
        f"part {dump_part.index} ({Path(dump_part.path).name}, bytes {dump_part.start}-{dump_part.end}): "
        f"{counts['pages_read']} pages, {counts['articles']} articles, {counts['redirects']} redirects"
        + (" (parsed by an earlier run)" if parsed.resumed else f" in {parsed.seconds:.1f}s")
    )
    return {"part": part, "seconds": parsed.seconds, "resumed": parsed.resumed}


@dg.op
def assemble_knowledge_source_step(
    context: dg.OpExecutionContext,
    config: KnowledgeSourceConfig,
    pipeline: PipelineSettings,
    dump: DumpHandle,
    parsed: list[dict],
) -> dg.Output[SnapshotHandle]:
    """Merge the parts in page order, resolve redirects and anchors over all of them, publish, and record
    the dump the snapshot was built from."""
    parsed = sorted(parsed, key=lambda step: step["part"]["index"])
    plan = DumpPlan([Path(f) for f in dump.files], [DumpPart.from_dict(step["part"]) for step in parsed])
    report = assemble_knowledge_source(
        plan,
        pipeline.data_path,
        snapshot_id=context.partition_key,
        parse_seconds=sum(step["seconds"] for step in parsed if not step["resumed"]),
        replace=config.force,
        side_tables=SideTables.of(dump.details),
        on_progress=context.log.info,
    )
    if report.redirect_table.get("disagreements"):
        context.log.warning(
            f"redirect table vs XML: {report.redirect_table['disagreements']} disagreements "
            f"({report.redirect_table['counts']}); examples in the knowledge source's report.json"
        )
    register_dump(
        pipeline.data_path, report.snapshot_id, list(dump.files), source=dump.source, extra=dump.details
    )
    remove_step_values(pipeline.data_dir, context.run.run_id, "knowledge_source")
    remove_step_values(pipeline.data_dir, context.run.run_id, "wikipedia_dump")
    handle = SnapshotHandle(str(pipeline.data_path.resolve()), report.snapshot_id)
    context.log.info(
        f"snapshot {report.snapshot_id}: {report.articles} articles, {report.redirects} redirects from "
        f"{len(parsed)} parse steps ({report.parse_seconds:.1f}s summed) and a {report.resolve_seconds:.1f}s "
        "resolve"
    )
    return dg.Output(
        handle,
        metadata=dagster_metadata(
            {
                **report.metadata(),
                "snapshot_path": handle.paths.knowledge_source,
                "parse_steps": len(parsed),
                "parse_steps_resumed": sum(step["resumed"] for step in parsed),
            }
        )
        | {
            "preview": dg.MetadataValue.md(_page_preview(handle.paths)),
            **column_schema(handle.paths.pages_glob),
        },
    )


@dg.config_mapping
def _knowledge_source_config(config: KnowledgeSourceConfig) -> dict[str, Any]:
    """``ops: {knowledge_source: {config: ...}}`` in run config reaches the steps that plan the parts and
    publish the snapshot."""
    values = {"config": config.model_dump()}
    return {plan_dump_part_steps.name: values, assemble_knowledge_source_step.name: values}


@snapshot_graph_asset(
    GROUP,
    kinds={"parquet"},
    ins={"dump": dg.AssetIn("wikipedia_dump")},
    config=_knowledge_source_config,
    description=(
        "KILT-format pages (Parquet shards) and the redirects table of one snapshot: one executor step per "
        "dump part (or stream group of a multistream file), then redirects and anchors resolved over all."
    ),
)
def knowledge_source(dump: DumpHandle) -> SnapshotHandle:
    parts = plan_dump_part_steps(dump)
    return assemble_knowledge_source_step(dump, parts.map(parse_dump_part_step).collect())


@snapshot_asset(
    GROUP,
    kinds={"json"},
    ins={"snapshot": dg.AssetIn("knowledge_source")},
    description="The knowledge source as KILT JSONL (KILT's field names), one page per line.",
)
def knowledge_source_jsonl(snapshot: SnapshotHandle) -> dg.Output[SnapshotHandle]:
    out = snapshot.paths.kilt_jsonl
    count = export_kilt_jsonl(snapshot.paths, out, progress=False)
    return dg.Output(
        snapshot,
        metadata={**path_entries("jsonl_path", out), "pages": count, "bytes": out.stat().st_size},
    )


@snapshot_check(
    asset=knowledge_source, blocking=True, description="wikipedia_id and wikipedia_title are unique."
)
def unique_ids_and_titles(knowledge_source: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.unique_ids_and_titles(knowledge_source.paths), knowledge_source)


@snapshot_check(
    asset=knowledge_source, blocking=True, description="Every article has body text, no empty paragraph."
)
def no_empty_article(knowledge_source: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.no_empty_article(knowledge_source.paths), knowledge_source)


@snapshot_check(
    asset=knowledge_source, blocking=True, description="Every anchor span lies inside its paragraph."
)
def anchors_inside_paragraphs(knowledge_source: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.anchors_inside_paragraphs(knowledge_source.paths), knowledge_source)


@snapshot_check(
    asset=knowledge_source, blocking=True, description="Redirect targets are resolved or counted by reason."
)
def redirects_resolved_or_counted(knowledge_source: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.redirects_resolved_or_counted(knowledge_source.paths), knowledge_source)


class PassagesConfig(
    section_config(
        PassagesParams,
        "How pages are cut: ``passages`` of params.yaml (unset fields take its values).",
        exclude=("structured",),
    )
):
    """``passages`` of params.yaml (unset fields take its values), and ``incremental``."""

    incremental: bool | None = None
    """Copy the passages of unchanged pages from the previous snapshot (default ``snapshots.incremental``)."""


def _word_histogram(paths: SnapshotPaths, histogram: dict[str, int]) -> str:
    """The words-per-passage histogram as Markdown, its chart saved beside the passages."""
    png = charts.bar_chart_png(
        histogram, title=f"Words per passage ({paths.snapshot_id})", xlabel="words", ylabel="passages"
    )
    charts.save_png(png, paths.passages / "word_histogram.png")
    table = charts.markdown_table([{"words": k, "passages": v} for k, v in histogram.items()])
    return table + "\n\n" + charts.markdown_image(png, "histogram")


@dg.multi_asset(
    outs={
        "passages": dg.AssetOut(
            group_name=GROUP,
            kinds={"parquet"},
            owners=OWNERS,
            description="Passages of at most N words with KILT coordinates (Parquet shards).",
        ),
        "passage_collection": dg.AssetOut(
            group_name=GROUP,
            kinds={"json"},
            owners=OWNERS,
            description="The passages as a pyserini JsonCollection.",
        ),
        "passage_tsv": dg.AssetOut(
            group_name=GROUP,
            kinds={"csv"},
            owners=OWNERS,
            description="The passages as a DPR TSV (id, text, title).",
        ),
    },
    ins={"snapshot": dg.AssetIn("knowledge_source")},
    partitions_def=SNAPSHOTS,
)
def passages(
    context: dg.AssetExecutionContext,
    config: PassagesConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
):
    paths = snapshot.paths
    require_room("passages", [paths.knowledge_source], paths.root)
    cut = with_config(pipeline.params.passages, config)
    report = build_passages(
        paths,
        cut,
        progress=pipeline.progress_bars,
        reuse_from=previous_snapshot(pipeline.data_path, paths.snapshot_id)
        if pipeline.incremental(config.incremental)
        else None,
    )
    if report.reuse_skipped:
        context.log.warning(f"passages of the previous snapshot not reused: {report.reuse_skipped}")
    context.log.info(f"{report.passages} passages from {report.pages} pages in {report.seconds:.1f}s")
    yield dg.Output(
        snapshot,
        output_name="passages",
        metadata=dagster_metadata({**report.metadata(), "passages_path": paths.passages_parquet})
        | {
            "word_histogram": dg.MetadataValue.md(_word_histogram(paths, report.word_histogram)),
            "preview": dg.MetadataValue.md(_passages_preview(paths)),
            **column_schema(paths.passages_glob),
        },
    )
    yield from _collection_and_tsv(snapshot, report)


def _collection_and_tsv(snapshot: SnapshotHandle, report: Any) -> list[dg.Output]:
    """The passages' other two outputs: the pyserini collection and the DPR TSV, with their sizes."""
    paths, count = snapshot.paths, report.passages
    collection = path_entries("collection_path", paths.passages_collection)
    tsv = path_entries("tsv_path", paths.passages_tsv)
    return [
        dg.Output(
            snapshot,
            output_name="passage_collection",
            metadata={**collection, "bytes": report.bytes["collection"], "documents": count},
        ),
        dg.Output(
            snapshot, output_name="passage_tsv", metadata={**tsv, "bytes": report.bytes["tsv"], "rows": count}
        ),
    ]


StructuredPassagesConfig = section_config(
    PassagesParams,
    "Tables and infoboxes as passages: ``passages`` of params.yaml (unset fields take its values; "
    "``structured: false`` builds nothing, and the asset says so).",
    exclude=("mode", "workers"),
)


@snapshot_asset(
    GROUP,
    kinds={"parquet"},
    ins={"snapshot": dg.AssetIn("knowledge_source")},
    description="Every wikitable and infobox as passages of at most N words, with their wikitext offsets "
    "(a collection apart from the text passages; passages.structured).",
)
def structured_passages(
    context: dg.AssetExecutionContext,
    config: StructuredPassagesConfig,
    pipeline: PipelineSettings,
    snapshot: SnapshotHandle,
) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    cut = with_config(pipeline.params.passages, config)
    if not cut.structured:
        context.log.info("passages.structured is false: no structured passages built")
        return dg.Output(snapshot, metadata={"structured": False})
    require_room("structured_passages", [paths.knowledge_source], paths.root)
    report = build_structured_passages(
        paths,
        paths.structured_passages,
        cut,
        limits=pipeline.params.limits.structures,
        max_record_bytes=pipeline.params.knowledge_source.max_record_bytes,
        progress=context.log.info,
    )
    if report.failed_pages:
        context.log.warning(
            f"{report.failed_pages} pages' tables/infoboxes skipped (named in "
            f"{paths.structured_passages / 'report.json'})"
        )
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("structured_path", paths.structured_parquet),
            "pages_with_structures": report.pages_with_structures,
            "tables": report.tables,
            "infoboxes": report.infoboxes,
            "table_passages": report.passages.get("table", 0),
            "infobox_passages": report.passages.get("infobox", 0),
            "unclosed_tables": report.unclosed_tables,
            "skipped_tables": report.skipped_tables,
            "skipped_values": report.skipped_values,
            "skipped_structures": report.skipped_structures,
            "failed_pages": report.failed_pages,
            "seconds": float_metadata(report.seconds),
            **column_schema(str(paths.structured_parquet / "*.parquet")),
            "preview": dg.MetadataValue.md(structured_preview(paths.structured_parquet)),
        },
    )


def _passage_params(handle: SnapshotHandle) -> dict:
    return json.loads(handle.paths.passages_report.read_text())


@snapshot_check(asset=dg.AssetKey("passages"), blocking=True, description="No passage is empty.")
def no_empty_passage(passages: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.no_empty_passage(passages.paths), passages)


@snapshot_check(asset=dg.AssetKey("passages"), blocking=True, description="No passage exceeds N words.")
def no_passage_over_limit(passages: SnapshotHandle) -> dg.AssetCheckResult:
    built = _passage_params(passages)
    return check_result(
        checks.no_passage_over_limit(passages.paths, built["max_words"], built.get("unit", PASSAGE_UNIT)),
        passages,
    )


@snapshot_check(asset=dg.AssetKey("passages"), blocking=True, description="Passage ids are unique.")
def passage_ids_unique(passages: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(checks.passage_ids_unique(passages.paths), passages)


@snapshot_check(
    asset=dg.AssetKey("passages"), blocking=True, description="Every non-empty page has a passage."
)
def every_page_has_passage(passages: SnapshotHandle) -> dg.AssetCheckResult:
    return check_result(
        checks.every_page_has_passage(passages.paths, _passage_params(passages)["mode"]), passages
    )


@snapshot_asset(
    GROUP,
    kinds={"duckdb"},
    ins={"snapshot": dg.AssetIn("passages")},
    deps=["structured_passages", "kb_facts"],
    description="provenance.duckdb: indexed pages, paragraphs, passages (text, tables, infoboxes, KB facts), "
    "redirects and the KB's entities and statements for lookups.",
)
def provenance_store(snapshot: SnapshotHandle) -> dg.Output[SnapshotHandle]:
    paths = snapshot.paths
    require_room("provenance_store", [paths.knowledge_source, paths.passages_parquet], paths.root)
    report = build_store(paths)
    return dg.Output(
        snapshot,
        metadata={
            **path_entries("store_path", snapshot.paths.provenance_store),
            "pages": report.pages,
            "paragraphs": report.paragraphs - report.pages,  # as the knowledge source counts them
            "paragraph_rows_with_titles": report.paragraphs,  # + each page's title, KILT's paragraph 0
            "passages": report.passages,
            **report.collections,
            "redirects": report.redirects,
            "bytes": report.bytes,
            "seconds": float_metadata(report.seconds),
        },
    )


WIKIPEDIA_ASSETS = [
    wikipedia_dump,
    knowledge_source,
    knowledge_source_jsonl,
    passages,
    structured_passages,
    provenance_store,
]
WIKIPEDIA_CHECKS = [
    unique_ids_and_titles,
    no_empty_article,
    anchors_inside_paragraphs,
    redirects_resolved_or_counted,
    no_empty_passage,
    no_passage_over_limit,
    passage_ids_unique,
    every_page_has_passage,
]
