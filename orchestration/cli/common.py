"""What every ``kiltpipe`` verb shares: JSON on stdout, one ``kiltpipe: ...`` line on stderr for an error
with its exit code, the data dir and reports dir the options name, the snapshot they name."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assets import params
from assets.storage import resolve_snapshot

if TYPE_CHECKING:
    from assets.reading import Snapshot
    from assets.storage import SnapshotPaths

__all__ = [
    "EXIT_ERROR",
    "EXIT_NOT_FOUND",
    "Verb",
    "add_indexes_and_collections",
    "add_snapshot",
    "data_dir_of",
    "emit",
    "fail",
    "open_snapshot",
    "reports_dir_of",
    "snapshot_for",
]

EXIT_NOT_FOUND = 1
"""A lookup found nothing (a page, a snapshot not built yet)."""
EXIT_ERROR = 2
"""Bad input or a failed build."""


@dataclass(frozen=True)
class Verb:
    """A ``kiltpipe`` verb: its name, its help, its handler and the options it declares (each verb module
    lists its own in ``VERBS``, beside the handlers; :mod:`.parser` only assembles them)."""

    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    options: Callable[[argparse.ArgumentParser], None] | None = None
    """Adds the verb's own options to its sub-command (None: only ``--data-dir``)."""


def add_snapshot(parser: argparse.ArgumentParser) -> None:
    """The ``--snapshot`` option of a verb that reads a built snapshot."""
    parser.add_argument("--snapshot", help="snapshot id (default: the newest)")


def add_indexes_and_collections(parser: argparse.ArgumentParser, *, indexes: str, collections: str) -> None:
    """Repeatable ``--index`` and ``--collection`` options, their choices from the registries (the help
    says what each defaults to)."""
    from assets.indexes import collection_names, index_names

    parser.add_argument("--index", action="append", choices=index_names(), help=f"repeatable ({indexes})")
    parser.add_argument(
        "--collection", action="append", choices=collection_names(), help=f"repeatable ({collections})"
    )


def emit(payload: Any) -> None:
    """``payload`` as indented JSON on stdout."""
    json.dump(payload, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


MESSAGE_CHARS = 2000
"""The most characters of an error message printed (one that quotes a huge argument is cut, and says so)."""


def fail(message: str, code: int = EXIT_ERROR) -> int:
    """``kiltpipe: message`` on stderr (at most :data:`MESSAGE_CHARS` characters); returns ``code`` (the
    verb's exit code)."""
    if len(message) > MESSAGE_CHARS:
        message = f"{message[:MESSAGE_CHARS]}... ({len(message) - MESSAGE_CHARS:,} more characters not shown)"
    print(f"kiltpipe: {message}", file=sys.stderr)
    return code


def data_dir_of(args: argparse.Namespace) -> Path:
    """``--data-dir`` as given, else ``data_dir`` of params.yaml (or ``$KILT_DATA_DIR``)."""
    return Path(args.data_dir) if args.data_dir else params.data_dir()


def reports_dir_of(args: argparse.Namespace, data_dir: Path) -> Path:
    """``--reports-dir`` as given (never in a snapshot's own data), else ``datasets.reports_dir`` under the
    data dir."""
    from assets.storage import check_output_target

    if args.reports_dir:
        return check_output_target(args.reports_dir, "--reports-dir")
    return params.reports_dir(data_dir)


def snapshot_for(args: argparse.Namespace, paths: SnapshotPaths | None = None) -> Snapshot:
    """``paths``, else the snapshot ``--snapshot`` names (default: the newest), opened for searching (its
    retriever, which reads hits' text from the store when it is built, else from the Parquet). The lookup
    verbs open theirs with :meth:`~assets.reading.Snapshot.open`, which first checks the stores."""
    from assets.reading import Snapshot

    return Snapshot(paths or resolve_snapshot(data_dir_of(args), args.snapshot))


def open_snapshot(args: argparse.Namespace) -> Snapshot:
    """The snapshot ``--snapshot`` names (default: the newest), opened for lookups: its stores checked
    first (:meth:`~assets.reading.Snapshot.open`; the read package loads DuckDB, so it is imported here,
    when a verb runs)."""
    from assets.reading import Snapshot

    return Snapshot.open(data_dir_of(args), args.snapshot)
