"""``kiltpipe build``: materialize a snapshot's assets through the Dagster definitions, under the snapshot's
build lock, recorded as the UI records the runs it launches (``orchestration.launch``)."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from assets import params
from assets.snapshot_ids import check_snapshot_id
from assets.storage import LOCK_TAG, SnapshotBusy, building, is_published, new_owner
from orchestration.cli.arguments import non_negative_int, positive_int
from orchestration.cli.common import Verb, data_dir_of, emit, fail
from orchestration.dagster_home import claim_home, instance_lock

if TYPE_CHECKING:
    from orchestration.executors import ExecutorChoice

__all__ = ["VERBS", "cmd_build", "executor_choice"]


def _dagster_home() -> Path:
    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(Path(".dagster_home").resolve())
    return Path(os.environ["DAGSTER_HOME"])


def _other_data_dir(data_dir: Path) -> str | None:
    """Why a build of ``data_dir`` may not record its runs in this ``DAGSTER_HOME`` (None: it may; see
    :mod:`orchestration.dagster_home`)."""
    return claim_home(_dagster_home(), data_dir)


def _dagster_instance():
    from dagster import DagsterInstance

    from orchestration.run_launcher import prepare_dagster_home

    home = _dagster_home()
    with instance_lock(home):
        prepare_dagster_home(home)
        instance = DagsterInstance.get()
        instance.get_runs(limit=1)  # creates (or migrates) the run and event storage now, under the lock
    return instance


def _add_partition(instance: Any, snapshot: str) -> bool:
    """Add ``snapshot``'s partition unless it exists; whether this call added it."""
    from orchestration.resources import SNAPSHOTS

    with instance_lock(Path(os.environ["DAGSTER_HOME"])):
        if instance.has_dynamic_partition(SNAPSHOTS.name, snapshot):
            return False
        instance.add_dynamic_partitions(SNAPSHOTS.name, [snapshot])
        return True


def _build_snapshot(
    args: argparse.Namespace, *, as_of: str | None, invalid_bytes: str
) -> tuple[str, list[str] | None]:
    """The partition to build and, when a dump is given (``--dump`` or ``knowledge_source.dump``), its
    files; the id is checked, and derived from the dump (read with the build's settings) when not given."""
    from assets.wikipedia.dump import EMBEDDED_SNAPSHOT_ID, snapshot_id_of_dump

    ks = params.load_params().knowledge_source
    snapshot = args.snapshot if args.snapshot is not None else ks.snapshot
    if snapshot is not None:
        check_snapshot_id(
            snapshot, what="--snapshot" if args.snapshot is not None else "knowledge_source.snapshot"
        )
    dumps = args.dump or ([ks.dump] if ks.dump else [])
    if dumps:
        files = [Path(d) for d in dumps]
        for path in files:
            if not path.is_file():
                raise FileNotFoundError(f"dump not found: {path} (give the path of a MediaWiki XML dump)")
        if args.snapshot is None:  # the id of the dump, not knowledge_source.snapshot (another dump's)
            snapshot = snapshot_id_of_dump(
                files,
                as_of=as_of,
                invalid_bytes=invalid_bytes,
                max_record_bytes=ks.max_record_bytes,
                input_form=ks.input,
            )
        return snapshot, [str(f.resolve()) for f in files]
    return snapshot or EMBEDDED_SNAPSHOT_ID, None


def executor_choice(args: argparse.Namespace) -> ExecutorChoice:
    """``--executor`` with its Dask options; without it ``dask`` when a Dask option is given, else
    ``$KILT_EXECUTOR`` (with ``$KILT_DASK_*``) when set, else ``in_process`` (one process, as always)."""
    from orchestration.executors import EXECUTOR_ENV, ExecutorChoice

    dask_options = args.dask_scheduler is not None or args.dask_workers is not None
    kind = args.executor or ("dask" if dask_options else None)
    if kind is None:
        return ExecutorChoice.from_env() if os.environ.get(EXECUTOR_ENV) else ExecutorChoice("in_process")
    if kind != "dask" and dask_options:
        raise ValueError(f"--dask-scheduler and --dask-workers need --executor dask, not --executor {kind}")
    if kind == "dask" and not dask_options:  # the cluster of $KILT_DASK_SCHEDULER or $KILT_DASK_WORKERS
        return ExecutorChoice.from_env({**os.environ, EXECUTOR_ENV: "dask"})
    return ExecutorChoice(kind, scheduler=args.dask_scheduler, workers=args.dask_workers)


def _selection(args: argparse.Namespace, defs: Any, job: Any, dump_given: bool) -> list[Any] | None:
    """The asset keys of ``--select`` (None: every asset of ``job``, ``build_all``), widened to whole
    multi-assets (``passages`` writes its collection and TSV too) and, when a dump is given, to the
    ``wikipedia_dump`` step that reads it. Selecting an asset the job does not build is an error."""
    from dagster import AssetKey, AssetSelection

    if not args.select:
        return None
    graph = defs.resolve_asset_graph()
    keys = set(AssetSelection.from_string(args.select).required_multi_asset_neighbors().resolve(graph))
    if not keys:
        raise ValueError(f"--select {args.select!r} matches no asset")
    refused = sorted(key.to_user_string() for key in keys - set(job.asset_layer.executable_asset_keys))
    if refused:
        raise ValueError(
            f"--select {args.select!r} includes {', '.join(refused)}, which {job.name} does not build: "
            f"an index indexes.build ({params.params_path()}) leaves out, or an export (kiltpipe export-hf)"
        )
    if dump_given:
        if AssetKey("knowledge_source") not in keys:
            raise ValueError(
                f"--dump is read by the knowledge_source asset, which --select {args.select!r} does not "
                "build; add it (e.g. '+key:knowledge_source') or leave --dump out"
            )
        keys.add(AssetKey("wikipedia_dump"))
    return sorted(keys)


def _existing(path: str | None, what: str) -> str | None:
    """``path`` made absolute, or a FileNotFoundError naming ``what`` when it is not a file."""
    if path is None:
        return None
    if not Path(path).is_file():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", path)
    return str(Path(path).resolve())


def _make_landing_folder() -> None:
    """The folder the landing sensor watches, made now: the sensor is on, and a user who opens the UI after
    a build finds the folder it names (a build still runs when it cannot be made)."""
    folder = params.landing_dir().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"kiltpipe: cannot make the landing folder {folder}: {error.strerror}", file=sys.stderr)


def _build_options(parser: argparse.ArgumentParser) -> None:
    from assets.wikipedia.articles import TEXT_STYLES

    parser.add_argument(
        "--dump",
        nargs="+",
        metavar="FILE",
        help="MediaWiki XML dump (bz2, gz, xz or plain), or its part files in order; "
        "default: the dump registered for --snapshot, or the embedded excerpt",
    )
    parser.add_argument(
        "--snapshot",
        help="snapshot id = Dagster partition (default: {dbname}-{date} of --dump, else the embedded "
        "default's enwiki-20160501)",
    )
    parser.add_argument(
        "--page-props",
        metavar="FILE",
        help="the wiki's page_props table dump ({wiki}-{date}-page_props.sql.gz): a Wikidata QID for every "
        "page (default: that file beside the dump, if there)",
    )
    parser.add_argument(
        "--redirect-table",
        metavar="FILE",
        help="the wiki's redirect table dump ({wiki}-{date}-redirect.sql.gz), compared with the XML's "
        "redirects (default: that file beside the dump, if there)",
    )
    parser.add_argument("--as-of", help="keep the latest revision at or before this date, e.g. 2016-05-01")
    parser.add_argument(
        "--workers", type=non_negative_int, help="wikitext conversion processes (0 = in-process)"
    )
    parser.add_argument(
        "--invalid-bytes", choices=["error", "replace"], help="what to do with undecodable bytes"
    )
    parser.add_argument(
        "--text-style",
        choices=TEXT_STYLES,
        help="kilt: pages as KILT writes them (the default) | clean: quotes dropped, removals repaired",
    )
    parser.add_argument(
        "--select", help="Dagster asset selection, e.g. '+key:knowledge_source' (default: all)"
    )
    _executor_options(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a snapshot of the same id built from other dump files or another --as-of",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--verbose", action="store_true", help="Dagster debug events on stderr")


def _executor_options(parser: argparse.ArgumentParser) -> None:
    """Where ``build``'s steps run: ``--executor`` and the Dask cluster's options."""
    parser.add_argument(
        "--executor",
        choices=["in_process", "multiprocess", "dask"],
        help="where steps run: in_process (this process), multiprocess (one process per step) or dask "
        "(a Dask cluster); default: $KILT_EXECUTOR, else in_process; the last two need DAGSTER_HOME's "
        "persistent instance (default ./.dagster_home)",
    )
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="dask: run on this scheduler's workers, e.g. tcp://host:8786 (default: $KILT_DASK_SCHEDULER); "
        "they must see the same data dir and code",
    )
    cluster.add_argument(
        "--dask-workers",
        type=positive_int,
        metavar="N",
        help="dask: start a local cluster of N worker processes for the build (default: $KILT_DASK_WORKERS, "
        "else Dask's default)",
    )


def cmd_build(args: argparse.Namespace) -> int:
    from orchestration.definitions import build_definitions
    from orchestration.jobs import BUILD_ALL
    from orchestration.resources import PipelineSettings

    data_dir = data_dir_of(args).resolve()
    refusal = _other_data_dir(data_dir)  # before anything is touched
    if refusal is not None:
        return fail(refusal)
    ks = params.load_params().knowledge_source
    _make_landing_folder()
    as_of = args.as_of if args.as_of is not None else ks.as_of
    invalid_bytes = args.invalid_bytes or ks.invalid_bytes
    try:
        snapshot, files = _build_snapshot(args, as_of=as_of, invalid_bytes=invalid_bytes)
        page_props = _existing(args.page_props, "page_props table")
        redirect_table = _existing(args.redirect_table, "redirect table")
        executor = executor_choice(args)
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    settings = PipelineSettings(data_dir=str(data_dir), progress_bars=not args.quiet)
    try:  # a bad params.yaml (ParamsError, a ValueError) names its keys
        defs = build_definitions(settings)
        job = defs.resolve_job_def(BUILD_ALL)
        selection = _selection(args, defs, job, dump_given=bool(args.dump))
    except ValueError as exc:
        return fail(str(exc))
    op_config = {
        "wikipedia_dump": {
            "dump_paths": files or [],
            "source": "cli",
            "page_props": page_props,
            "redirect_table": redirect_table,
        },
        "knowledge_source": {
            "as_of": as_of,
            "invalid_bytes": invalid_bytes,
            "text_style": args.text_style or ks.text_style,
            "workers": args.workers,
            "force": args.force,
        },
    }
    selected = {key.to_user_string() for key in selection} if selection else set(op_config)
    run_config = {
        "ops": {name: {"config": cfg} for name, cfg in op_config.items() if name in selected},
        "loggers": {"console": {"config": {"log_level": "DEBUG" if args.verbose else "INFO"}}},
    }
    return _run_build(args, data_dir, snapshot, settings, executor, job, selection, run_config)


def _run_build(
    args: argparse.Namespace,
    data_dir: Path,
    snapshot: str,
    settings: Any,
    executor: Any,
    job: Any,
    selection: Any,
    run_config: dict[str, Any],
) -> int:
    """The build's Dagster run under the snapshot's lock, as the UI launches one; its summary."""
    from dagster import DagsterError

    from orchestration.build_guard import PARTITION_TAG, observe
    from orchestration.launch import execute_as_launched
    from orchestration.reconstruct import reconstructable_job
    from orchestration.resources import SNAPSHOTS

    owner = new_owner(command=args.command_line)
    tags = {LOCK_TAG: owner["token"]}  # the run's executor sees that this process holds the lock for it
    started = time.perf_counter()
    try:  # the lock first: a refused build touches nothing (no Dagster instance, partition or folder)
        with building(data_dir, snapshot, owner) as session:
            instance = _dagster_instance()
            if _add_partition(instance, snapshot):  # a failed first build leaves no partition behind,
                session.on_finish(  # removed while the lock is still held: nobody else uses it
                    lambda: (
                        None
                        if is_published(data_dir, snapshot)
                        else instance.delete_dynamic_partition(SNAPSHOTS.name, snapshot)
                    )
                )
            try:  # recorded as the UI records the runs it launches (orchestration.launch)
                if executor.out_of_process:
                    print(f"kiltpipe: executing steps with {executor.describe()}", file=sys.stderr)
                result = execute_as_launched(
                    reconstructable_job(job.name, settings, executor),
                    instance,
                    run_config=run_config,
                    tags={PARTITION_TAG: snapshot, **tags},
                    asset_selection=selection,
                )
            except DagsterError as exc:  # e.g. a selection that splits a multi-asset
                session.failed(f"cannot run this selection: {exc}")
                return fail(f"cannot run this selection: {exc}")
            observe(session, result.all_events)
            if not result.success and not session.failures:
                session.failed("the run failed")
    except SnapshotBusy as exc:
        return fail(str(exc))
    summary = _run_summary(result, time.perf_counter() - started)
    summary["snapshot_id"] = snapshot
    if session.disk_full:  # said when it happened (the space left then), with what was removed
        summary["error"] = f"{session.disk_full}; nothing was published"
    emit(summary)
    _print_summary_table(summary)
    if not result.success:
        return fail(f"build failed: {summary.get('error') or 'see the log above'}")
    return 0


def _print_summary_table(summary: dict[str, Any]) -> None:
    """A human-readable account of the build on stderr (stdout keeps the JSON)."""

    table = Table(
        title=f"kiltpipe build ({'ok' if summary['success'] else 'FAILED'}, {summary['seconds']} s)"
    )
    for column in ("asset", "where", "counts", "seconds"):
        table.add_column(column)
    for name, meta in summary["assets"].items():
        where = next((str(v) for k, v in meta.items() if k.endswith("_path")), "")
        counts = ", ".join(
            f"{k}={v:,}" for k, v in meta.items() if isinstance(v, int) and not isinstance(v, bool)
        )
        seconds = meta.get("seconds")
        table.add_row(name, where, counts, f"{seconds:.2f}" if isinstance(seconds, float) else "")
    for name, check in summary["checks"].items():
        table.add_row(
            f"check {name}", "passed" if check["passed"] else "FAILED", check["description"] or "", ""
        )
    Console(stderr=True, width=160).print(table)


def _plain(value: Any) -> Any:
    """A metadata value as JSON holds it (a table schema: its columns' names and types)."""
    columns = getattr(value, "columns", None)
    if columns is not None:
        return {"columns": [{"name": c.name, "type": c.type} for c in columns]}
    return value


def _run_summary(result: Any, seconds: float) -> dict[str, Any]:
    """What was built, where, counts and timings, read from the run's events."""
    from orchestration.build_guard import error_line

    assets: dict[str, Any] = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        meta = {k: _plain(getattr(v, "value", v)) for k, v in mat.metadata.items() if k != "preview"}
        assets[mat.asset_key.to_user_string()] = meta
    check_results = {
        evaluation.check_name: {"passed": evaluation.passed, "description": evaluation.description}
        for evaluation in result.get_asset_check_evaluations()
    }
    summary: dict[str, Any] = {
        "success": result.success,
        "run_id": result.run_id,
        "seconds": round(seconds, 2),
        "assets": assets,
        "checks": check_results,
    }
    failures = [e for e in result.all_events if e.is_step_failure]
    if failures:
        summary["error"] = error_line(failures[0].step_failure_data.error)
    elif not result.success:  # the run failed outside any step, e.g. its Dask scheduler is unreachable
        run_failures = [e for e in result.all_events if e.is_job_failure and e.job_failure_data.error]
        if run_failures:
            summary["error"] = run_failures[0].job_failure_data.error.message.strip()
    return summary


VERBS = (
    Verb(
        "build",
        "Materialize every asset of a snapshot through the Dagster definitions.",
        cmd_build,
        _build_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
