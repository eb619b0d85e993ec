"""``kiltpipe export-hf`` and ``export-beir``: a built snapshot handed to the tools researchers use."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from assets.storage import resolve_snapshot
from orchestration.cli.arguments import positive_int
from orchestration.cli.common import Verb, add_snapshot, data_dir_of, emit

__all__ = ["VERBS", "cmd_export_beir", "cmd_export_hf"]


def _export_hf_options(parser: argparse.ArgumentParser) -> None:
    add_snapshot(parser)
    parser.add_argument(
        "--out", required=True, help="repository folder (an earlier export there is replaced)"
    )
    parser.add_argument(
        "--max-shard-mb",
        type=positive_int,
        help="Parquet file size limit in MB (default: the exporter's)",
    )
    parser.add_argument(
        "--push",
        metavar="ORG/NAME",
        help="then upload it as this Hub dataset (token: $HF_TOKEN or `hf auth login`)",
    )
    parser.add_argument("--private", action="store_true", help="with --push: create the dataset private")


def cmd_export_hf(args: argparse.Namespace) -> int:
    from assets.exports import export_huggingface, push_to_hub

    paths = resolve_snapshot(data_dir_of(args), args.snapshot)
    limit = {"max_shard_bytes": args.max_shard_mb * 10**6} if args.max_shard_mb else {}
    report = export_huggingface(paths, Path(args.out), **limit)
    summary = report.metadata()
    summary["configs"] = {name: {"rows": c.rows, "bytes": c.bytes} for name, c in report.configs.items()}
    if args.push:
        summary["pushed"] = push_to_hub(args.out, args.push, private=args.private)
    emit(summary)
    return 0


def _export_beir_options(parser: argparse.ArgumentParser) -> None:
    from assets.exports import BEIR_COLLECTIONS

    add_snapshot(parser)
    parser.add_argument("--dataset", required=True, help="a dataset mapped onto the snapshot, e.g. nq")
    parser.add_argument("--split", action="append", help="only this split (repeatable; default: every split)")
    parser.add_argument("--out", required=True, help="BEIR folder (an earlier export there is replaced)")
    parser.add_argument(
        "--collection",
        choices=BEIR_COLLECTIONS,
        default="text",
        help="corpus: the text passages (default, KILT-comparable), or both: + every other collection's "
        "passages a search of both ranks (tables and infoboxes, the KB's)",
    )


def cmd_export_beir(args: argparse.Namespace) -> int:
    from assets.exports import export_beir

    paths = resolve_snapshot(data_dir_of(args), args.snapshot)
    report = export_beir(
        paths, args.dataset, Path(args.out), splits=args.split or None, collection=args.collection
    )
    emit({**report.metadata(), "splits": [asdict(split) for split in report.splits]})
    return 0


VERBS = (
    Verb(
        "export-hf",
        "Write a snapshot as a Hugging Face dataset repository (Parquet shards of passages, pages, redirects "
        "and every remapped split, and a dataset card), for datasets.load_dataset(DIR, CONFIG).",
        cmd_export_hf,
        _export_hf_options,
    ),
    Verb(
        "export-beir",
        "Write a remapped dataset in BEIR's layout (corpus.jsonl, queries.jsonl, qrels/<split>.tsv and the "
        "page-level qrels-page/<split>.tsv), for BEIR's GenericDataLoader and MTEB.",
        cmd_export_beir,
        _export_beir_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
