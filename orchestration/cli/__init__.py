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

Imports: each module imports what is light at its top (settings, paths, limits, names, file helpers,
``rich``). What loads DuckDB (the store, the datasets' queries, the indices' registry and retriever, the
QA and Wikidata lookups), Dagster (the definitions, resources, launcher), FastAPI (``serve``), torch or the
JVM is imported inside the verb that needs it: every ``kiltpipe`` call parses all the verbs' options, and
importing those for each call would take ``kiltpipe --help`` from 0.6 s to 1.9 s (measured).
"""

from orchestration.cli.main import main
from orchestration.cli.parser import build_parser

__all__ = ["build_parser", "main"]
