"""What the Dagster UI shows is true: every path a finished build records exists (the published files,
not the staging folder that is gone), counts agree between assets, floats are rounded for reading, no
value is empty, and descriptions are plain text or Markdown (no reStructuredText roles)."""

from __future__ import annotations

import re
from pathlib import Path

from dagster import AssetKey

from assets.charts import shortened
from orchestration.resources import shown_float

RST = re.compile(r"``|:(meth|class|func|mod|attr|data|ref|obj):`")


def test_every_path_a_finished_build_records_exists(demo_build) -> None:
    assets = demo_build.summary["assets"]
    recorded = {
        f"{asset}.{key}": value
        for asset, metadata in assets.items()
        for key, value in metadata.items()
        if key.endswith("_path")
    }
    expected = {
        "knowledge_source.snapshot_path", "passages.passages_path", "passage_collection.collection_path",
        "passage_tsv.tsv_path", "bm25_index.index_path", "dense_index.embeddings_path",
        "dense_index.index_path", "provenance_store.store_path", "remapped_datasets.datasets_path",
    }  # fmt: skip
    assert expected <= set(recorded), sorted(recorded)
    missing = {key: value for key, value in recorded.items() if not Path(value).exists()}
    assert missing == {} and not [v for v in recorded.values() if "/.staging/" in v]
    root = demo_build.paths.root
    assert recorded["provenance_store.store_path"] == str(root / "provenance.duckdb")
    relative = {  # the same paths relative to the data dir, for a data dir that moved
        f"{asset}.{key.removesuffix('_in_data_dir')}": value
        for asset, metadata in assets.items()
        for key, value in metadata.items()
        if key.endswith("_path_in_data_dir")
    }
    assert set(relative) == {key for key, value in recorded.items() if "/snapshots/" in value}
    assert all(str(demo_build.data_dir / value) == recorded[key] for key, value in relative.items())


def test_metadata_reads_as_a_user_reads_it(demo_build) -> None:
    assets = demo_build.summary["assets"]
    values = [(f"{a}.{k}", v) for a, metadata in assets.items() for k, v in metadata.items()]
    assert [key for key, value in values if value == ""] == []
    unrounded = [(key, v) for key, v in values if isinstance(v, float) and v != shown_float(v)]
    assert unrounded == []
    assert assets["provenance_store"]["paragraphs"] == assets["knowledge_source"]["paragraphs"]
    assert (
        assets["provenance_store"]["paragraph_rows_with_titles"]
        == assets["knowledge_source"]["paragraphs"] + assets["knowledge_source"]["pages"]
    )


def test_descriptions_the_ui_shows_are_not_restructured_text() -> None:
    from orchestration.definitions import defs

    repo = defs.get_repository_def()
    texts = {f"resource {n}": r.description for n, r in repo.get_top_level_resources().items()}
    texts |= {f"asset {n.key.to_user_string()}": n.description for n in repo.asset_graph.asset_nodes}
    for job in repo.get_all_jobs():
        texts[f"job {job.name}"] = job.description
        texts |= {f"op {node.name}": node.description for node in job.graph.node_defs}
    texts |= {f"sensor {s.name}": s.description for s in repo.sensor_defs}
    texts |= {f"schedule {s.name}": s.description for s in repo.schedule_defs}
    assert len(texts) > 20
    assert {name: text for name, text in texts.items() if text and RST.search(text)} == {}


def test_previews_are_cut_at_a_word_with_an_ellipsis() -> None:
    text = "Anarchism is a political philosophy that advocates self-governed societies"
    assert shortened(text, 200) == text
    assert shortened(text, 30) == "Anarchism is a political…"
    assert len(shortened("x" * 50, 10)) == 10 and shortened("x" * 50, 10).endswith("…")


def test_page_text_is_shown_as_text_in_markdown_metadata() -> None:
    """Text from a dump (a page with ``<script>``, emphasis, a link, a table row) goes into Markdown
    metadata as character references: the UI shows it, never runs or renders it."""
    from assets.charts import markdown_text

    hostile = "<script>alert('x')</script> **bold** [link](javascript:alert(1)) | cell |\n# heading"
    shown = markdown_text(hostile)
    assert "<" not in shown and ">" not in shown and "|" not in shown and "\n" not in shown
    assert "[" not in shown and "*" not in shown and "script" in shown


def test_structured_passages_show_a_preview_and_their_columns(demo_build) -> None:
    """The UI's structured_passages: a preview of a real table and infobox with their provenance, the
    column schema, and the asset's kinds; the evaluation sits in a group of its own."""
    from assets.wikipedia.passages import STRUCTURED_SCHEMA, structured_preview
    from orchestration.definitions import defs

    preview = structured_preview(demo_build.paths.structured_parquet)
    assert "**table**" in preview and "**infobox**" in preview and "wikitext" in preview
    graph = defs.resolve_asset_graph()
    nodes = [graph.get(key) for key in graph.get_all_asset_keys()]
    assert [n.key.to_user_string() for n in nodes if not n.kinds or not n.owners] == []
    assert graph.get(AssetKey("structured_passages")).kinds == {"parquet"}
    assert graph.get(AssetKey("retrieval_evaluation")).group_name == "evaluation"
    assets = demo_build.summary["assets"]
    columns = {
        name: [c["name"] for c in assets[name]["dagster/column_schema"]["columns"]]
        for name in ("knowledge_source", "passages", "structured_passages")
    }
    assert columns["structured_passages"] == STRUCTURED_SCHEMA.names
    assert {"passage_id", "text", "title"} <= set(columns["passages"])
    assert {"wikipedia_id", "wikipedia_title", "text"} <= set(columns["knowledge_source"])


def test_metadata_paths_are_absolute_from_any_working_directory(tmp_path: Path, monkeypatch) -> None:
    """A run launched from the UI (data dir ``data``, relative) records the same absolute paths as the CLI."""
    from orchestration.resources import path_metadata

    monkeypatch.chdir(tmp_path)
    recorded = path_metadata(Path("data") / "reports" / "enwiki-20160501" / "retrieval").value
    assert recorded == str(tmp_path / "data" / "reports" / "enwiki-20160501" / "retrieval")
