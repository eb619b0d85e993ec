"""MkDocs hook: the pictures and the CLI reference are generated from the code at build time.

``<!-- generated:asset-graph -->``, ``<!-- generated:layers -->``, ``<!-- generated:layout -->`` and
``<!-- generated:cli -->`` in a page are replaced by the asset graph of ``orchestration.definitions``, the
layering contract and the package tree of ``orchestration.architecture``, and the ``--help`` of every
``kiltpipe`` verb.
"""

from __future__ import annotations

import argparse
from typing import Any


def _fenced(kind: str, text: str) -> str:
    return f"```{kind}\n{text.rstrip()}\n```"


def _cli_reference() -> str:
    from orchestration.cli import build_parser

    parser = build_parser()
    sections = [_fenced("text", parser.format_help())]
    for action in parser._actions:  # argparse keeps its subcommands here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                sections.append(f"### `kiltpipe {verb}`\n\n" + _fenced("text", sub.format_help()))
    return "\n\n".join(sections)


def _generated() -> dict[str, str]:
    from orchestration.architecture import asset_graph_mermaid, layers_mermaid, layout
    from orchestration.definitions import defs

    return {
        "<!-- generated:asset-graph -->": _fenced("mermaid", asset_graph_mermaid(defs)),
        "<!-- generated:layers -->": _fenced("mermaid", layers_mermaid()),
        "<!-- generated:layout -->": _fenced("text", layout()),
        "<!-- generated:cli -->": _cli_reference(),
    }


_CACHE: dict[str, str] = {}


def on_page_markdown(markdown: str, **_: Any) -> str:
    if "<!-- generated:" not in markdown:
        return markdown
    if not _CACHE:
        _CACHE.update(_generated())
    for marker, text in _CACHE.items():
        markdown = markdown.replace(marker, text)
    return markdown
