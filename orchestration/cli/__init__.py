"""kiltpipe: one CLI for building and querying snapshots.

``kiltpipe --help`` lists the verbs. JSON on stdout; logs on stderr; exit 0 success, 1 not found, 2 bad
input or a failed build.

A module per capability, each declaring its verbs and their options beside the handlers (``VERBS``):
:mod:`.build` (``build``), :mod:`.fetch` (``fetch``), :mod:`.snapshots` (``snapshots``, ``limits``,
``export-ks``, ``import-ks``, ``fetch-default``, ``verify-repro``), :mod:`.lookups` (``page``, ``qid``,
``passage``, ``tables``, ``span``, ``provenance``, ``cites``), :mod:`.datasets` (``map``, ``remap``,
``restore-stores``, ``eval``), :mod:`.search` (``search``, ``serve``), :mod:`.exports` (``export-hf``,
``export-beir``); what they share in :mod:`.common`, the option types in :mod:`.arguments`;
:mod:`.parser` only assembles the verbs.
"""

from orchestration.cli.main import main
from orchestration.cli.parser import build_parser

__all__ = ["build_parser", "main"]
