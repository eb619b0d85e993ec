"""The ``kiltpipe`` verbs: one function per verb, each taking the parsed arguments and returning the exit
code (JSON on stdout, progress and logs on stderr). ``orchestration.cli`` parses and dispatches."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
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


def _dagster_instance():
    from dagster import DagsterInstance

    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(Path(".dagster_home").resolve())
    home = Path(os.environ["DAGSTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").touch()
    return DagsterInstance.get()


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


def _selection(args: argparse.Namespace, defs: Any, dump_given: bool) -> list[Any] | None:
    """The asset keys of ``--select`` (None: every asset), widened to whole multi-assets (``passages``
    writes its collection and TSV too) and, when a dump is given, to the ``wikipedia_dump`` step that
    reads it."""
    from dagster import AssetKey, AssetSelection

    if not args.select:
        return None
    graph = defs.resolve_asset_graph()
    keys = set(AssetSelection.from_string(args.select).required_multi_asset_neighbors().resolve(graph))
    if not keys:
        raise ValueError(f"--select {args.select!r} matches no asset")
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


def cmd_build(args: argparse.Namespace) -> int:
    from dagster import DagsterError, execute_job

    from assets.build_state import LOCK_TAG, SnapshotBusy, building, new_owner
    from assets.resources import SNAPSHOTS, PipelineSettings
    from assets.storage import SnapshotPaths
    from orchestration.build_guard import observe
    from orchestration.definitions import build_definitions, reconstructable_job

    data_dir = _data_dir(args).resolve()
    ks = params.load_params().knowledge_source
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
    defs = build_definitions(settings)
    job = defs.resolve_job_def("build_all")
    try:
        selection = _selection(args, defs, dump_given=bool(args.dump))
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
    instance = _dagster_instance()
    new_partition = not instance.has_dynamic_partition(SNAPSHOTS.name, snapshot)
    if new_partition:
        instance.add_dynamic_partitions(SNAPSHOTS.name, [snapshot])
    owner = new_owner(command=args.command_line)
    tags = {LOCK_TAG: owner["token"]}  # the run's executor sees that this process holds the lock for it
    started = time.perf_counter()
    try:
        with building(data_dir, snapshot, owner) as session:
            try:
                if executor.out_of_process:  # steps in other processes: they rebuild the job from a pointer
                    print(f"kiltpipe: executing steps with {executor.describe()}", file=sys.stderr)
                    result = execute_job(
                        reconstructable_job(job.name, settings, executor),
                        instance,
                        run_config=run_config,
                        tags={"dagster/partition": snapshot, **tags},
                        raise_on_error=False,
                        asset_selection=selection,
                    )
                else:
                    result = job.execute_in_process(
                        run_config=run_config,
                        instance=instance,
                        partition_key=snapshot,
                        raise_on_error=False,
                        asset_selection=selection,
                        tags=tags,
                    )
            except DagsterError as exc:  # e.g. a selection that splits a multi-asset
                session.failed(f"cannot run this selection: {exc}")
                return _fail(f"cannot run this selection: {exc}")
            observe(session, result.all_events)
            if not result.success and not session.failures:
                session.failed("the run failed")
    except SnapshotBusy as exc:
        return _fail(str(exc))
    finally:
        if new_partition and not SnapshotPaths(data_dir, snapshot).knowledge_source.is_dir():
            instance.delete_dynamic_partition(SNAPSHOTS.name, snapshot)  # a failed first build leaves none
    summary = _run_summary(result, time.perf_counter() - started)
    summary["snapshot_id"] = snapshot
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
        error = failures[0].step_failure_data.error
        while error is not None and error.cause is not None:  # the user's exception, not Dagster's wrapper
            error = error.cause
        summary["error"] = error.message.strip() if error else "step failed"
    elif not result.success:  # the run failed outside any step, e.g. its Dask scheduler is unreachable
        run_failures = [e for e in result.all_events if e.is_job_failure and e.job_failure_data.error]
        if run_failures:
            summary["error"] = run_failures[0].job_failure_data.error.message.strip()
    return summary


def cmd_snapshots(args: argparse.Namespace) -> int:
    from assets.build_state import build_state
    from assets.snapshot_ids import snapshot_date
    from assets.storage import SnapshotPaths, list_snapshots, registered_dump, run_facts_file

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
                "dump_date": snapshot_date(snapshot_id),
                "path": str(paths.root),
                "built_at": run_facts.get("built_at"),
                "source": run_facts.get("imported_from") or manifest.get("dump_files"),
                "dump_files": dump.get("files"),
                "registered_by": dump.get("source"),
                "passages": paths.passages_report.is_file(),
                "bm25_index": paths.bm25_index.is_dir(),
                "dense_index": paths.dense_index.is_dir(),
                "pages": report.get("articles"),
                "redirects": report.get("redirects"),
                "paragraphs": report.get("paragraphs"),
                "anchors": report.get("anchors"),
            }
        )
    _emit(rows)
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from assets.datasets.pipeline import DatasetSpec, map_datasets
    from assets.datasets.readers import require_file
    from assets.storage import resolve_snapshot

    require_file(args.path, "dataset file")  # before anything else: the user's input, named
    if args.qrels:
        require_file(args.qrels, "qrels file")
    data_dir = _data_dir(args)
    ds = params.load_params().datasets
    threshold = args.bleu_threshold if args.bleu_threshold is not None else float(ds.bleu_threshold)
    source_id = args.source_snapshot or ds.source_snapshot
    target = resolve_snapshot(data_dir, args.snapshot)
    source = resolve_snapshot(data_dir, source_id) if source_id else None
    language = args.language if args.language in (None, "all") else args.language.split(",")
    spec = DatasetSpec(args.path, args.format, args.dataset, args.split, args.qrels, language)
    (mapped,), _ = map_datasets(
        [spec],
        target,
        _reports_dir(args, data_dir),
        source=source,
        bleu_threshold=threshold,
        strict=args.strict,
    )
    for line, problem in mapped.read_problems:
        print(f"{args.path}:{line}: {problem}", file=sys.stderr)
    _emit(
        {
            **mapped.report.to_dict(),
            "jsonl": str(mapped.written.jsonl),
            "report": str(mapped.written.report_md),
            "read_problems": len(mapped.read_problems),
        }
    )
    return 0


def cmd_remap(args: argparse.Namespace) -> int:
    from assets.datasets.pipeline import remap_snapshot
    from assets.datasets.queries import open_store

    data_dir = _data_dir(args)
    ds = params.load_params().datasets
    with open_store(data_dir, args.source) as source, open_store(data_dir, args.target) as target:
        report = remap_snapshot(
            source,
            target,
            _reports_dir(args, data_dir),
            bleu_threshold=float(ds.bleu_threshold),
        )
    _emit(report.to_dict())
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


def _kilt_records(path: str, what: str) -> list[dict[str, Any]]:
    """A KILT JSONL file as parsed records; a bad line is an error naming the file and line."""
    from assets.datasets.records import open_text, require_file

    records = []
    with open_text(require_file(path, what)) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not JSON: {error.msg}") from None
    return records


def _eval_files(args: argparse.Namespace) -> int:
    """KILT's evaluation of a prediction file against a gold file: retrieval (every guess), downstream
    (when every guess has an answer), with KILT's metric names."""
    from rich.console import Console
    from rich.table import Table

    from assets.indexes.kilt_metrics import aligned, downstream_metrics, retrieval_metrics

    gold, guess = _kilt_records(args.gold, "gold file"), _kilt_records(args.guess, "prediction file")
    ks = [int(k) for k in args.ks.split(",")]
    rank_keys = args.rank_keys.split(",")
    result: dict[str, Any] = {"gold": args.gold, "guess": args.guess, "records": len(gold)}
    result["retrieval"] = retrieval_metrics(gold, guess, ks, rank_keys)
    guessed = aligned(gold, guess)  # KILT's order and checks (retrieval_metrics already passed them)
    answered = all(len(g.get("output", [])) == 1 and "answer" in g["output"][0] for g in guessed)
    if answered:
        downstream = downstream_metrics(gold, guess)
        result["downstream"], result["kilt"] = downstream["downstream"], downstream["kilt"]
    _emit(result)
    table = Table(title=f"KILT evaluation of {Path(args.guess).name} ({len(gold)} records)")
    table.add_column("metric")
    table.add_column("value")
    for group in ("retrieval", "downstream", "kilt"):
        for name, value in result.get(group, {}).items():
            table.add_row(name, f"{value:.4f}")
    Console(stderr=True, width=120).print(table)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    if args.guess or args.gold:
        if not (args.guess and args.gold):
            return _fail("--guess and --gold go together")
        return _eval_files(args)
    from assets.indexes.retrieval import NO_EVALUATION, evaluate_indexes, retrieval_reports_dir

    evaluation = params.load_params().indexes.evaluation
    reports_dir = _reports_dir(args, _data_dir(args))
    with _retriever(args) as retriever:
        results = evaluate_indexes(
            retriever,
            reports_dir,
            indexes=args.index or list(evaluation.indexes),
            depth=args.depth or int(evaluation.depth),
        )
    results["reports"] = str(retrieval_reports_dir(reports_dir, retriever.paths.snapshot_id))
    _emit(results)
    if results["table"]:
        columns = ["dataset", "index", "queries", "R-precision", "recall@5", "recall@20", "success@5"]
        table = Table(title=f"KILT retrieval metrics ({results['snapshot_id']}, depth {results['depth']})")
        for column in columns:
            table.add_column(column)
        for row in results["table"]:
            table.add_row(*(str(row.get(column, "")) for column in columns))
        Console(stderr=True, width=160).print(table)
    else:
        print(f"kiltpipe: evaluation skipped: {NO_EVALUATION}", file=sys.stderr)
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
    from assets.storage import resolve_snapshot

    data_dir = _data_dir(args)
    snapshot = args.snapshot or params.load_params().knowledge_source.snapshot
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
