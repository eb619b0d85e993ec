"""The project's shape, from the code: the layering contract and the pictures the docs show.

:data:`LAYERS` is the contract ``tests/unit/test_layering.py`` enforces (imports run one way, down the
layers); :func:`asset_graph_mermaid` and :func:`layers_mermaid` draw the asset graph and the layers for the
docs site (``docs/hooks.py``) and the README, so no picture is drawn by hand.

``python -m orchestration.architecture`` prints both pictures.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster import Definitions

LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (
        0,
        "base",
        (
            "assets",
            "assets.params",
            "assets.storage",
            "assets.snapshot_ids",
            "assets.charts",
            "assets.worker_pools",
            "assets.incremental",
            "assets.languages",
            "assets.check_outcome",
        ),
    ),
    (1, "wikipedia.schema", ("assets.wikipedia.schema",)),
    (1, "wikipedia.dump", ("assets.wikipedia.dump",)),
    (1, "wikipedia.articles", ("assets.wikipedia.articles",)),
    (2, "wikipedia.wikitext", ("assets.wikipedia.wikitext",)),
    (2, "wikipedia.html", ("assets.wikipedia.html",)),
    (3, "wikipedia.fetch", ("assets.wikipedia.fetch",)),
    (3, "wikipedia.pages", ("assets.wikipedia.pages",)),
    (3, "wikipedia.passages", ("assets.wikipedia.passages",)),
    (3, "wikipedia", ("assets.wikipedia",)),
    (3, "wikidata", ("assets.wikidata",)),
    (4, "store", ("assets.provenance_store",)),
    (5, "indexes", ("assets.indexes",)),
    (5, "datasets", ("assets.datasets",)),
    (6, "exports", ("assets.exports",)),
    (6, "qa", ("assets.qa",)),
    (7, "reading", ("assets.reading",)),
    (8, "orchestration", ("orchestration",)),
]
"""``(rank, name, module prefixes)``, lowest first. A module may import its own layer and the layers of a
lower rank; layers that share a rank do not import each other (``indexes`` and ``datasets``; the Wikipedia
domain's packages: ``schema``, ``dump`` and ``articles`` (what a converted article is: the last pass
both converters share, KILT's text styles, tables and infoboxes), then the two converters ``wikitext``
and ``html`` over ``articles`` and beside each other, then ``fetch``, ``pages`` and ``passages`` over
them). ``reading``, the one door to a built snapshot, sits above every domain. Every domain is plain
Python; its Dagster assets, checks and configs are ``orchestration.assets.<domain>``, above every
domain."""


def layer_of(module: str) -> tuple[int, str]:
    """``(rank, name)`` of a module: the layer with the longest prefix of its dotted name."""
    best: tuple[int, str, str] | None = None
    for rank, name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[2])
            ):
                best = (rank, name, prefix)
    if best is None:
        raise LookupError(f"{module} is in no layer of orchestration.architecture.LAYERS: add it there")
    return best[0], best[1]


def layers_mermaid() -> str:
    """The layers as a Mermaid flowchart, highest on top, arrows pointing at what a layer may import."""
    lines = ["flowchart TB"]
    ranks = sorted({rank for rank, _, _ in LAYERS}, reverse=True)
    for _rank, name, prefixes in sorted(LAYERS, key=lambda layer: -layer[0]):
        shown = ", ".join(p.removeprefix("assets.") if p != "assets" else "assets/__init__" for p in prefixes)
        lines.append(f'    {name}["<b>{name}</b><br/>{shown}"]')
    for upper, lower in itertools.pairwise(ranks):
        for _, above, _ in (layer for layer in LAYERS if layer[0] == upper):
            for _, below, _ in (layer for layer in LAYERS if layer[0] == lower):
                lines.append(f"    {above} --> {below}")
    return "\n".join(lines)


def asset_graph_mermaid(definitions: Definitions) -> str:
    """The assets of ``definitions`` by group, each with its dependencies and its number of checks."""
    graph = definitions.resolve_asset_graph()
    keys = sorted(graph.get_all_asset_keys(), key=lambda key: key.to_user_string())
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(graph.get(key).group_name or "default", []).append(key.to_user_string())
    lines = ["flowchart LR"]
    order = ("wikipedia", "datasets", "indexes")
    for group in [g for g in order if g in groups] + sorted(set(groups) - set(order)):
        lines.append(f"    subgraph {group}")
        for name in groups[group]:
            checks = len(graph.get(next(k for k in keys if k.to_user_string() == name)).check_keys)
            label = f"{name}<br/><i>{checks} check{'s' if checks > 1 else ''}</i>" if checks else name
            lines.append(f'        {name}["{label}"]')
        lines.append("    end")
    for key in keys:
        for parent in sorted(graph.get(key).parent_keys, key=lambda k: k.to_user_string()):
            lines.append(f"    {parent.to_user_string()} --> {key.to_user_string()}")
    return "\n".join(lines)


REPO = Path(__file__).resolve().parents[1]
LAYOUT_ROOTS = ("orchestration", "assets", "support", "benchmarks")
"""The packages :func:`layout` draws, in this order."""


def _summary(package: Path) -> str:
    """The summary line of a package's docstring (PEP 257), without its final period."""
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return docstring.split("\n", 1)[0].rstrip(".")


README_DEPTH = 2
"""The README shows the packages of at most two folders (the domains); docs/contributing.md every one."""


def layout(modules: bool = True, repo: Path = REPO, depth: int | None = None) -> str:
    """The packages of the code as a tree, each with the first sentence of its docstring (and, with
    ``modules``, its modules; with ``depth``, only packages of at most that many folders): what README.md
    (the domains, ``depth=2``) and the contributing page (every package) show, so neither is drawn by hand."""
    lines = []
    for root in LAYOUT_ROOTS:
        packages = sorted(
            (path.parent for path in (repo / root).rglob("__init__.py") if "__pycache__" not in path.parts),
            key=lambda path: path.relative_to(repo).parts,
        )
        for package in packages:
            if depth is not None and len(package.relative_to(repo).parts) > depth:
                continue
            name = f"{package.relative_to(repo).as_posix()}/"
            lines.append(f"{name:<31}{_summary(package)}")
            if modules:
                names = sorted(p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__"))
                for row in _wrapped(names, 80):
                    lines.append(f"{'':<33}{row}")
    return "\n".join(lines)


def _wrapped(names: list[str], width: int) -> list[str]:
    rows, row = [], ""
    for name in names:
        if row and len(row) + 2 + len(name) > width:
            rows.append(row)
            row = ""
        row = f"{row}  {name}" if row else name
    return [*rows, row] if row else rows


def main() -> None:
    from orchestration.definitions import defs

    print("```mermaid\n" + asset_graph_mermaid(defs) + "\n```\n")
    print("```mermaid\n" + layers_mermaid() + "\n```\n")
    print("```\n" + layout(modules=False, depth=README_DEPTH) + "\n```")


if __name__ == "__main__":
    main()
