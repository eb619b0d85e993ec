"""The index stages of dvc.yaml are what the index and collection registries say (issue 45)."""

from __future__ import annotations

from pathlib import Path

import yaml

from assets.indexes import register_searcher, unregister_searcher
from assets.indexes.bm25 import BM25
from assets.indexes.registry import SearcherType
from orchestration.dvc_stages import MARKER, index_stages

REPO = Path(__file__).resolve().parents[2]


def test_dvc_yaml_holds_the_generated_index_stages() -> None:
    text = (REPO / "dvc.yaml").read_text(encoding="utf-8")
    assert MARKER in text, "dvc.yaml lost the line above its generated index stages"
    assert text[text.index(MARKER) :] == index_stages(), (
        "dvc.yaml's index stages differ from the registries: run `python -m orchestration.dvc_stages --write`"
    )
    stages = yaml.safe_load(text)["stages"]
    assert {"bm25_index", "dense_index", "structured_indexes", "retrieval_evaluation"} <= set(stages)


def test_a_registered_index_type_gets_its_stages() -> None:
    """A new type with an asset, outputs and a one-call build: a stage of its own over the text passages, its
    outputs in every other collection's stage, and the evaluation reads them; unregistered, it is gone."""
    toy = SearcherType(
        "toy",
        "a toy index",
        BM25.open,
        asset="toy_index",
        index_dir=lambda paths: paths.indexes / "toy",
        build=BM25.build,
        sources=("assets/indexes/toy.py",),
        dvc_outs=("toy",),
    )
    register_searcher(toy)
    try:
        stages = yaml.safe_load(index_stages())
        assert stages["toy_index"]["outs"] == [
            "${data_dir}/snapshots/${knowledge_source.snapshot}/indexes/toy"
        ]
        assert "assets/indexes/toy.py" in stages["toy_index"]["deps"]
        structured = "${data_dir}/snapshots/${knowledge_source.snapshot}/indexes/structured/toy"
        assert structured in stages["structured_indexes"]["outs"]
        assert structured in stages["retrieval_evaluation"]["deps"]
        assert "indexes.toy" in stages["structured_indexes"]["params"]
    finally:
        unregister_searcher("toy")
    assert "toy" not in index_stages()
