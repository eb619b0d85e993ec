"""The README stays an entry page (<= 12 KB) whose asset graph is the one the code defines; the docs
site's generated parts render (``mkdocs build --strict`` itself runs in ``make test``)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_is_an_entry_page() -> None:
    readme = (REPO / "README.md").read_bytes()
    assert len(readme) <= 12 * 1024, f"README.md is {len(readme)} bytes: move detail into docs/"
    text = readme.decode("utf-8")
    for heading in ("## The two commands", "## What you get", "## Layout", "## Extending", "## Figures"):
        assert heading in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / link).is_file(), f"README links to a missing page: {link}"


def test_readme_asset_graph_is_generated_from_the_definitions() -> None:
    from orchestration.architecture import asset_graph_mermaid
    from orchestration.definitions import defs

    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- asset-graph:start -->\n```mermaid\n(.*?)\n```\n<!-- asset-graph:end -->", text, re.S
    )
    assert block, "README.md lost its generated asset graph"
    assert block.group(1) == asset_graph_mermaid(defs), (
        "the README's asset graph differs from the code: paste `python -m orchestration.architecture`"
    )


def test_generated_parts_of_the_docs_site() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (
        "a\n<!-- generated:asset-graph -->\nb\n<!-- generated:layers -->\n<!-- generated:layout -->\n"
        "<!-- generated:cli -->\n"
    )
    rendered = hooks.on_page_markdown(page)
    assert "<!-- generated:" not in rendered
    assert "wikipedia_dump --> knowledge_source" in rendered and "store --> wikipedia" in rendered
    assert "### `kiltpipe build`" in rendered and "--select" in rendered
    assert "assets/indexes/bm25/" in rendered and "searcher  settings" in rendered
    used = {
        m
        for path in (REPO / "docs").rglob("*.md")
        for m in re.findall(r"<!-- generated:[a-z-]+ -->", path.read_text())
    }
    assert used == {
        "<!-- generated:asset-graph -->",
        "<!-- generated:layers -->",
        "<!-- generated:layout -->",
        "<!-- generated:cli -->",
    }


def test_readme_layout_is_generated_from_the_tree() -> None:
    """The README's layout is the package tree with each package's summary line, as the code has it."""
    from orchestration.architecture import README_DEPTH, layout

    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- layout:start -->\n```\n(.*?)\n```\n<!-- layout:end -->", text, re.S)
    assert block, "README.md lost its generated layout"
    assert block.group(1) == layout(modules=False, depth=README_DEPTH), (
        "the README's layout differs from the tree: paste `python -m orchestration.architecture`'s last block"
    )
