"""Any wiki builds green by default: a real Bulgarian dump, and the excerpt relabelled as other wikis.

The records shipped with the project belong to the embedded English excerpt: another wiki (or date) gets
no datasets unless ``datasets.files`` names some, every check passes, and the retrieval evaluation says
it was skipped and why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets.datasets.pipeline import configured_specs, embedded_specs
from assets.indexes.evaluation import NO_EVALUATION
from assets.params import KnowledgeSourceParams
from assets.storage import SnapshotPaths
from assets.wikipedia.dump import EMBEDDED_BGWIKI_MEMBER, EMBEDDED_BGWIKI_SHA256, ensure_wheel_member
from support.dump_variants import (
    JAWIKI_HEAD,
    TINY_TITLES,
    article_subset,
    first_articles,
    read_xml,
    with_siteinfo,
    write_dump,
)
from support.real_data import real_file

CHECKS = 20
CHECKS_WITHOUT_DENSE = 13  # what bm25_index and remapped_datasets need: no dense, kb or qa index


@pytest.fixture(scope="session")
def bgwiki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real Bulgarian dump of the gensim 4.4.0 wheel (UTF-16), fetched from PyPI like the excerpt (a
    machine without PyPI fails here, as ``make demo`` would)."""
    return ensure_wheel_member(
        tmp_path_factory.mktemp("bgwiki"), EMBEDDED_BGWIKI_MEMBER, EMBEDDED_BGWIKI_SHA256
    )


def _green_build(kiltpipe, data: Path, dump: Path, *, dense: bool = True) -> dict:
    """Every asset (without ``dense``: all but the dense index and the evaluation that needs it)."""
    selection = () if dense else ("--select", "+key:bm25_index or +key:remapped_datasets")
    code, out, err = kiltpipe("build", "--data-dir", data, "--dump", dump, "--quiet", *selection)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"] and len(summary["checks"]) == (CHECKS if dense else CHECKS_WITHOUT_DENSE)
    assert all(check["passed"] for check in summary["checks"].values()), summary["checks"]
    assets = summary["assets"]
    assert assets["remapped_datasets"]["records"] == 0
    assert assets["remapped_datasets"]["datasets_origin"].startswith("none: datasets.files is not set")
    if not dense:
        return summary
    assert assets["retrieval_evaluation"]["skipped"] == NO_EVALUATION
    # the UI says why, not an empty chart and a lone bullet (issue 63, part 9)
    said = f"Skipped: {NO_EVALUATION}."
    assert assets["retrieval_evaluation"]["table"] == assets["retrieval_evaluation"]["r_precision"] == said
    report = data / "reports" / summary["snapshot_id"] / "retrieval" / "retrieval.md"
    assert f"Skipped: {NO_EVALUATION}." in report.read_text()
    return summary


def test_real_bulgarian_dump_builds_green(kiltpipe, tmp_path: Path, bgwiki: Path) -> None:
    data = tmp_path / "data"
    summary = _green_build(kiltpipe, data, bgwiki)
    assert summary["snapshot_id"] == "bgwiki-20170410"  # no date in the name: its newest revision
    bm25 = summary["assets"]["bm25_index"]
    # Anserini 1.7.1 has no Bulgarian analyzer: the documented fallback is English's, with a warning
    assert (bm25["requested_language"], bm25["language"]) == ("bg", "en")
    assert summary["assets"]["knowledge_source"]["pages"] == 1
    query = "Григорианският календар"
    code, out, _ = kiltpipe("search", query, "--data-dir", data, "--index", "bm25", "--k", "3")
    hits = json.loads(out)
    assert code == 0 and hits and hits[0]["title"] == "Григориански календар"
    [page] = [json.loads(line) for line in (SnapshotPaths(data, summary["snapshot_id"]).kilt_jsonl).open()]
    code, out, _ = kiltpipe("page", page["wikipedia_title"], "--data-dir", data)
    assert code == 0 and json.loads(out)["wikipedia_id"] == page["wikipedia_id"]


@pytest.mark.parametrize(("dbname", "language"), [("dewiki", "de"), ("jawiki", "ja")])
def test_excerpt_relabelled_as_another_wiki_builds_green(
    kiltpipe, tmp_path: Path, excerpt: Path, dbname: str, language: str
) -> None:
    """Three real articles under a wiki's siteinfo: for dewiki the excerpt's :data:`TINY_TITLES`
    relabelled, for jawiki the first three articles of a real jawiki dump (Japanese text): that wiki's
    analyzer, no datasets, every check green; MKQA maps its questions in that language. The dense index,
    language-independent here, is built for the real Bulgarian dump above and the zhwiki build of
    ``test_wikidata``."""
    if dbname == "jawiki":  # real Japanese text: three articles of a real jawiki dump
        xml = first_articles(read_xml(real_file(*JAWIKI_HEAD)), 3)
    else:
        xml = with_siteinfo(article_subset(read_xml(excerpt), TINY_TITLES), dbname, language)
    dump = write_dump(tmp_path / f"{dbname}-20160501-pages-articles.xml", xml)
    data = tmp_path / "data"
    summary = _green_build(kiltpipe, data, dump, dense=False)  # dense: the bg and zhwiki builds
    assert summary["snapshot_id"] == f"{dbname}-20160501"
    assert summary["assets"]["bm25_index"]["language"] == language
    # MKQA's questions of the wiki's language (only those); without a page_props table no page has a QID
    mkqa = real_file("original", "mkqa", "test_mkqa.jsonl.gz")
    code, out, err = kiltpipe("map", mkqa, "--data-dir", data, "--dataset", "mkqa", "--split", "test")
    assert code == 0, err
    mapped = json.loads(out)
    assert mapped["records_in"] == 6 and list(mapped["answer_paths"]) == [language]
    assert mapped["answer_paths"][language]["qid_snapshot_without_qids"] == 3  # entity answers and aliases


def test_shipped_records_belong_to_the_embedded_excerpt(
    built_excerpt, tmp_path: Path, small_excerpt: Path
) -> None:
    from assets.wikipedia.pages import build_knowledge_source

    embedded_paths, _ = built_excerpt
    specs, origin = configured_specs(None, embedded_paths)
    assert specs == embedded_specs() and "embedded default excerpt" in origin
    assert configured_specs([], embedded_paths)[0] == []  # [] means none, even for the excerpt
    named = [{"path": specs[0].path, "format": "kilt", "dataset": "hotpotqa", "split": "dev"}]
    assert [s.path for s in configured_specs(named, embedded_paths)[0]] == [specs[0].path]
    report = build_knowledge_source(
        small_excerpt, tmp_path / "data", KnowledgeSourceParams(workers=0), progress=False
    )
    other = SnapshotPaths(tmp_path / "data", report.snapshot_id)
    assert configured_specs(None, other)[0] == []
