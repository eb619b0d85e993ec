"""kiltpipe: one CLI for building and querying snapshots.

``kiltpipe``: one CLI for building and querying snapshots (``kiltpipe --help``). JSON on stdout; logs on
stderr; exit 0 success, 1 not found, 2 bad input or a failed build.

A module per capability: :mod:`.build` (``build``), :mod:`.snapshots` (``snapshots``, ``fetch-default``,
``export-ks``, ``import-ks``, ``verify-repro``), :mod:`.lookups` (``page``, ``qid``, ``passage``, ``span``,
``provenance``, ``cites``), :mod:`.datasets` (``map``, ``remap``, ``restore-stores``, ``eval``),
:mod:`.search` (``search``, ``serve``), :mod:`.exports` (``export-hf``, ``export-beir``); what they share in
:mod:`.common`, the option types in :mod:`.arguments`, the parser in :mod:`.parser`.
"""

from orchestration.cli.main import main
from orchestration.cli.parser import build_parser

__all__ = ["build_parser", "main"]
