"""The Wikipedia-shaped dump of ``benchmarks/gen_wiki_dump.py`` (real text recombined): deterministic, in
enwiki's file layout with its SQL tables, shaped as its statistics say, and built end to end."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from assets.params import KnowledgeSourceParams
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import ParseSettings, build_knowledge_source
from support.generator.dataset import TASKS
from support.generator.dump import generate
from support.generator.scale_runs import (
    bench_params,
    ensure_dataset,
    mapped_onto_source,
    remapped_against_truth,
)
from support.generator.shape import Shape

ARTICLES = 2000


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("generated")
    return out, generate(ARTICLES, out, seed=7, parts=3, workers=2)


def _index_entries(path: Path) -> list[tuple[int, int, str]]:
    with bz2.open(path, "rt", encoding="utf-8") as lines:
        return [(int(a), int(b), c) for a, b, c in (line.rstrip("\n").split(":", 2) for line in lines)]


def test_same_seed_same_bytes_and_the_shape_it_claims(generated, tmp_path: Path) -> None:
    out, stats = generated
    again = generate(ARTICLES, tmp_path / "again", seed=7, parts=3, workers=1)
    assert again["files"] == stats["files"]
    for name in stats["files"]:
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    generate(ARTICLES, tmp_path / "other", seed=8, workers=2)
    first = "enwiki-20260101-pages-articles-multistream.xml.bz2"
    assert (out / first).read_bytes() != (tmp_path / "other" / first).read_bytes()

    assert stats["articles"] == ARTICLES and stats["disambiguation_pages"] == ARTICLES * 5 // 100
    assert stats["redirects_per_article"] == 1.4 and stats["redirect_chains"] > 0
    assert stats["other_namespace_pages"]["Category"] == round(ARTICLES * 0.35)
    sizes = stats["article_wikitext_bytes"]
    for share, limit in Shape().size_quantiles:  # the published size distribution, within sampling noise
        assert abs(sizes["share_below"][str(limit)] - share) < 0.06, (limit, sizes)
    assert stats["links_per_article"] > 5 and stats["page_props_rows"] > ARTICLES


def test_enwiki_layout_multistream_index_parts_and_sql_tables(generated) -> None:
    out, stats = generated
    prefix = "enwiki-20260101"
    data = (out / f"{prefix}-pages-articles-multistream.xml.bz2").read_bytes()
    entries = _index_entries(out / f"{prefix}-pages-articles-multistream-index.txt.bz2")
    assert len(entries) == stats["pages"]
    # every stream starts at its offset and holds whole pages, the first named by the index
    for offset, page_id, title in entries[:: 100 * 7]:
        stream = bz2.BZ2Decompressor().decompress(data[offset:]).decode("utf-8")
        assert stream.lstrip().startswith("<page>") and f"<id>{page_id}</id>" in stream[:600]
        assert f"<title>{title.replace('&', '&amp;')}</title>" in stream[:600]
    ids = [page_id for _, page_id, _ in entries]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    xml = bz2.decompress(data).decode("utf-8")
    assert xml.startswith("<mediawiki") and xml.rstrip().endswith("</mediawiki>")
    assert xml.count("<page>") == stats["pages"] and xml.count("<redirect title=") == stats["redirects"]

    parts = sorted((out / "parts").glob(f"{prefix}-pages-articles-multistream?.xml-p*p*.bz2"))
    assert len(parts) == 3
    part_ids = []
    for part in parts:
        name = part.name
        index = out / "parts" / name.replace("multistream", "multistream-index").replace(".xml-", ".txt-")
        listed = [page_id for _, page_id, _ in _index_entries(index)]
        first, last = name.rsplit("-p", 1)[1].removesuffix(".bz2").split("p")
        assert (listed[0], listed[-1]) == (int(first), int(last))
        assert bz2.decompress(part.read_bytes()).decode("utf-8").count("<page>") == len(listed)
        part_ids += listed
    assert part_ids == ids

    with gzip.open(out / f"{prefix}-redirect.sql.gz", "rt", encoding="utf-8") as table:
        redirect_sql = table.read()
    assert "CREATE TABLE `redirect`" in redirect_sql and redirect_sql.count("INSERT INTO `redirect`") >= 2
    with gzip.open(out / f"{prefix}-page_props.sql.gz", "rt", encoding="utf-8") as table:
        assert table.read().count("'wikibase_item'") > ARTICLES * 0.9


def test_generated_dump_builds_and_its_checks_pass(generated, kiltpipe, tmp_path: Path) -> None:
    """Knowledge source (QIDs and redirect table read beside the dump), passages and BM25 through the
    Dagster definitions. The recombined text repeats sentences, as enwiki's boilerplate does: the BM25
    self-retrieval check counts a hit that holds the query sentence word for word."""
    out, stats = generated
    dump = out / "enwiki-20260101-pages-articles-multistream.xml.bz2"
    code, printed, err = kiltpipe(
        "build", "--data-dir", tmp_path / "data", "--dump", dump, "--select", "+key:bm25_index", "--quiet"
    )
    assert code == 0, err
    summary = json.loads(printed)
    ks = summary["assets"]["knowledge_source"]
    skipped = ks["skipped_by_reason"]
    assert ks["pages"] + skipped.get("no_text_after_cleaning", 0) == stats["articles"]
    assert skipped["non_main_namespace"] == sum(stats["other_namespace_pages"].values())
    assert (
        ks["redirects"] == stats["redirects"]
        and ks["redirect_table"]["counts"]["agree"] == stats["redirects"]
    )
    assert ks["pages_with_qid"] > 0.9 * ks["pages"]
    assert (
        ks["anchors_resolved"] > 0.85 * ks["anchors"]
    )  # red links (2 %) and namespaced links do not resolve
    assert all(check["passed"] for check in summary["checks"].values()), summary["checks"]
    assert (
        "through another passage holding the same sentence"
        in summary["checks"]["bm25_self_retrieval"]["description"]
    )


def test_a_month_later_built_from_the_earlier_snapshot_is_the_full_build(generated, tmp_path: Path) -> None:
    """The multistream path of the incremental knowledge source (several parse steps, conversion workers
    reading N's identities, shards cut small): N+1 built from N's converted pages publishes exactly the
    bytes of N+1 built from scratch."""
    out, _ = generated
    later = tmp_path / "later"
    generate(ARTICLES, later, seed=7, month=3, workers=2)
    settings = ParseSettings(KnowledgeSourceParams(workers=2, part_bytes=400_000), bytes_per_shard=400_000)
    build_knowledge_source(
        out / "enwiki-20260101-pages-articles-multistream.xml.bz2", tmp_path / "inc", settings, progress=False
    )
    dump = later / "enwiki-20260201-pages-articles-multistream.xml.bz2"
    incremental = build_knowledge_source(dump, tmp_path / "inc", settings, progress=False, incremental=True)
    full = build_knowledge_source(  # nothing to reuse
        dump, tmp_path / "full", settings, progress=False, incremental=True
    )
    assert (
        incremental.compression.startswith("bz2 multistream")
        and "in 1 parse steps" not in incremental.compression
    )
    assert incremental.reuse == "enwiki-20260101" and full.reuse is None and full.pages_reused == 0
    assert 0.9 * incremental.articles < incremental.pages_reused < incremental.articles
    produced = SnapshotPaths(tmp_path / "inc", "enwiki-20260201").knowledge_source
    expected = SnapshotPaths(tmp_path / "full", "enwiki-20260201").knowledge_source
    names = sorted(p.relative_to(expected) for p in expected.rglob("*.parquet"))
    assert names == sorted(p.relative_to(produced) for p in produced.rglob("*.parquet")) and len(names) > 3
    for name in names:
        assert (produced / name).read_bytes() == (expected / name).read_bytes(), name
    for count in ("paragraphs", "anchors", "anchors_resolved", "redirects_resolved", "pages_with_qid"):
        assert getattr(incremental, count) == getattr(full, count), count


def _pages_by_id(dump: Path) -> dict[int, str]:
    xml = bz2.decompress(dump.read_bytes()).decode("utf-8")
    pages = [page.split("  </page>\n", 1)[0] for page in xml.split("  <page>\n")[1:]]
    return {int(page.split("<id>", 1)[1].split("</id>", 1)[0]): page for page in pages}


def test_a_month_later_changes_exactly_what_its_truth_says(generated, tmp_path: Path) -> None:
    out, _ = generated
    later = generate(ARTICLES, tmp_path / "later", seed=7, month=3, workers=2)
    before = _pages_by_id(out / "enwiki-20260101-pages-articles-multistream.xml.bz2")
    after = _pages_by_id(tmp_path / "later" / "enwiki-20260201-pages-articles-multistream.xml.bz2")
    truth = {r["page_id"]: r for r in map(json.loads, (tmp_path / "later" / "truth.jsonl").open())}
    changes = later["changes"]
    assert changes["edits"] == round(ARTICLES * 0.95 * 0.03) and changes["new_article"] >= 1
    assert {"deleted", "renamed_from", "move_redirect", "redirect", "qid"} <= set(changes)
    for page_id, page in before.items():
        record = truth.get(page_id)
        if record is None:
            assert after[page_id] == page, page_id  # untouched: the same bytes, revision included
        elif record.get("change") == "deleted":
            assert page_id not in after
        elif set(record) - {"page_id", "title", "qid"}:  # edited, moved or retargeted: a new revision
            assert after[page_id] != page and "<timestamp>2026-01-" in after[page_id], record
    for page_id, record in truth.items():
        if record.get("change") == "move_redirect":
            assert f'<redirect title="{record["to"]}" />' in after[page_id] and page_id not in before
        if "renamed_from" in record:
            assert f"<title>{record['title']}</title>" in after[page_id] != record["renamed_from"]
        for edit in record.get("edits", []):
            assert edit["op"] in ("insert", "delete", "rewrite", "move")


def test_a_drawn_dataset_maps_onto_itself_and_a_month_later_as_the_truth_says(
    generated, kiltpipe, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 28, part 4 at a size for make test: a dataset of every task shape drawn from snapshot N maps
    onto N span for span, and onto N+1 (a month of edits, N as the evidence) exactly as the generator's
    truth predicts: untouched spans identical, edited ones by KILT's BLEU rule, deleted pages reported,
    the report's drop counts equal to the truth's."""
    out, _ = generated
    data_dir, dataset_dir = tmp_path / "data", tmp_path / "dataset"
    before = SnapshotPaths(data_dir, "enwiki-20260101")
    monkeypatch.setenv(
        "KILT_PARAMS", str(bench_params(data_dir, before.snapshot_id, dataset_dir, dense=False))
    )
    dump = out / "enwiki-20260101-pages-articles-multistream.xml.bz2"
    code, _, err = kiltpipe("build", "--dump", dump, "--select", "+key:provenance_store", "--quiet")
    assert code == 0, err
    drawn = ensure_dataset(before, dataset_dir, records=4000, seed=0)
    assert set(drawn["by_task"]) == set(TASKS) and drawn["provenance"] > 4000
    code, _, err = kiltpipe(
        "build", "--snapshot", before.snapshot_id, "--select", "key:remapped_datasets", "--quiet"
    )
    assert code == 0, err
    onto_itself = mapped_onto_source(dataset_dir, before)
    assert onto_itself["identical_fraction"] == 1.0 and onto_itself["records_dropped"] == 0, onto_itself

    later = tmp_path / "later"
    generate(ARTICLES, later, seed=7, month=3, workers=2)
    code, printed, err = kiltpipe(
        "build", "--dump", later / "enwiki-20260201-pages-articles-multistream.xml.bz2",
        "--select", "+key:remapped_datasets", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    ks = json.loads(printed)["assets"]["knowledge_source"]  # N's converted pages copied (incremental)
    assert ks["reuse"] == before.snapshot_id and 0.9 * ks["pages"] < ks["pages_reused"] < ks["pages"], ks
    after = SnapshotPaths(data_dir, "enwiki-20260201")
    result = remapped_against_truth(dataset_dir, before, after, later / "truth.jsonl", bleu_threshold=0.5)
    assert result["mismatch_count"] == 0 and result["as_expected_fraction"] == 1.0, result["mismatches"]
    assert result["report_counts_equal_truth"], result
    classes = result["classes"]
    for kind in ("span_unchanged", "span_renamed", "page_unchanged", "provenance_on_deleted_page",
                 "span_on_edited_page_paragraph_kept", "span_on_edited_page_paragraph_changed"):  # fmt: skip
        assert classes.get(kind, 0) > 0, (kind, classes)
