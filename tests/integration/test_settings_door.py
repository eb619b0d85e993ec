"""Settings come in through the door (issue 64, part 1): a :class:`~assets.reading.Snapshot` opened with
params that differ from params.yaml hands those params to every searcher and reader it opens, and no
domain module reads a params file behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets.indexes.collections import ALL, collection_built, collections_of, searcher_key
from assets.limits import LimitExceeded
from assets.params import load_params, parse_params
from assets.reading import Snapshot
from assets.storage import SnapshotPaths

FIXTURES = Path(__file__).resolve().parents[2] / "assets" / "datasets" / "fixtures"
HOTPOTQA = FIXTURES / "hotpotqa-dev-excerpt-kilt.jsonl"
BOUND = 4096

OTHER = {
    "limits": {
        "search": {"max_query_terms": 3, "max_k": 7},
        "wikidata": {"max_hops": 2, "max_text_chars": 40},
    },
    "indexes": {"bm25": {"k1": 1.7, "b": 0.3}},
}
"""Params unlike params.yaml's: a query of at most three terms, seven hits, other BM25 scoring, a shorter
KB reach."""


def test_a_snapshot_hands_its_own_params_to_every_reader(demo_build) -> None:
    params, yaml = parse_params(OTHER, "test"), load_params()
    assert params.limits.search != yaml.limits.search and params.indexes.bm25 != yaml.indexes.bm25
    assert params.limits.wikidata != yaml.limits.wikidata
    paths = demo_build.paths
    with Snapshot(paths, params) as snapshot:
        retriever = snapshot.retriever
        assert retriever.limits == params.limits.search
        keys = ["bm25"] + [
            searcher_key("bm25", name)
            for name in collections_of(paths, ALL)
            if name != "text" and collection_built(paths, "bm25", name)
        ]
        assert len(keys) > 1, keys  # the text passages' index and at least one other collection's
        for key in keys:
            searcher = retriever.searcher(key)
            assert (searcher.k1, searcher.b, searcher.max_terms) == (1.7, 0.3, 3), key
        # the limits act: a fourth term is cut (and said), an eighth hit refused before anything opens
        hits = retriever.batch_search("bm25", ["albert einstein physics relativity nobel"], 5)
        assert len(hits[0]) == 5
        with pytest.raises(LimitExceeded, match="max_k"):
            retriever.batch_search("dense", ["albert einstein"], 8)
        kb = snapshot.kb
        assert kb.limits == params.limits.wikidata
        assert kb.finder().limits == params.limits.wikidata  # the path search's reach
        with pytest.raises(LimitExceeded, match="max_text_chars"):
            kb.link("Albert Einstein was a theoretical physicist born in the German Empire")
        assert snapshot.answerer.retriever is retriever  # the QA answerer searches through the same one
    with Snapshot(paths) as default:  # without params: params.yaml's
        assert default.retriever.limits == yaml.limits.search
        assert default.retriever.bm25.k1 == yaml.indexes.bm25.k1


def test_the_cli_and_a_build_hand_params_yaml_line_bound_to_the_dataset_reader(
    kiltpipe, tmp_path: Path, small_excerpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``limits.input.max_line_bytes`` of params.yaml reaches the dataset reader through ``kiltpipe map``
    and through a build's ``remapped_datasets`` (the reader itself reads no params file): a real HotpotQA
    record padded past the bound (JSON whitespace) is a counted skip named by its line."""
    data = tmp_path / "data"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 0, err
    first, *rest = HOTPOTQA.read_text(encoding="utf-8").splitlines()
    padded = first[:-1] + " " * BOUND + "}"  # the same record, past the bound
    assert json.loads(padded) == json.loads(first)
    dataset = tmp_path / "hotpotqa-dev-kilt.jsonl"
    dataset.write_text("\n".join([padded, *rest]) + "\n", encoding="utf-8")
    settings = tmp_path / "params.yaml"
    settings.write_text(
        f"limits:\n  input:\n    max_line_bytes: {BOUND}\n"
        f"datasets:\n  files:\n    - {{path: {dataset}, format: kilt, dataset: hotpotqa, split: dev}}\n"
    )
    monkeypatch.setenv("KILT_PARAMS", str(settings))
    load_params.cache_clear()
    try:
        code, out, err = kiltpipe("map", dataset, "--data-dir", data, "--format", "kilt")
        assert code == 0, err
        assert f"{dataset}:1: a line over {BOUND:,} bytes (limits.input.max_line_bytes)" in err, err
        assert json.loads(out)["records_in"] == len(rest)
        code, out, err = kiltpipe("build", "--data-dir", data, "--select", "key:remapped_datasets", "--quiet")
        assert code == 0, err
        snapshot = json.loads(out)["snapshot_id"]
        [summary] = json.loads((SnapshotPaths(data, snapshot).datasets / "mapping_summary.json").read_text())
        assert (summary["records_in"], summary["read_problems"]) == (len(rest), 1), summary
    finally:
        monkeypatch.undo()
        load_params.cache_clear()
