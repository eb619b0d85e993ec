"""``kiltpipe``: one CLI for building and querying snapshots. JSON on stdout; logs on stderr.

Exit codes: 0 success, 1 not found, 2 bad input or failed build."""

from __future__ import annotations

import logging
import sys

from assets.snapshot_ids import InvalidSnapshotId
from orchestration.cli.common import EXIT_NOT_FOUND, fail
from orchestration.cli.parser import build_parser

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("alembic", "faiss.loader", "sentence_transformers", "distributed"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:  # a bad option is argparse's message naming it (exit 2), also when main is called in-process
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    args.command_line = " ".join(["kiltpipe", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.handler(args)
    except OSError as exc:
        if exc.filename is not None:  # an input file the user named: bad input, with the file named
            return fail(f"{exc.filename}: {exc.strerror or exc} (check the path)")
        if isinstance(exc, FileNotFoundError):  # our own "not built yet" errors carry their advice
            return fail(str(exc), EXIT_NOT_FOUND)
        return fail(f"{type(exc).__name__}: {exc}")
    except LookupError as exc:
        return fail(str(exc.args[0] if exc.args else exc), EXIT_NOT_FOUND)
    except (ValueError, RuntimeError) as exc:
        return fail(str(exc) if isinstance(exc, InvalidSnapshotId) else f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
