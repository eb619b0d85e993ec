"""The ``kiltpipe`` verbs of datasets: ``map`` and ``remap`` (written as a build writes: under the snapshot's
lock, in its staging folder, then swapped in) and ``eval`` (KILT's metrics of the snapshot's indices, or of
any prediction file)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from assets import params
from assets.compressed import strict_lines
from assets.storage import SnapshotBusy, SnapshotPaths, building, new_owner, resolve_snapshot
from orchestration.cli.arguments import fraction, positive_int, positive_int_list
from orchestration.cli.common import (
    EXIT_NOT_FOUND,
    Verb,
    add_indexes_and_collections,
    add_snapshot,
    data_dir_of,
    emit,
    fail,
    reports_dir_of,
    snapshot_for,
)

__all__ = ["VERBS", "cmd_eval", "cmd_map", "cmd_remap", "cmd_restore_stores"]


def _map_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", help="dataset file (KILT JSONL, NQ-open/PAQ, FEVER, MKQA, TriviaQA, HotpotQA)"
    )
    parser.add_argument(
        "--format", help="dataset format, one of assets.datasets.formats' registry (default: detected)"
    )
    parser.add_argument("--dataset", help="dataset name (default: from the file)")
    parser.add_argument("--split", help="split (default: from the file name)")
    parser.add_argument("--qrels", help="FEVER qrels file paired with a topics TSV")
    parser.add_argument(
        "--language",
        help="MKQA: languages to map, comma-separated (zh_cn,zh_tw) or 'all' (default: those the snapshot's "
        "Wikipedia answers, e.g. zh_cn,zh_hk,zh_tw for zhwiki)",
    )
    parser.add_argument("--snapshot", help="target snapshot (default: the newest)")
    parser.add_argument("--source-snapshot", help="snapshot whose text is the evidence for KILT coordinates")
    parser.add_argument(
        "--bleu-threshold", type=fraction, help="dev/test drop threshold (default: params.yaml)"
    )
    parser.add_argument("--reports-dir", help="where mapping reports go (default: params.yaml)")
    parser.add_argument("--strict", action="store_true", help="fail on the first malformed line")


def cmd_map(args: argparse.Namespace) -> int:
    from assets.datasets import DatasetSpec, map_datasets, require_file
    from assets.reading import mapping_stores

    require_file(args.path, "dataset file")  # before anything else: the user's input, named
    if args.qrels:
        require_file(args.qrels, "qrels file")
    data_dir = data_dir_of(args)
    ds = params.load_params().datasets
    threshold = args.bleu_threshold if args.bleu_threshold is not None else float(ds.bleu_threshold)
    source_id = args.source_snapshot or ds.source_snapshot
    language = args.language if args.language in (None, "all") else args.language.split(",")
    spec = DatasetSpec(
        args.path, args.format, args.dataset, args.split, args.qrels, language
    )  # names checked
    target_id = resolve_snapshot(data_dir, args.snapshot).snapshot_id
    source = resolve_snapshot(data_dir, source_id) if source_id else None
    try:  # the mapped split is written as a build writes: in the staging folder, then swapped in
        with building(data_dir, target_id, new_owner(command=args.command_line)) as session:
            staged = SnapshotPaths(data_dir, target_id, session.root)
            evidence = staged if source is not None and source.snapshot_id == target_id else source
            with mapping_stores(staged, evidence, memory_limit=ds.store_memory) as (target, read):
                (mapped,), _ = map_datasets(
                    [spec],
                    target,
                    reports_dir_of(args, data_dir),
                    source=read,
                    bleu_threshold=threshold,
                    strict=args.strict,
                    max_line_bytes=params.load_params().limits.input.max_line_bytes,
                )
            session.materialized("remapped_datasets")
    except SnapshotBusy as exc:
        return fail(str(exc))
    for line, problem in mapped.read_problems:
        print(f"{args.path}:{line}: {problem}", file=sys.stderr)
    if mapped.report.read_problems > len(mapped.read_problems):
        more = mapped.report.read_problems - len(mapped.read_problems)
        print(f"{args.path}: {more:,} more problem(s), counted in the report", file=sys.stderr)
    jsonl = SnapshotPaths(data_dir, target_id).datasets / mapped.written.jsonl.name  # where it now lives
    emit(
        {
            **mapped.report.to_dict(),
            "jsonl": str(jsonl),
            "report": str(mapped.written.report_md),
        }
    )
    return 0


def _remap_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from", dest="source", required=True, help="snapshot the datasets are mapped on (A)"
    )
    parser.add_argument("--to", dest="target", required=True, help="new snapshot (B)")
    parser.add_argument("--reports-dir", help="where reports go (default: params.yaml)")


def cmd_remap(args: argparse.Namespace) -> int:
    from assets.datasets import build_datasets_db, remap_snapshot
    from assets.reading import Snapshot

    data_dir = data_dir_of(args)
    ds = params.load_params().datasets
    target_id = resolve_snapshot(data_dir, args.target).snapshot_id
    try:  # the remapped splits are written into the target's staging folder, then swapped in
        with (
            building(data_dir, target_id, new_owner(command=args.command_line)) as session,
            Snapshot.open(data_dir, args.source) as source,
        ):
            staged = SnapshotPaths(data_dir, target_id, session.root)
            with Snapshot.building(staged) as target:
                report = remap_snapshot(
                    source.store,
                    target.store,
                    reports_dir_of(args, data_dir),
                    bleu_threshold=float(ds.bleu_threshold),
                    max_line_bytes=params.load_params().limits.input.max_line_bytes,
                )
            build_datasets_db(staged)
            session.materialized("remapped_datasets")
    except SnapshotBusy as exc:
        return fail(str(exc))
    emit(report.to_dict())
    return 0


def _restore_stores_options(parser: argparse.ArgumentParser) -> None:
    add_snapshot(parser)


def cmd_restore_stores(args: argparse.Namespace) -> int:
    from assets.reading import ensure_local_stores

    data_dir = data_dir_of(args)
    snapshot_id = resolve_snapshot(data_dir, args.snapshot).snapshot_id
    assets = {
        "provenance.duckdb": "provenance_store",
        "datasets.duckdb": "remapped_datasets",
        "qa_pairs.sqlite": "qa_pairs",
    }
    try:  # built as a build writes: under the lock, in the staging folder, then swapped in
        with building(data_dir, snapshot_id, new_owner(command=args.command_line)) as session:
            built = ensure_local_stores(SnapshotPaths(data_dir, snapshot_id, session.root))
            for name in built:
                session.materialized(assets[name])
    except SnapshotBusy as exc:
        return fail(str(exc))
    paths = SnapshotPaths(data_dir, snapshot_id)
    if not paths.provenance_store.is_file():  # nothing to build it from: say what is missing, and how
        unbuilt = [p for p in (paths.manifest_file, paths.passages_parquet) if not p.exists()]
        return fail(
            f"snapshot {snapshot_id}: built {built or 'nothing'}; its provenance store cannot be restored: "
            f"{', '.join(str(p.absolute()) for p in unbuilt) or 'its Parquet'} never built. Build them with "
            f"`kiltpipe build --snapshot {snapshot_id} --select +key:provenance_store`",
            EXIT_NOT_FOUND,
        )
    emit({"snapshot": snapshot_id, "built": built})
    return 0


def _kilt_records(path: str, what: str) -> list[dict[str, Any]]:
    """A KILT JSONL file as parsed records; a bad line is an error naming the file and line."""
    from assets.datasets import require_file

    records, bound = [], params.load_params().limits.input.max_line_bytes
    for number, line in strict_lines(require_file(path, what), bound):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON: {error.msg}") from None
    return records


def _eval_files(args: argparse.Namespace) -> int:
    """KILT's evaluation of a prediction file against a gold file: retrieval (every guess), downstream
    (when every guess has an answer), with KILT's metric names."""

    from assets.indexes.evaluation import aligned, downstream_metrics, gold_answers, retrieval_metrics

    gold, guess = _kilt_records(args.gold, "gold file"), _kilt_records(args.guess, "prediction file")
    ks = args.ks
    rank_keys = args.rank_keys.split(",")
    result: dict[str, Any] = {"gold": args.gold, "guess": args.guess, "records": len(gold)}
    result["retrieval"] = retrieval_metrics(gold, guess, ks, rank_keys)
    guessed = aligned(gold, guess)  # KILT's order and checks (retrieval_metrics already passed them)
    answered = all(len(g.get("output", [])) == 1 and "answer" in g["output"][0] for g in guessed)
    unanswerable = [str(g.get("id")) for g in gold if not gold_answers(g)]
    if not answered:
        result["downstream_not_computed"] = "a prediction without exactly one output with an answer"
    elif unanswerable:  # KILT's eval_downstream crashes on such a record; its retrieval metrics stand
        result["downstream_not_computed"] = (
            f"{len(unanswerable)} gold records have no answer (first: {unanswerable[0]}); KILT's "
            "eval_downstream cannot score accuracy, em, f1, rougel or the KILT scores on them"
        )
    else:
        downstream = downstream_metrics(gold, guess)
        result["downstream"], result["kilt"] = downstream["downstream"], downstream["kilt"]
    emit(result)
    table = Table(title=f"KILT evaluation of {Path(args.guess).name} ({len(gold)} records)")
    table.add_column("metric")
    table.add_column("value")
    for group in ("retrieval", "downstream", "kilt"):
        for name, value in result.get(group, {}).items():
            table.add_row(name, f"{value:.4f}")
    Console(stderr=True, width=120).print(table)
    if "downstream_not_computed" in result:
        print(
            f"kiltpipe: downstream metrics not computed: {result['downstream_not_computed']}", file=sys.stderr
        )
    return 0


def _eval_options(parser: argparse.ArgumentParser) -> None:
    from assets.indexes.evaluation import KILT_KS

    add_snapshot(parser)
    add_indexes_and_collections(
        parser,
        indexes="default: indexes.evaluation.indexes of params.yaml",
        collections="default: indexes.evaluation.collections of params.yaml: text and both",
    )
    parser.add_argument(
        "--depth", type=positive_int, help="passages retrieved per query (default: params.yaml)"
    )
    parser.add_argument("--reports-dir", help="where reports go (default: params.yaml)")
    parser.add_argument("--guess", help="a KILT-format prediction file: evaluate it against --gold instead")
    parser.add_argument("--gold", help="the KILT-format gold file (a remapped split or KILT's own)")
    parser.add_argument(
        "--ks",
        type=positive_int_list,
        default=list(KILT_KS),
        help="with --guess: comma-separated k (default: KILT's, 1,5,10,20)",
    )
    parser.add_argument(
        "--rank-keys", default="wikipedia_id", help="with --guess: provenance keys a page id is made of"
    )


def cmd_eval(args: argparse.Namespace) -> int:

    if args.guess is not None or args.gold is not None:
        if args.guess is None or args.gold is None:
            return fail("--guess and --gold go together")
        return _eval_files(args)
    from assets.indexes.evaluation import NO_EVALUATION, evaluate_indexes, retrieval_reports_dir

    evaluation = params.load_params().indexes.evaluation.replace(  # the options given replace its values
        indexes=args.index, depth=args.depth, collections=args.collection
    )
    reports_dir = reports_dir_of(args, data_dir_of(args))
    with snapshot_for(args) as snapshot:
        results = evaluate_indexes(snapshot.retriever, reports_dir, evaluation)
    results["reports"] = str(retrieval_reports_dir(reports_dir, snapshot.snapshot_id))
    emit(results)
    if results["table"]:
        columns = ["dataset", "index", "collection", "queries", "Rprec", "recall@5", "success_rate@5"]
        columns += ["answer_in_context@5"]
        table = Table(title=f"KILT retrieval metrics ({results['snapshot_id']}, depth {results['depth']})")
        for column in columns:
            table.add_column(column)
        for row in results["table"]:
            table.add_row(*(str(row.get(column, "")) for column in columns))
        Console(stderr=True, width=160).print(table)
    else:
        print(f"kiltpipe: evaluation skipped: {NO_EVALUATION}", file=sys.stderr)
    return 0


VERBS = (
    Verb(
        "map",
        "Map a dataset file onto a snapshot (KILT's procedure, offline).",
        cmd_map,
        _map_options,
    ),
    Verb(
        "remap",
        "Remap the datasets mapped on one snapshot onto another and report changes.",
        cmd_remap,
        _remap_options,
    ),
    Verb(
        "restore-stores",
        "Rebuild a snapshot's DuckDB lookup files from its Parquet (after `dvc pull`: DVC versions the "
        "Parquet only).",
        cmd_restore_stores,
        _restore_stores_options,
    ),
    Verb(
        "eval",
        "KILT retrieval metrics of the indices on every dataset remapped onto the snapshot, or KILT's "
        "retrieval and downstream metrics of a prediction file (--guess, --gold).",
        cmd_eval,
        _eval_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
