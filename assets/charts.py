"""Small charts and tables for reports and the Dagster UI (matplotlib, headless)."""

from __future__ import annotations

import base64
import io
from pathlib import Path


def bar_chart_png(counts: dict[str, float], *, title: str, xlabel: str, ylabel: str) -> bytes:
    """A bar chart of ``counts`` (keys in the given order) as PNG bytes."""
    import matplotlib  # imported on first use: it costs every process that loads the definitions ~1 s

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.2), dpi=100)
    axes.bar(list(counts), list(counts.values()), color="#3b6ea8")
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.tick_params(axis="x", labelrotation=45, labelsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word's end, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.") + "…"


_MARKDOWN_SPECIAL = str.maketrans({c: f"&#{ord(c)};" for c in "<>&|*_`[]#\\"} | {"\n": " ", "\r": " "})


def markdown_text(text: object) -> str:
    """``text`` as inert Markdown on one line: HTML (``<script>``), emphasis, links, tables and headings
    written as character references, so page text from a dump shows as text in the UI and never as
    markup."""
    return str(text).translate(_MARKDOWN_SPECIAL)


def markdown_table(rows: list[dict[str, object]]) -> str:
    """A Markdown table of ``rows`` written by the project (counts, names); text from a dump goes through
    :func:`markdown_text` first."""
    if not rows:
        return "(empty)"
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in rows]
    return "\n".join(lines)


def markdown_image(png: bytes, alt: str) -> str:
    """Inline PNG for Markdown metadata (the Dagster UI renders data URIs)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


def save_png(png: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path
