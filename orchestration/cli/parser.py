"""The ``kiltpipe`` argument parser, assembled from the verbs each module of this package declares."""

from __future__ import annotations

import argparse

from orchestration.cli import build, datasets, exports, fetch, kb, lookups, qa, search, snapshots
from orchestration.cli.arguments import refuse_empty_strings
from orchestration.cli.common import Verb

__all__ = ["VERBS", "build_parser"]

VERBS: tuple[Verb, ...] = (
    *build.VERBS,
    *fetch.VERBS,
    *snapshots.VERBS,
    *lookups.VERBS,
    *kb.VERBS,
    *qa.VERBS,
    *datasets.VERBS,
    *search.VERBS,
    *exports.VERBS,
)
"""Every verb, in the order ``kiltpipe --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """A sub-command per verb with ``--data-dir`` and the verb's own options; every plain string option
    refuses an empty value (:func:`~orchestration.cli.arguments.refuse_empty_strings`)."""
    parser = argparse.ArgumentParser(
        prog="kiltpipe",
        description="Build KILT-style knowledge sources from Wikipedia dumps and query them. "
        "Results are JSON on stdout; progress and logs go to stderr.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        command = sub.add_parser(verb.name, help=verb.help, description=verb.help)
        command.add_argument(
            "--data-dir", help="artifact root (default: data_dir of params.yaml, or $KILT_DATA_DIR)"
        )
        if verb.options is not None:
            verb.options(command)
        command.set_defaults(handler=verb.handler)
    refuse_empty_strings(parser)
    return parser
