"""Wikidata ids end to end: the page_props and redirect tables beside a dump, QIDs on pages and redirects,
QID lookups in the CLI and the store, and MKQA mapped through them per language.

The dumps are real articles of the excerpt. No public package ships a page_props table for them, so each
test writes one (in the real table's layout, :mod:`support.sql_dumps`) that gives the excerpt's page ids
the answer entities of the real MKQA records in tests/data (the only QIDs that data carries):
Q56005 (Ridley Scott) goes to "Alien", whose text names Ridley Scott, so the answer-span path has a real
span to find; the pairing itself is made up for the test, the ids and texts are real.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

from assets.storage import SnapshotPaths, read_report_json
from assets.wikipedia.dump import ABSENT
from support.dump_variants import article_subset, field, read_xml, split_dump, with_siteinfo, write_dump
from support.real_data import real_file
from support.sql_dumps import PAGE_PROPS_DDL, REDIRECT_DDL, page_props_rows, sql_dump_text, write_gz

ARTICLES = ["Alien", "Actrius", "Ayn Rand"]
REDIRECT = "AynRand"  # a real redirect of the excerpt, to Ayn Rand
MKQA_FILES = {"test": "test_mkqa.jsonl.gz", "dummy": "hf_dummy_mkqa_first5.jsonl"}  # split -> file
QID = {"Alien": "Q56005", "Actrius": "Q952176", "Ayn Rand": "Q5638484"}  # MKQA answer entities


def _page_ids(xml: bytes) -> dict[str, int]:
    _, pages, _ = split_dump(xml)
    return {field(page, "title"): int(field(page, "id")) for page in pages}


def _write_variant(folder: Path, excerpt: Path, dbname: str, language: str, qids: dict[str, str]) -> Path:
    """The articles and the redirect under ``dbname``'s siteinfo, with a page_props table giving the
    titles in ``qids`` their QIDs and a redirect table, both beside the dump as Wikimedia names them."""
    xml = article_subset(read_xml(excerpt), [*ARTICLES, REDIRECT])
    if dbname != "enwiki":
        xml = with_siteinfo(xml, dbname, language)
    ids = _page_ids(xml)
    folder.mkdir(parents=True, exist_ok=True)
    dump = write_dump(folder / f"{dbname}-20160501-pages-articles.xml", xml)
    rows = page_props_rows(
        [(ids[title], qid) for title, qid in qids.items()],
        [(ids[title], "displaytitle", title) for title in ARTICLES],
    )
    write_gz(
        folder / f"{dbname}-20160501-page_props.sql.gz", sql_dump_text("page_props", PAGE_PROPS_DDL, rows)
    )
    redirects = [
        (ids[REDIRECT], 0, "Ayn_Rand", "", ""),  # agrees with the XML
        (ids["Actrius"], 0, "Actrius_(film)", "", ""),  # an article in the XML: a disagreement
        (999_999_999, 0, "Alien_(film)", "", ""),  # a page outside this dump
    ]
    write_gz(
        folder / f"{dbname}-20160501-redirect.sql.gz",
        sql_dump_text("redirect", REDIRECT_DDL, sorted(redirects)),
    )
    return dump


def _build(kiltpipe, data: Path, dump: Path, *extra: str) -> dict:
    code, out, err = kiltpipe("build", "--data-dir", data, "--dump", dump, "--quiet", *extra)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["success"] and all(check["passed"] for check in summary["checks"].values())
    return summary


def _map_mkqa(kiltpipe, data: Path, *extra: str) -> list[dict]:
    reports = []
    for split, name in MKQA_FILES.items():
        path = real_file("original", "mkqa", name)
        code, out, err = kiltpipe(
            "map", path, "--data-dir", data, "--dataset", "mkqa", "--split", split, *extra
        )
        assert code == 0, err
        reports.append(json.loads(out))
    return reports


def _merged_paths(reports: list[dict]) -> dict[str, dict[str, int]]:
    merged: dict[str, dict[str, int]] = {}
    for report in reports:
        for language, paths in report["answer_paths"].items():
            for path, count in paths.items():
                merged.setdefault(language, {}).setdefault(path, 0)
                merged[language][path] += count
    return merged


def test_qids_on_every_page_lookups_and_mkqa_by_qid(kiltpipe, tmp_path: Path, excerpt: Path) -> None:
    dump = _write_variant(tmp_path / "landing", excerpt, "enwiki", "en", QID)
    data = tmp_path / "data"
    # the tables are found beside the dump; the indexes are not needed here (the zhwiki test builds them)
    summary = _build(kiltpipe, data, dump, "--select", "+key:provenance_store")
    snapshot = summary["snapshot_id"]
    ks = summary["assets"]["knowledge_source"]
    assert (ks["pages"], ks["pages_with_qid"], ks["redirects_with_qid"]) == (3, 3, 0)
    paths = SnapshotPaths(data, snapshot)
    manifest = json.loads(paths.manifest_file.read_text())
    assert manifest["wikidata"] == {
        "page_props": dump.name.replace("pages-articles.xml", "page_props.sql.gz"),
        "pages_with_qid": 3,
        "redirects_with_qid": 0,
    }
    # the redirect table compared with the XML's redirects
    report = read_report_json(paths.knowledge_source / "report.json")
    checked = report["redirect_table"]
    assert checked["counts"] == {"agree": 1, "article_in_xml": 1, "outside_dump": 1}
    assert checked["disagreements"] == 1
    assert (
        "'Actrius' is an article in the XML, a redirect to 'Actrius (film)' in the table"
        in checked["examples"][0]
    )
    assert report["wikidata"]["kept"] == 3 and report["wikidata"]["skipped"] == {"other_property": 3}

    # every page carries KILT's wikidata_info, in the export too
    code, _, err = kiltpipe("export-ks", "--data-dir", data, "--quiet")
    assert code == 0, err
    exported = [json.loads(line) for line in paths.kilt_jsonl.read_text().splitlines()]
    assert {page["wikipedia_title"]: page["wikidata_info"] for page in exported} == {
        title: {"wikidata_id": qid} for title, qid in QID.items()
    }

    # QID -> page and page -> QID, redirects followed
    code, out, _ = kiltpipe("page", "Q56005", "--data-dir", data)
    assert code == 0 and json.loads(out)["wikipedia_title"] == "Alien"
    code, out, _ = kiltpipe("page", "q952176", "--data-dir", data, "--by", "qid")
    assert code == 0 and json.loads(out)["wikidata_info"] == {"wikidata_id": "Q952176"}
    code, out, _ = kiltpipe("qid", "AynRand", "--data-dir", data)
    found = json.loads(out)
    assert code == 0 and found["wikidata_id"] == "Q5638484" and found["redirected_from"] == "AynRand"
    code, _, err = kiltpipe("page", "Q42", "--data-dir", data)
    assert code == 1 and "page not found" in err

    # MKQA: entity answers reach their page by QID, the others stay answer strings
    reports = _map_mkqa(kiltpipe, data)
    paths_en = _merged_paths(reports)
    assert list(paths_en) == ["en"]  # an English snapshot maps MKQA's English questions
    assert paths_en["en"]["qid_span"] >= 1  # "Ridley Scott" on Alien
    assert paths_en["en"]["qid_page"] >= 2  # Chris Young, Hafþór Júlíus Björnsson: no such span
    assert paths_en["en"]["answer_only_no_qid"] >= 5  # dates, numbers
    mapped = {}
    for line in (paths.datasets / "mkqa-test-kilt.jsonl").read_text().splitlines():
        record = json.loads(line)
        mapped[record["id"]] = record
    gladiator = mapped["7631360939705650347-en"]["output"][0]
    [provenance] = gladiator["provenance"]
    assert (provenance["title"], provenance["meta"]["wikidata_id"], provenance["bleu_score"]) == (
        "Alien",
        "Q56005",
        1.0,
    )
    code, out, _ = kiltpipe(
        "span", provenance["wikipedia_id"], provenance["start_paragraph_id"], provenance["start_character"],
        provenance["end_paragraph_id"], provenance["end_character"], "--data-dir", data,
    )  # fmt: skip
    assert code == 0 and json.loads(out)["text"] == "Ridley Scott"
    markdown = (data / "reports" / snapshot / "mapping" / "mkqa-test.md").read_text()
    assert "## Answers without provenance, by language" in markdown


def test_zhwiki_snapshot_maps_three_chinese_variants_with_a_multilingual_model(
    kiltpipe, tmp_path: Path, excerpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The articles relabelled as zhwiki (no real Chinese dump ships in a package we can install offline):
    zh analyzer, the dense model of ``language_models.zh`` (the packaged model copied under another name:
    no multilingual model installs offline), MKQA's zh_cn/zh_hk/zh_tw mapped by QID. The
    Hafþór entity sits on the redirect page here: its answer reaches the redirect's target."""
    from assets.indexes.dense.encoders import default_model_dir

    model = tmp_path / "multilingual-model"  # a copy of the packaged model, named as a model of its own
    shutil.copytree(default_model_dir(), model)
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["indexes"]["dense"]["language_models"] = {"zh": str(model)}
    (tmp_path / "params.yaml").write_text(json.dumps(params))
    monkeypatch.setenv("KILT_PARAMS", str(tmp_path / "params.yaml"))
    qids = {"Alien": "Q56005", "Actrius": "Q952176", REDIRECT: "Q5638484"}
    dump = _write_variant(tmp_path / "landing", excerpt, "zhwiki", "zh", qids)
    data = tmp_path / "data"
    summary = _build(kiltpipe, data, dump)
    assert summary["snapshot_id"] == "zhwiki-20160501"
    assert summary["assets"]["bm25_index"]["language"] == "zh"
    ks = summary["assets"]["knowledge_source"]
    assert (ks["pages_with_qid"], ks["redirects_with_qid"]) == (2, 1)
    index_meta = read_report_json(SnapshotPaths(data, "zhwiki-20160501").dense_index / "index.json")
    assert index_meta["encoder"]["model"] == str(model)  # the model of the snapshot's language
    code, out, err = kiltpipe(
        "search", "雷利·史考特 異形", "--data-dir", data, "--index", "dense", "--k", "2"
    )
    assert code == 0 and len(json.loads(out)) == 2, err  # queries go through the index's own encoder

    code, out, _ = kiltpipe("page", "Q5638484", "--data-dir", data)
    assert code == 0 and json.loads(out)["wikipedia_title"] == "Ayn Rand"
    paths_zh = _merged_paths(_map_mkqa(kiltpipe, data))
    assert sorted(paths_zh) == ["zh_cn", "zh_hk", "zh_tw"]
    for language in paths_zh.values():
        # the answers are Chinese, the pages' text English: the QID finds the page, no span
        assert language["qid_page"] >= 3 and "qid_span" not in language
    mapped = [
        json.loads(line)
        for line in (SnapshotPaths(data, "zhwiki-20160501").datasets / "mkqa-test-kilt.jsonl")
        .read_text()
        .splitlines()
    ]
    hafthor = next(r for r in mapped if r["id"] == "-7449157003522518870-zh_tw")
    [provenance] = hafthor["output"][0]["provenance"]
    assert provenance["title"] == "Ayn Rand" and provenance["meta"]["found_by"] == "wikidata_redirect"


def test_build_without_page_props_says_qids_are_absent(kiltpipe, tmp_path: Path, tiny_excerpt: Path) -> None:
    data = tmp_path / "data"
    summary = _build(kiltpipe, data, tiny_excerpt, "--select", "+key:knowledge_source")
    ks = summary["assets"]["knowledge_source"]
    assert ks["pages_with_qid"] == 0 and ks["wikidata"]["status"] == ABSENT
    manifest = json.loads(SnapshotPaths(data, summary["snapshot_id"]).manifest_file.read_text())
    assert manifest["wikidata"]["status"] == ABSENT
    missing = tmp_path / "enwiki-20160501-page_props.sql.gz"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", tiny_excerpt, "--page-props", missing, "--quiet"
    )
    assert code == 2 and "page_props table not found" in err
    truncated = tmp_path / "truncated-page_props.sql.gz"
    truncated.write_bytes(
        gzip.compress(
            sql_dump_text("page_props", PAGE_PROPS_DDL, [(330, "wikibase_item", "Q952176", None)]).encode()
        )[:-12]
    )
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", tiny_excerpt, "--page-props", truncated, "--quiet",
        "--select", "+key:knowledge_source", "--force",
    )  # fmt: skip
    assert code != 0 and "truncated-page_props.sql.gz: the gzip stream is truncated" in err
