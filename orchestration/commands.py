"""The ``kiltpipe`` verbs: one function per verb, each taking the parsed arguments and returning the exit
code (JSON on stdout, progress and logs on stderr). ``orchestration.cli`` parses and dispatches."""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assets import params

EXIT_NOT_FOUND = 1

if TYPE_CHECKING:
    from assets.indexes.retrieval import Retriever
    from assets.storage import SnapshotPaths
    from orchestration.executors import ExecutorChoice


EXIT_ERROR = 2


def _emit(payload: Any) -> None:
    json.dump(payload, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"kiltpipe: {message}", file=sys.stderr)
    return code


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir) if args.data_dir else params.data_dir()


def _reports_dir(args: argparse.Namespace, data_dir: Path) -> Path:
    """``--reports-dir`` as given, else ``datasets.reports_dir`` under the data dir."""
    return Path(args.reports_dir) if args.reports_dir else params.reports_dir(data_dir)


def cmd_fetch_default(args: argparse.Namespace) -> int:
    from assets.wikipedia import embedded

    if args.wheel and not Path(args.wheel).is_file():
        raise FileNotFoundError(errno.ENOENT, "gensim wheel not found", args.wheel)
    path = embedded.ensure_embedded_dump(_data_dir(args), wheel=Path(args.wheel) if args.wheel else None)
    _emit(
        {
            "path": str(path),
            "sha256": embedded.SHA256,
            "bytes": path.stat().st_size,
            "origin": embedded.ORIGIN,
        }
    )
    return 0


@contextlib.contextmanager
def _instance_lock(home: Path) -> Iterator[None]:
    """One process at a time creates the Dagster instance's storage or adds a partition: two builds that
    start together on a fresh ``DAGSTER_HOME`` would otherwise both create its SQLite tables."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".kiltpipe-instance.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _dagster_instance():
    from dagster import DagsterInstance

    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(Path(".dagster_home").resolve())
    home = Path(os.environ["DAGSTER_HOME"])
    with _instance_lock(home):
        (home / "dagster.yaml").touch()
        instance = DagsterInstance.get()
        instance.get_runs(limit=1)  # creates (or migrates) the run and event storage now, under the lock
    return instance


def _add_partition(instance: Any, snapshot: str) -> bool:
    """Add ``snapshot``'s partition unless it exists; whether this call added it."""
    from assets.resources import SNAPSHOTS

    with _instance_lock(Path(os.environ["DAGSTER_HOME"])):
        if instance.has_dynamic_partition(SNAPSHOTS.name, snapshot):
            return False
        instance.add_dynamic_partitions(SNAPSHOTS.name, [snapshot])
        return True


def _build_snapshot(
    args: argparse.Namespace, *, as_of: str | None, invalid_bytes: str
) -> tuple[str, list[str] | None]:
    """The partition to build and, when a dump is given (``--dump`` or ``knowledge_source.dump``), its
    files; the id is checked, and derived from the dump (read with the build's settings) when not given."""
    from assets.snapshot_ids import check_snapshot_id
    from assets.wikipedia import embedded
    from assets.wikipedia.naming import snapshot_id_of_dump

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
            snapshot = snapshot_id_of_dump(files, as_of=as_of, invalid_bytes=invalid_bytes)
        return snapshot, [str(f.resolve()) for f in files]
    return snapshot or embedded.SNAPSHOT_ID, None


def _executor_choice(args: argparse.Namespace) -> ExecutorChoice:
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


def cmd_build(args: argparse.Namespace) -> int:
    from dagster import DagsterError

    from assets.build_state import LOCK_TAG, SnapshotBusy, building, is_published, new_owner
    from assets.resources import SNAPSHOTS, PipelineSettings
    from orchestration.build_guard import PARTITION_TAG, observe
    from orchestration.definitions import BUILD_ALL, build_definitions, reconstructable_job
    from orchestration.launch import execute_as_launched

    data_dir = _data_dir(args).resolve()
    ks = params.load_params().knowledge_source
    _make_landing_folder()
    as_of = args.as_of if args.as_of is not None else ks.as_of
    invalid_bytes = args.invalid_bytes or ks.invalid_bytes
    try:
        snapshot, files = _build_snapshot(args, as_of=as_of, invalid_bytes=invalid_bytes)
        page_props = _existing(args.page_props, "page_props table")
        redirect_table = _existing(args.redirect_table, "redirect table")
        executor = _executor_choice(args)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    settings = PipelineSettings(
        data_dir=str(data_dir),
        workers=args.workers if args.workers is not None else int(ks.workers),
        progress_bars=not args.quiet,
    )
    try:  # a bad params.yaml (ParamsError, a ValueError) names its keys
        defs = build_definitions(settings)
        job = defs.resolve_job_def(BUILD_ALL)
        selection = _selection(args, defs, job, dump_given=bool(args.dump))
    except ValueError as exc:
        return _fail(str(exc))
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
            "force": args.force,
        },
    }
    selected = {key.to_user_string() for key in selection} if selection else set(op_config)
    run_config = {
        "ops": {name: {"config": cfg} for name, cfg in op_config.items() if name in selected},
        "loggers": {"console": {"config": {"log_level": "DEBUG" if args.verbose else "INFO"}}},
    }
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
                return _fail(f"cannot run this selection: {exc}")
            observe(session, result.all_events)
            if not result.success and not session.failures:
                session.failed("the run failed")
    except SnapshotBusy as exc:
        return _fail(str(exc))
    summary = _run_summary(result, time.perf_counter() - started)
    summary["snapshot_id"] = snapshot
    if session.disk_full:  # said when it happened (the space left then), with what was removed
        summary["error"] = f"{session.disk_full}; nothing was published"
    _emit(summary)
    _print_summary_table(summary)
    if not result.success:
        return _fail(f"build failed: {summary.get('error') or 'see the log above'}")
    return 0


def _print_summary_table(summary: dict[str, Any]) -> None:
    """A human-readable account of the build on stderr (stdout keeps the JSON)."""
    from rich.console import Console
    from rich.table import Table

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


def _run_summary(result: Any, seconds: float) -> dict[str, Any]:
    """What was built, where, counts and timings, read from the run's events."""
    from orchestration.build_guard import error_line

    assets: dict[str, Any] = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items() if k != "preview"}
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


def cmd_snapshots(args: argparse.Namespace) -> int:
    from assets.build_state import build_state
    from assets.indexes.searchers import searcher_types
    from assets.snapshot_ids import snapshot_date
    from assets.storage import (
        SnapshotPaths,
        builds_under_way,
        list_snapshots,
        registered_dump,
        run_facts_file,
    )

    data_dir = _data_dir(args)
    rows = []
    for snapshot_id in list_snapshots(data_dir):  # oldest dump first: the last complete one is the default
        state = build_state(data_dir, snapshot_id)
        paths = SnapshotPaths(data_dir, snapshot_id)
        manifest = json.loads(paths.manifest_file.read_text())
        report = json.loads(paths.report_file.read_text())
        run_facts_path = run_facts_file(paths.manifest_file)  # absent after a `dvc pull` (DVC ignores it)
        run_facts = json.loads(run_facts_path.read_text()) if run_facts_path.is_file() else {}
        dump = registered_dump(data_dir, snapshot_id) or {}
        rows.append(
            {
                "snapshot_id": snapshot_id,
                "state": state.state,
                "incomplete": state.reason or None,
                "rebuild": state.rebuild or None,
                "version": state.record.get("version"),
                "dump_date": snapshot_date(snapshot_id),
                "path": str(paths.root),
                "built_at": run_facts.get("built_at"),
                "source": run_facts.get("imported_from") or manifest.get("dump_files"),
                "dump_files": dump.get("files"),
                "registered_by": dump.get("source"),
                "passages": paths.passages_report.is_file(),
                **{
                    kind.asset: kind.index_dir(paths).is_dir()
                    for kind in searcher_types()
                    if kind.asset and kind.index_dir
                },
                "pages": report.get("articles"),
                "redirects": report.get("redirects"),
                "paragraphs": report.get("paragraphs"),
                "anchors": report.get("anchors"),
            }
        )
    listed = {row["snapshot_id"] for row in rows}
    for snapshot_id in builds_under_way(data_dir):  # first builds under way or killed: nothing published
        if snapshot_id not in listed:
            state = build_state(data_dir, snapshot_id)
            rows.append({"snapshot_id": snapshot_id, "state": state.state, "incomplete": state.reason})
    _emit(rows)
    return 0


def cmd_export_ks(args: argparse.Namespace) -> int:
    from assets.storage import resolve_snapshot
    from assets.wikipedia.kilt_jsonl import export_kilt_jsonl

    paths = resolve_snapshot(_data_dir(args), args.snapshot)
    out = Path(args.out) if args.out else paths.kilt_jsonl
    count = export_kilt_jsonl(paths, out, progress=not args.quiet)
    _emit({"snapshot_id": paths.snapshot_id, "path": str(out), "pages": count, "bytes": out.stat().st_size})
    return 0


def cmd_import_ks(args: argparse.Namespace) -> int:
    from assets.build_state import SnapshotBusy, building, new_owner
    from assets.wikipedia.kilt_jsonl import import_kilt_jsonl

    data_dir = _data_dir(args)
    try:  # an import writes a snapshot as a build does: under its lock, with its record
        with building(data_dir, args.snapshot, new_owner(command=args.command_line)) as session:
            report = import_kilt_jsonl(Path(args.path), data_dir, args.snapshot, progress=not args.quiet)
            session.materialized("knowledge_source")
    except SnapshotBusy as exc:
        return _fail(str(exc))
    _emit(
        {
            "snapshot_id": report.snapshot_id,
            "pages": report.articles,
            "anchors": report.anchors,
            "seconds": round(report.seconds, 2),
        }
    )
    return 0


def _retriever(args: argparse.Namespace, paths: SnapshotPaths | None = None) -> Retriever:
    from assets.indexes.retrieval import IndexSettings, Retriever
    from assets.storage import resolve_snapshot

    paths = paths or resolve_snapshot(_data_dir(args), args.snapshot)
    return Retriever(paths, IndexSettings.from_params())


def cmd_search(args: argparse.Namespace) -> int:
    from assets.indexes.runs import read_topics, write_kilt_output, write_trec_run

    if (args.query is None) == (args.topics is None):
        return _fail("give either a QUERY or --topics FILE")
    with _retriever(args) as retriever:
        if args.query is not None:
            hits = retriever.search(args.index, args.query, args.k)
            _emit([hit.to_dict() for hit in hits])
            return 0
        if not args.output:
            return _fail("--topics needs --output FILE (KILT JSONL or TREC run)")
        topics = read_topics(args.topics, args.topics_format)
        retriever.open(args.index)
        started = time.perf_counter()
        ranked = retriever.batch_search(args.index, [t.text for t in topics], args.k, threads=args.threads)
        seconds = time.perf_counter() - started
        results = {topic.id: hits for topic, hits in zip(topics, ranked, strict=True)}
        if args.format == "trec":
            write_trec_run(results, args.output, tag=f"kilt-{args.index}")
        else:
            write_kilt_output(topics, results, args.output, retriever.paths.passages_parquet)
    _emit(
        {
            "snapshot_id": retriever.paths.snapshot_id,
            "index": args.index,
            "topics": len(topics),
            "k": args.k,
            "output": str(args.output),
            "format": args.format,
            "seconds": round(seconds, 3),
            "queries_per_second": round(len(topics) / seconds, 1) if seconds else None,
        }
    )
    return 0


def _committed_lock(args: argparse.Namespace, lock: Path) -> str:
    """``--committed`` FILE, else the lock as the checkout's HEAD commit has it."""
    if args.committed:
        return Path(args.committed).read_text()
    import subprocess

    shown = subprocess.run(
        ["git", "show", f"HEAD:./{lock.name}"], cwd=lock.parent, capture_output=True, text=True, check=False
    )
    if shown.returncode != 0:
        raise FileNotFoundError(
            f"cannot read the committed {lock.name} with git ({shown.stderr.strip()}); pass --committed FILE"
        )
    return shown.stdout


def cmd_verify_repro(args: argparse.Namespace) -> int:
    from assets.indexes.reproducibility import verify_rebuild, write_reference
    from assets.indexes.retrieval import retrieval_reports_dir
    from assets.snapshot_ids import check_snapshot_id
    from assets.storage import resolve_snapshot

    data_dir = _data_dir(args)
    if args.snapshot is not None:  # an empty --snapshot is an error, not the default snapshot
        check_snapshot_id(args.snapshot, what="--snapshot")
    snapshot = args.snapshot if args.snapshot is not None else params.load_params().knowledge_source.snapshot
    paths = resolve_snapshot(data_dir, snapshot)
    retrieval_json = retrieval_reports_dir(params.reports_dir(data_dir), paths.snapshot_id) / "retrieval.json"
    reference_path = Path(args.reference)
    with _retriever(args, paths) as retriever:
        if args.write_reference:
            reference = write_reference(paths, retrieval_json, reference_path, retriever)
            _emit(
                {
                    "reference": str(reference_path),
                    "vectors": reference["vectors"],
                    "cpu": reference["written_on"],
                }
            )
            print(
                f"kiltpipe: wrote the float reference of {paths.snapshot_id} to {reference_path}",
                file=sys.stderr,
            )
            return 0
        lock = Path(args.lock)
        verdict = verify_rebuild(
            _committed_lock(args, lock),
            lock.read_text(),
            paths,
            retrieval_json,
            json.loads(reference_path.read_text()),
            retriever,
        )
    _emit(verdict.to_dict())
    for problem in verdict.lock.differences + verdict.floats.problems:
        print(f"kiltpipe: {problem}", file=sys.stderr)
    print(f"kiltpipe: {verdict.line()}", file=sys.stderr)
    return 0 if verdict.reproducible else EXIT_ERROR
