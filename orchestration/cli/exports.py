"""``kiltpipe export-hf`` and ``export-beir``: a built snapshot handed to the tools researchers use."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from orchestration.cli.common import data_dir_of, emit

__all__ = ["cmd_export_beir", "cmd_export_hf"]


def cmd_export_hf(args: argparse.Namespace) -> int:
    from assets.exports.huggingface import export_huggingface, push_to_hub
    from assets.storage import resolve_snapshot

    paths = resolve_snapshot(data_dir_of(args), args.snapshot)
    report = export_huggingface(paths, Path(args.out), max_shard_bytes=args.max_shard_mb * 10**6)
    summary = report.metadata()
    summary["configs"] = {name: {"rows": c.rows, "bytes": c.bytes} for name, c in report.configs.items()}
    if args.push:
        summary["pushed"] = push_to_hub(args.out, args.push, private=args.private)
    emit(summary)
    return 0


def cmd_export_beir(args: argparse.Namespace) -> int:
    from assets.exports.beir import export_beir
    from assets.storage import resolve_snapshot

    paths = resolve_snapshot(data_dir_of(args), args.snapshot)
    report = export_beir(
        paths, args.dataset, Path(args.out), splits=args.split or None, collection=args.collection
    )
    emit({**report.metadata(), "splits": [asdict(split) for split in report.splits]})
    return 0
