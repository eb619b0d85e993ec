"""The verbs over whole snapshots: list them, fetch the embedded corpus, export and import a knowledge
source as KILT JSONL, check a rebuild against the committed ``dvc.lock``."""

from __future__ import annotations

import argparse
import errno
import json
import subprocess
import sys
from pathlib import Path

from assets import params
from assets.limits import describe_limits
from assets.snapshot_ids import check_snapshot_id, snapshot_date
from assets.storage import (
    SnapshotBusy,
    SnapshotPaths,
    build_state,
    building,
    builds_under_way,
    list_snapshots,
    new_owner,
    registered_dump,
    resolve_snapshot,
    run_facts_file,
)
from orchestration.cli.arguments import wheel_file
from orchestration.cli.common import EXIT_ERROR, Verb, add_snapshot, data_dir_of, emit, fail, snapshot_for

__all__ = [
    "VERBS",
    "cmd_export_ks",
    "cmd_fetch_default",
    "cmd_import_ks",
    "cmd_limits",
    "cmd_snapshots",
    "cmd_verify_repro",
]


def _fetch_default_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wheel",
        type=wheel_file,
        help="read from this already downloaded gensim wheel instead of calling pip",
    )


def cmd_fetch_default(args: argparse.Namespace) -> int:
    from assets.wikipedia.dump import EMBEDDED_ORIGIN, EMBEDDED_SHA256, ensure_embedded_dump

    if args.wheel and not Path(args.wheel).is_file():
        raise FileNotFoundError(errno.ENOENT, "gensim wheel not found", args.wheel)
    path = ensure_embedded_dump(data_dir_of(args), wheel=Path(args.wheel) if args.wheel else None)
    emit(
        {
            "path": str(path),
            "sha256": EMBEDDED_SHA256,
            "bytes": path.stat().st_size,
            "origin": EMBEDDED_ORIGIN,
        }
    )
    return 0


def cmd_limits(args: argparse.Namespace) -> int:
    """Every limit of ``params.yaml``'s ``limits`` section: setting, value, default, what it bounds."""

    emit(describe_limits(params.load_params().limits))
    return 0


def cmd_snapshots(args: argparse.Namespace) -> int:
    from assets.indexes import collection_view, get_collection, indexed_collections, searcher_types

    data_dir = data_dir_of(args)
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
                **{  # each collection beside the text passages: its passages, the index types built over it
                    key: value
                    for collection in indexed_collections()
                    for key, value in {
                        collection.asset: (
                            get_collection(collection.name).passages(paths) / "report.json"
                        ).is_file(),
                        collection.index_asset: [
                            kind.name
                            for kind in searcher_types()
                            if kind.index_dir
                            and kind.index_dir(collection_view(paths, collection.name)).is_dir()
                        ],
                    }.items()
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
    emit(rows)
    return 0


def _export_ks_options(parser: argparse.ArgumentParser) -> None:
    add_snapshot(parser)
    parser.add_argument(
        "--out", help="output file (.jsonl or .jsonl.gz); default under the snapshot's exports/"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_export_ks(args: argparse.Namespace) -> int:
    from assets.wikipedia.pages import export_kilt_jsonl

    paths = resolve_snapshot(data_dir_of(args), args.snapshot)
    out = Path(args.out) if args.out else paths.kilt_jsonl
    count = export_kilt_jsonl(paths, out, progress=not args.quiet)
    emit({"snapshot_id": paths.snapshot_id, "path": str(out), "pages": count, "bytes": out.stat().st_size})
    return 0


def _import_ks_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="kilt_knowledgesource.json (JSONL, optionally gzipped)")
    parser.add_argument(
        "--snapshot", default="kilt-20190801", help="snapshot id to create (default: kilt-20190801)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_import_ks(args: argparse.Namespace) -> int:
    from assets.wikipedia.pages import import_kilt_jsonl

    data_dir = data_dir_of(args)
    try:  # an import writes a snapshot as a build does: under its lock, with its record
        with building(data_dir, args.snapshot, new_owner(command=args.command_line)) as session:
            report = import_kilt_jsonl(
                Path(args.path),
                data_dir,
                args.snapshot,
                progress=not args.quiet,
                max_line_bytes=params.load_params().limits.input.max_line_bytes,
            )
            session.materialized("knowledge_source")
    except SnapshotBusy as exc:
        return fail(str(exc))
    emit(
        {
            "snapshot_id": report.snapshot_id,
            "pages": report.articles,
            "anchors": report.anchors,
            "seconds": round(report.seconds, 2),
        }
    )
    return 0


def _committed_lock(args: argparse.Namespace, lock: Path) -> str:
    """``--committed`` FILE, else the lock as the checkout's HEAD commit has it."""
    if args.committed:
        return Path(args.committed).read_text()

    shown = subprocess.run(
        ["git", "show", f"HEAD:./{lock.name}"], cwd=lock.parent, capture_output=True, text=True, check=False
    )
    if shown.returncode != 0:
        raise FileNotFoundError(
            f"cannot read the committed {lock.name} with git ({shown.stderr.strip()}); pass --committed FILE"
        )
    return shown.stdout


def _verify_repro_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lock", default="dvc.lock", help="the rebuilt lock (default: dvc.lock)")
    parser.add_argument(
        "--committed", help="the committed lock to compare with (default: dvc.lock at git HEAD)"
    )
    parser.add_argument(
        "--reference",
        default="reproducibility/float_reference.json",
        help="the float reference (default: reproducibility/float_reference.json)",
    )
    parser.add_argument("--snapshot", help="snapshot id (default: knowledge_source.snapshot of params.yaml)")
    parser.add_argument(
        "--write-reference",
        action="store_true",
        help="write the reference from this build instead of checking",
    )


def cmd_verify_repro(args: argparse.Namespace) -> int:
    from assets.indexes import verify_rebuild, write_reference
    from assets.indexes.evaluation import retrieval_reports_dir

    data_dir = data_dir_of(args)
    if args.snapshot is not None:  # an empty --snapshot is an error, not the default snapshot
        check_snapshot_id(args.snapshot, what="--snapshot")
    snapshot = args.snapshot if args.snapshot is not None else params.load_params().knowledge_source.snapshot
    paths = resolve_snapshot(data_dir, snapshot)
    retrieval_json = retrieval_reports_dir(params.reports_dir(data_dir), paths.snapshot_id) / "retrieval.json"
    reference_path = Path(args.reference)
    with snapshot_for(args, paths) as opened:
        retriever = opened.retriever
        if args.write_reference:
            reference = write_reference(paths, retrieval_json, reference_path, retriever)
            emit(
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
    emit(verdict.to_dict())
    for problem in verdict.lock.differences + verdict.floats.problems:
        print(f"kiltpipe: {problem}", file=sys.stderr)
    print(f"kiltpipe: {verdict.line()}", file=sys.stderr)
    return 0 if verdict.reproducible else EXIT_ERROR


VERBS = (
    Verb(
        "snapshots",
        "List built snapshots (oldest dump first) with their counts and indices.",
        cmd_snapshots,
    ),
    Verb(
        "limits",
        "Print every bound the project enforces on input from outside (params.yaml limits).",
        cmd_limits,
    ),
    Verb(
        "export-ks",
        "Write a snapshot's knowledge source as KILT JSONL.",
        cmd_export_ks,
        _export_ks_options,
    ),
    Verb(
        "import-ks",
        "Import a KILT knowledge-source JSONL (KILT's 2019 release) as a snapshot.",
        cmd_import_ks,
        _import_ks_options,
    ),
    Verb(
        "fetch-default",
        "Obtain the embedded default corpus (from the gensim 4.4.0 wheel).",
        cmd_fetch_default,
        _fetch_default_options,
    ),
    Verb(
        "verify-repro",
        "Check a rebuild against the committed dvc.lock (byte-reproducible outputs byte for byte) and the "
        "committed float reference (embeddings, FAISS, retrieval metrics by tolerance); or write that "
        "reference with --write-reference.",
        cmd_verify_repro,
        _verify_repro_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
