"""The Dagster definitions: load, materialize end to end, and blocking checks that stop the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from assets.storage import build_state, resolve_snapshot
from orchestration.definitions import build_definitions, defs
from orchestration.resources import SNAPSHOTS, PipelineSettings
from support.dump_variants import later_snapshot, page_with_title, read_xml, set_field, split_dump, write_dump

EXPECTED_ASSETS = {
    "wikipedia_dump",
    "knowledge_source",
    "knowledge_source_jsonl",
    "passages",
    "passage_collection",
    "passage_tsv",
    "structured_passages",
    "provenance_store",
    "remapped_datasets",
    "bm25_index",
    "dense_index",
    "structured_indexes",
    "retrieval_evaluation",
    "wikidata_entities",
    "wikidata_statements",
    "kb_facts",
    "kb_indexes",
    "kb_paths",
    "qa_pairs",
    "qa_indexes",
}
EXPECTED_CHECKS = {
    "unique_ids_and_titles",
    "no_empty_article",
    "anchors_inside_paragraphs",
    "redirects_resolved_or_counted",
    "no_empty_passage",
    "no_passage_over_limit",
    "passage_ids_unique",
    "every_page_has_passage",
    "mapped_fraction_floor",
    "bm25_document_count",
    "bm25_self_retrieval",
    "dense_document_count",
    "dense_self_retrieval",
    "dense_approximate_recall",
    "structured_index_counts",
    "statements_consistent",
    "facts_consistent",
    "kb_index_counts",
    "qa_pairs_spans",
    "qa_index_counts",
}


def _instance_with(snapshot: str, instance: DagsterInstance | None = None) -> DagsterInstance:
    instance = instance or DagsterInstance.ephemeral()
    if not instance.has_dynamic_partition(SNAPSHOTS.name, snapshot):
        instance.add_dynamic_partitions(SNAPSHOTS.name, [snapshot])
    return instance


def _run(data_dir: Path, dump: Path, snapshot: str, instance: DagsterInstance | None = None, **kwargs):
    job = build_definitions(PipelineSettings(data_dir=str(data_dir))).resolve_job_def("build_all")
    run_config = {"ops": {"wikipedia_dump": {"config": {"dump_paths": [str(dump)]}}}}
    return job.execute_in_process(
        run_config=run_config,
        instance=_instance_with(snapshot, instance),
        partition_key=snapshot,
        raise_on_error=False,
        **kwargs,
    )


@pytest.fixture(scope="module")
def end_to_end(demo_build):
    """Every asset of the excerpt materialized once: the session's ``make demo`` build (its summary holds
    each asset's metadata and each check's outcome)."""
    return demo_build


@pytest.fixture
def instance_on_copy(demo_build, tmp_path: Path):
    """A private copy of the demo build's data dir and an instance that knows its partition: for runs
    that change what they build on."""
    data_dir = demo_build.copy(tmp_path / "data")
    return data_dir, _instance_with("enwiki-20160501")


def test_definitions_load() -> None:
    graph = defs.resolve_asset_graph()
    assert {key.to_user_string() for key in graph.get_all_asset_keys()} >= EXPECTED_ASSETS
    check_specs = {key.name: graph.get_check_spec(key) for key in graph.asset_check_keys}
    assert set(check_specs) >= EXPECTED_CHECKS
    assert all(check_specs[name].blocking for name in EXPECTED_CHECKS)
    assert defs.resolve_job_def("build_all") is not None


def test_materialize_end_to_end(end_to_end) -> None:
    summary = end_to_end.summary
    assert summary["success"]
    assert {name: check["passed"] for name, check in summary["checks"].items()} == dict.fromkeys(
        EXPECTED_CHECKS, True
    )
    assert set(summary["assets"]) == EXPECTED_ASSETS
    meta = summary["assets"]["knowledge_source"]
    assert meta["pages"] == 106 and meta["redirects"] == 99
    assert meta["skipped_by_reason"] == {"non_main_namespace": 1}
    assert meta["pages_per_second"] > 0 and meta["xml_bytes"] == 6_089_746
    assert (meta["parse_steps"], meta["parse_steps_resumed"], meta["compression"]) == (1, 0, "bz2")
    assert meta["residual_markup_fraction"] <= 0.005
    export = end_to_end.paths.kilt_jsonl
    lines = export.read_text().splitlines()
    assert len(lines) == 106 and json.loads(lines[0])["wikipedia_title"] == "Anarchism"
    assert build_state(end_to_end.data_dir, "enwiki-20160501").record["state"] == "complete"


def test_blocking_check_stops_downstream(tmp_path: Path, excerpt: Path) -> None:
    """A dump with two pages of the same title: the uniqueness check fails and the export never runs."""
    header, pages, footer = split_dump(read_xml(excerpt))
    twin = set_field(page_with_title(pages, "Ayn Rand"), "id", "90000009")
    dump = write_dump(tmp_path / "twins.xml", header + b"".join(pages) + twin + footer)
    result = _run(tmp_path / "data", dump, "twins")
    assert not result.success
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not evaluations["unique_ids_and_titles"].passed
    assert {e.partition for e in evaluations.values()} == {"twins"}  # the UI leads to the snapshot checked
    assert "1 duplicate titles" in evaluations["unique_ids_and_titles"].description
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "knowledge_source_jsonl" not in materialized
    # the in-process run held the lock (taken by its IO manager) and its record names the failed check
    state = build_state(tmp_path / "data", "twins")
    assert state.state == "failed" and "check unique_ids_and_titles failed" in state.reason


def _metadata(result, asset: str) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey(asset)]
    return {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}


def test_index_assets_and_evaluation(end_to_end) -> None:
    assets = end_to_end.summary["assets"]
    passages = assets["passages"]["passages"]
    bm25 = assets["bm25_index"]
    assert bm25["documents"] == passages and bm25["language"] == "en" and bm25["index_bytes"] > 0
    dense = assets["dense_index"]
    assert dense["vectors"] == dense["encoded_passages"] == passages and dense["dimension"] == 384
    assert dense["factory"] == "Flat" and dense["bytes_per_vector"] >= 384 * 4
    evaluation = assets["retrieval_evaluation"]
    assert evaluation["splits"] == 2 and evaluation["queries"] == 22 and evaluation["skipped"] == "no"
    retrieval = end_to_end.data_dir / "reports" / "enwiki-20160501" / "retrieval"
    report = json.loads((retrieval / "retrieval.json").read_text())
    text_and_both = {"bm25", "dense", "hybrid", "bm25@both", "dense@both", "hybrid@both"}
    assert {name for split in report["splits"] for name in split["indexes"]} == text_and_both
    assert "| fever-dev | hybrid | text |" in (retrieval / "retrieval.md").read_text()
    assert "| fever-dev | hybrid | both |" in (retrieval / "retrieval.md").read_text()
    structured = assets["structured_indexes"]
    assert structured["bm25_documents"] == structured["dense_documents"] == structured["structured_passages"]
    assert structured["structured_passages"] == 391 and structured["built"] == "bm25, dense"
    checks = end_to_end.summary["checks"]
    # every sampled passage but at most 2 finds itself: the kilt-style excerpt has a 1-word passage, the
    # remainder 'him?"' of a 101-word paragraph (Apollo 11), in the sample; its whole text is its query
    found, queried = map(
        int, re.search(r"(\d+)/(\d+) passages", checks["bm25_self_retrieval"]["description"]).groups()
    )
    assert queried == 200 and found >= 198, checks["bm25_self_retrieval"]["description"]
    assert "Flat (exact index): recall@10 1.000" in checks["dense_approximate_recall"]["description"]


def test_poor_approximate_index_blocks_the_evaluation(instance_on_copy) -> None:
    """Rebuilding dense_index as a coarse IVF-PQ (reusing the finished embeddings): the recall check
    against exact search fails and retrieval_evaluation is not materialized."""
    data_dir, instance = instance_on_copy
    defs = build_definitions(PipelineSettings(data_dir=str(data_dir)))
    job = defs.resolve_job_def("build_all")
    result = job.execute_in_process(
        run_config={"ops": {"dense_index": {"config": {"factory": "IVF64,PQ16"}}}},
        instance=instance,
        partition_key="enwiki-20160501",
        raise_on_error=False,
        asset_selection=[AssetKey("dense_index"), AssetKey("retrieval_evaluation")],
    )
    assert not result.success
    dense = _metadata(result, "dense_index")
    assert dense["resumed_shards"] == dense["shards"] and dense["encoded_passages"] == 0
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["dense_approximate_recall"].passed
    assert "IVF64,PQ16 (approximate index)" in checks["dense_approximate_recall"].description
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"dense_index"}


def test_approximate_index_with_its_search_params_passes(instance_on_copy) -> None:
    """IVF-SQ8 configured with nprobe in the asset config: the parameters are stored with the index, the
    recall check searches with them and passes, and the evaluation runs on the approximate index."""
    data_dir, instance = instance_on_copy
    job = build_definitions(PipelineSettings(data_dir=str(data_dir))).resolve_job_def("build_all")
    report = data_dir / "reports" / "enwiki-20160501" / "retrieval" / "retrieval.json"
    report.unlink()
    result = job.execute_in_process(
        run_config={
            "ops": {"dense_index": {"config": {"factory": "IVF64,SQ8", "search_params": "nprobe=16"}}}
        },
        instance=instance,
        partition_key="enwiki-20160501",
        raise_on_error=False,
        asset_selection=[AssetKey("dense_index"), AssetKey("retrieval_evaluation")],
    )
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["dense_approximate_recall"].passed
    assert checks["dense_approximate_recall"].metadata["search_params"].value == "nprobe=16"
    assert _metadata(result, "dense_index")["bytes_per_vector"] < 1536 / 3  # 8-bit codes, not floats
    assert report.is_file()  # the evaluation's report, under the data dir


def test_later_snapshot_is_a_second_partition_reusing_the_first(
    instance_on_copy, tmp_path: Path, excerpt
) -> None:
    """enwiki-20160601 (10% of the articles edited, one removed, one added) built as a second partition
    of the same instance: its unchanged pages' passages and embeddings come from enwiki-20160501."""
    data_dir, instance = instance_on_copy
    xml, summary = later_snapshot(read_xml(excerpt))
    dump = write_dump(tmp_path / "enwiki-20160601-pages-articles.xml", xml)
    selection = [
        AssetKey(name)
        for name in ("wikipedia_dump", "knowledge_source", "passages", "passage_collection", "passage_tsv")
    ] + [AssetKey("dense_index")]
    result = _run(data_dir, dump, "enwiki-20160601", instance, asset_selection=selection)
    assert result.success
    assert set(instance.get_dynamic_partitions(SNAPSHOTS.name)) == {"enwiki-20160501", "enwiki-20160601"}
    passages = _metadata(result, "passages")
    pages = _metadata(result, "knowledge_source")["pages"]
    assert pages == 106 and passages["reuse_source"] == "enwiki-20160501"
    assert passages["reused_pages"] == pages - len(summary["changed"]) - len(summary["added"])
    assert passages["reuse_ratio"] > 0.85
    dense = _metadata(result, "dense_index")
    assert dense["reuse_source"] == "enwiki-20160501" and dense["vectors"] == passages["passages"]
    assert dense["reused_passages"] + dense["encoded_passages"] == passages["passages"]
    assert dense["encoded_passages"] < 0.15 * passages["passages"]
    assert resolve_snapshot(data_dir, None).snapshot_id == "enwiki-20160601"  # the default: newest dump
    assert build_state(data_dir, "enwiki-20160601").record["run_id"] == result.run_id
