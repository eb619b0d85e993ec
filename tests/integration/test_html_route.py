"""The HTML route end to end: an Enterprise HTML dump made in code from real records and real Parsoid
pages builds the same snapshot shape as an XML dump, through passages, BM25, dense, structured passages,
the KB and the store (``kiltpipe build``), is searchable, and a dataset record whose answer only a template
makes (``{{convert}}``'s inches) maps onto it, but not onto the same page built from its wikitext."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from assets.datasets.pipeline import DatasetSpec, map_dataset
from assets.input_forms import ENTERPRISE_FORM
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.provenance_store import ProvenanceStore, build_store
from assets.storage import SnapshotPaths, registered_dump
from assets.wikipedia.dump import DumpFormatError
from assets.wikipedia.pages import ParseSettings, build_knowledge_source, iter_pages
from assets.wikipedia.passages import build_passages
from orchestration.assets.wikipedia import DUMP_TAG, ROUTE_TAG
from support.dump_variants import write_dump
from support.enterprise_dump import page_records, real_records, wikitext_twin, write_enterprise_dump

pytestmark = pytest.mark.slow

SNAPSHOT, TWIN = "enwiki-20240101", "enwiki-20240102"
SELECTION = "+key:bm25_index or +key:dense_index or +key:provenance_store"
"""What the tests read (passages, both indices, the store with structured passages and the KB), with
everything upstream of it: the datasets, QA and exports assets read the same stores as on the XML route."""
ANSWER = "3.9–5.5 in"  # {{convert|10|-|14|cm|in|abbr=on}}: only the rendered page has it


@pytest.fixture(scope="module")
def records() -> list[dict]:
    squirrel = [r for r in real_records() if r["is_part_of"]["identifier"] == "enwiki"]
    return squirrel + page_records("enwiki")


def _kiltpipe(root: Path, *arguments: str) -> dict:
    """``kiltpipe`` in a process of its own with a Dagster home under ``root`` (as a user runs it)."""
    (root / "home").mkdir(exist_ok=True)
    (root / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(root / "home")}
    env.pop("KILT_DATA_DIR", None)
    run = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", *arguments], capture_output=True, text=True, env=env,
        timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def built(records, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """``kiltpipe build`` of the Enterprise dump, :data:`SELECTION`."""
    root = tmp_path_factory.mktemp("html-route")
    dump = write_enterprise_dump(root / f"enwiki-NS0-{SNAPSHOT[-8:]}-ENTERPRISE-HTML.json.tar.gz", records)
    return root / "data", _kiltpipe(
        root,
        "build",
        "--data-dir",
        str(root / "data"),
        "--dump",
        str(dump),
        "--quiet",
        "--select",
        SELECTION,
        "--executor",
        "in_process",
    )


def test_an_enterprise_dump_builds_green_through_the_indices_and_the_store(built, records) -> None:
    data, summary = built
    assert summary["success"] and summary["snapshot_id"] == SNAPSHOT
    built = set(summary["assets"])  # the selection and what it reads, nothing downstream of it
    assert {"knowledge_source", "passages", "bm25_index", "dense_index", "provenance_store"} <= built
    assert not built & {"remapped_datasets", "huggingface_export", "retrieval_evaluation", "qa_pairs"}
    assert len(summary["checks"]) >= 12 and all(c["passed"] for c in summary["checks"].values())
    paths = SnapshotPaths(data, SNAPSHOT)
    manifest = json.loads(paths.manifest_file.read_text())
    assert manifest["route"] == ENTERPRISE_FORM and manifest["dbname"] == "enwiki"
    assert manifest["wikidata"]["source"] == "main_entity of the records"
    pages = {page["wikipedia_id"]: page for page in iter_pages(paths)}
    assert set(pages) == {str(r["identifier"]) for r in records}
    squirrel = pages["28492"]
    assert squirrel["wikidata_info"] == {"wikidata_id": "Q9482"}
    assert squirrel["history"]["revid"] == 1171934824
    assert ANSWER in "".join(squirrel["text"])
    report = json.loads(paths.report_file.read_text())
    assert report["redirects"] == len(records[0]["redirects"])
    assert summary["assets"]["passages"]["passages"] > 300  # 100-word passages of 8 pages
    shown = _kiltpipe(data.parent, "page", "Squirrel", "--data-dir", str(data))
    assert shown["route"] == ENTERPRISE_FORM and shown["wikipedia_id"] == "28492"
    # the route is said where a user looks, by the one name the setting takes (knowledge_source.input):
    # the dump's and the knowledge source's metadata, the manifest, the conversion rules, the run's tags
    assets = summary["assets"]
    assert assets["wikipedia_dump"]["route"] == ENTERPRISE_FORM and "form" not in assets["wikipedia_dump"]
    assert manifest["conversion"]["route"] == ENTERPRISE_FORM
    # told once: the dump asset's reading travels with the dump (the plan reuses it for the same setting)
    assert registered_dump(data, SNAPSHOT)["form"] == ["auto", ENTERPRISE_FORM]
    shown = assets["knowledge_source"]
    assert shown["route"] == ENTERPRISE_FORM and shown["html_bytes"] > 0
    assert "xml_bytes" not in shown
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(data.parent / "home")) as instance:
        (run,) = [r.dagster_run for r in instance.get_run_records()]
    assert run.tags[ROUTE_TAG] == ENTERPRISE_FORM and run.tags[DUMP_TAG].endswith(
        "ENTERPRISE-HTML.json.tar.gz"
    )
    structured = json.loads((paths.structured_parquet.parent / "report.json").read_text())
    assert structured["pages"] == len(records) and structured["html_pages"] == len(records)
    # the taxobox and ABC News' infobox read from the HTML, offsets into it (the record's article_body.html)
    rows = pl.read_parquet(paths.structured_parquet / "*.parquet").filter(pl.col("kind") == "infobox")
    assert set(rows["title"]) >= {"Squirrel", "ABC News"}
    taxobox = rows.filter(pl.col("wikipedia_id") == "28492").row(0, named=True)
    html = next(r for r in records if r["identifier"] == 28492)["article_body"]["html"]
    assert taxobox["text"].startswith("Squirrels: Domain: Eukaryota. Kingdom: Animalia.")
    shown_html = html[taxobox["start_character"] : taxobox["end_character"]]
    assert shown_html.startswith('<a rel="mw:WikiLink" href="./Eukaryote"') and "Animalia" in shown_html


def test_template_made_text_is_searched_and_a_record_on_it_maps_only_here(built, records, tmp_path) -> None:
    data, _ = built
    paths = SnapshotPaths(data, SNAPSHOT)
    squirrel = next(p for p in iter_pages(paths) if p["wikipedia_id"] == "28492")
    paragraph = next(i for i, entry in enumerate(squirrel["text"]) if ANSWER in entry)
    start = squirrel["text"][paragraph].index(ANSWER)
    sentence = next(s for s in re.split(r"(?<=\.) ", squirrel["text"][paragraph]) if ANSWER in s)
    cloze = sentence.replace(ANSWER, "___").strip()  # the record's input, derived from the page
    record = {
        "id": "html-route-0",
        "input": cloze,
        "output": [
            {
                "answer": ANSWER,
                "provenance": [
                    {"wikipedia_id": "28492", "title": "Squirrel", "start_paragraph_id": paragraph,
                     "start_character": start, "end_paragraph_id": paragraph,
                     "end_character": start + len(ANSWER), "bleu_score": 1.0}
                ],
            }
        ],
    }  # fmt: skip
    kilt_file = tmp_path / "nq-dev-kilt.jsonl"
    kilt_file.write_text(json.dumps(record, ensure_ascii=False) + "\n")
    spec = DatasetSpec(str(kilt_file), "kilt", "nq", "dev")

    # searched: BM25 and dense find the passage holding the converted figure
    from assets.indexes.retriever import Retriever

    with Retriever(paths) as retriever:
        for index in ("bm25", "dense"):
            hits = retriever.batch_search(index, [cloze], 3, with_text=True)[0]
            assert any(ANSWER in hit.text for hit in hits), (index, [h.passage_id for h in hits])

    # the same page from its wikitext: the XML route (no {{convert}} renderer) has no inches
    twin = write_dump(tmp_path / f"{TWIN}-pages-articles.xml", wikitext_twin(records))
    build_knowledge_source(twin, data, ParseSettings(KnowledgeSourceParams(workers=0)), progress=False)
    twin_paths = SnapshotPaths(data, TWIN)
    build_passages(twin_paths, PassagesParams(workers=0), progress=False)
    build_store(twin_paths)
    with ProvenanceStore(paths) as source:
        here = map_dataset(spec, source, tmp_path / "here", source=source)
        with ProvenanceStore(twin_paths) as target:
            there = map_dataset(spec, target, tmp_path / "there", source=source)
    assert (here.report.records_in, here.report.records_out) == (1, 1)
    mapped = json.loads(here.written.jsonl.read_text().splitlines()[0])["output"][0]["provenance"][0]
    assert mapped["bleu_score"] == 1.0 and mapped["wikipedia_id"] == "28492"
    assert (there.report.records_in, there.report.records_out) == (1, 0)
    assert there.report.dropped["output_low_bleu"] == 1
    # where both routes have the page: the same id and title, and every link the wikitext route keeps
    # is one the HTML route keeps (160 of its 165: Parsoid adds the citation templates' identifier links)
    html_page, xml_page = (
        next(p for p in iter_pages(x) if p["wikipedia_id"] == "28492") for x in (paths, twin_paths)
    )
    assert html_page["wikipedia_title"] == xml_page["wikipedia_title"] == "Squirrel"
    targets = [
        {a["href"][:1].upper() + a["href"][1:] for a in page["anchors"]} for page in (html_page, xml_page)
    ]
    assert len(targets[1]) >= 150 and targets[1] <= targets[0]


def test_a_repeated_page_keeps_its_newest_revision_and_bodyless_records_are_counted(tmp_path: Path) -> None:
    """Records made in code from the real enwiki one: the same page id at revisions r, r+1 (its HTML with
    one paragraph dropped) and r-1 (after both), and a record without ``article_body``."""
    squirrel = next(r for r in real_records() if r["is_part_of"]["identifier"] == "enwiki")
    revision = squirrel["version"]["identifier"]
    html = squirrel["article_body"]["html"]
    first_paragraph = html[html.index("<p id=") : html.index("</p>", html.index("<p id=")) + 4]
    newer = {**squirrel, "version": {"identifier": revision + 1}}
    newer["article_body"] = {"html": html.replace(first_paragraph, "")}
    older = {**squirrel, "version": {"identifier": revision - 1}}
    bodyless = {k: v for k, v in page_records("enwiki")[0].items() if k != "article_body"}
    dump = write_enterprise_dump(
        tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", [squirrel, newer, older, bodyless], 1
    )
    report = build_knowledge_source(dump, tmp_path / "data", ParseSettings(KnowledgeSourceParams(workers=0)))
    pages = list(iter_pages(SnapshotPaths(tmp_path / "data", report.snapshot_id)))
    assert [(p["wikipedia_id"], p["history"]["revid"]) for p in pages] == [("28492", revision + 1)]
    assert "Squirrels are members of the family Sciuridae" not in "".join(pages[0]["text"])  # the newer text
    assert report.skipped == {"older_revision_of_a_page": 1, "no_article_body": 1}
    assert any("revision" in example and "28492" in example for example in report.skipped_examples)


def test_an_incremental_build_reuses_the_pages_whose_revision_it_converted(records, tmp_path: Path) -> None:
    """Run N, then run N+1 a month later in which one record has a newer revision (its HTML with a
    paragraph dropped): N+1 built with ``incremental`` copies the other pages' rows from N and equals a full
    build of N+1; an XML-route snapshot is never the source of an HTML-route build's pages."""
    data = tmp_path / "data"
    first = write_enterprise_dump(tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", records)
    build_knowledge_source(first, data, ParseSettings(KnowledgeSourceParams(workers=0)), progress=False)
    edited = dict(records[1])
    html = edited["article_body"]["html"]
    paragraph = html[html.index("<p id=") : html.index("</p>", html.index("<p id=")) + 4]
    edited.update(
        version={"identifier": edited["version"]["identifier"] + 1},
        article_body={"html": html.replace(paragraph, "")},
    )
    month = [*records[:1], edited, *records[2:]]
    second = write_enterprise_dump(tmp_path / "enwiki-NS0-20240201-ENTERPRISE-HTML.json.tar.gz", month)
    settings = ParseSettings(KnowledgeSourceParams(workers=0))
    incremental = build_knowledge_source(second, data, settings, incremental=True, progress=False)
    assert incremental.reuse == "enwiki-20240101"
    assert incremental.pages_reused == len(records) - 1
    full = build_knowledge_source(second, tmp_path / "full", settings, progress=False)
    assert full.pages_reused == 0

    def rows(paths: SnapshotPaths) -> list[dict]:
        return sorted(iter_pages(paths), key=lambda page: page["wikipedia_id"])

    assert rows(SnapshotPaths(data, "enwiki-20240201")) == rows(
        SnapshotPaths(tmp_path / "full", "enwiki-20240201")
    )
    # the XML route's snapshot of the same wiki, dated between: its pages are not the HTML route's
    twin = write_dump(tmp_path / "enwiki-20240115-pages-articles.xml", wikitext_twin(records))
    build_knowledge_source(twin, data, settings, progress=False)
    again = build_knowledge_source(second, data, settings, incremental=True, replace=True, progress=False)
    assert again.pages_reused == 0 and again.reuse.startswith("refused")


def test_knowledge_source_input_decides_what_a_renamed_dump_is(tmp_path: Path) -> None:
    """A renamed Enterprise dump (``dump.bin``): ``input: enterprise-html`` builds it on the HTML route;
    ``input: xml`` reads it as XML, and the XML reader's error names the file."""
    squirrel = [r for r in real_records() if r["is_part_of"]["identifier"] == "enwiki"]
    renamed = write_enterprise_dump(tmp_path / "dump.bin", squirrel)

    def build(data: Path, form: str):
        section = KnowledgeSourceParams(workers=0, snapshot=SNAPSHOT, input=form)
        return build_knowledge_source(renamed, data, ParseSettings(section), progress=False)

    assert build(tmp_path / "html", ENTERPRISE_FORM).articles == 1
    manifest = json.loads(SnapshotPaths(tmp_path / "html", SNAPSHOT).manifest_file.read_text())
    assert manifest["route"] == ENTERPRISE_FORM
    with pytest.raises(DumpFormatError, match=rf"{renamed}: malformed XML"):
        build(tmp_path / "xml", "xml")


def test_what_a_record_claims_is_checked_against_the_dump(tmp_path: Path) -> None:
    """Issue 63, part 4, on copies of the real enwiki record (new page ids): titles holding NUL or ESC, an
    empty one and one of 10 KB are refused as titles; main_entity values that are no QID are left out and
    counted; the real dewiki record in an enwiki dump is refused as another wiki's page, not published."""
    records = real_records()
    squirrel = next(r for r in records if r["is_part_of"]["identifier"] == "enwiki")
    dewiki = next(r for r in records if r["is_part_of"]["identifier"] == "dewiki")

    def copy(number: int, **fields) -> dict:
        return {**squirrel, "identifier": 90_000_000 + number, **fields}

    bad_titles = ["Squirrel\x00", "Squirrel\x1b[31m", "", "S" * 10_000, "Squirrel | x"]
    bad_qids = ["../../etc/passwd", "P31", "q42 ", "Q" + "7" * 5000, "Q0123"]
    made = [copy(i, name=title) for i, title in enumerate(bad_titles)]
    made += [
        copy(10 + i, name=f"Squirrel {i}", main_entity={"identifier": qid}) for i, qid in enumerate(bad_qids)
    ]
    made.append({**dewiki, "name": "Squirrel (dewiki)"})
    made.append(copy(99, name="Squirrel kept", main_entity={"identifier": "Q9482"}))
    dump = write_enterprise_dump(tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", made, 2)
    report = build_knowledge_source(dump, tmp_path / "data", ParseSettings(KnowledgeSourceParams(workers=0)))
    pages = {
        p["wikipedia_title"]: p for p in iter_pages(SnapshotPaths(tmp_path / "data", report.snapshot_id))
    }
    assert set(pages) == {f"Squirrel {i}" for i in range(len(bad_qids))} | {"Squirrel kept"}
    assert all(pages[f"Squirrel {i}"].get("wikidata_info") is None for i in range(len(bad_qids)))
    assert pages["Squirrel kept"]["wikidata_info"] == {"wikidata_id": "Q9482"}
    assert report.skipped["invalid_title"] == len(bad_titles)
    assert report.skipped["invalid_qid"] == len(bad_qids) and report.skipped["other_wiki"] == 1
    examples = " ".join(report.skipped_examples)
    assert "U+0000" in examples and "U+001B" in examples and "10,000 bytes" in examples
    assert "a dewiki record in a enwiki dump" in examples and "'P31'" in examples


@pytest.mark.parametrize("newer_first", [False, True], ids=["older-first", "newer-first"])
def test_everything_a_page_brings_comes_from_the_revision_that_wins(
    tmp_path: Path, newer_first: bool
) -> None:
    """Issue 63, part 3, on the real enwiki record: the same page id at revision r (QID Q9482, its real
    redirects) and r+1 (renamed "Squirrel (animal)", another QID, its real redirects less one), in either
    order: the page is revision r+1's, with its QID; what revision r listed leads nowhere now and is
    dropped, counted, never a missing target. A record listing an existing article's title among its
    redirects does not make that title a redirect to itself: counted."""
    squirrel = next(r for r in real_records() if r["is_part_of"]["identifier"] == "enwiki")
    revision = squirrel["version"]["identifier"]
    older = {**squirrel, "main_entity": {"identifier": "Q9482"}}
    newer = {
        **squirrel,
        "name": "Squirrel (animal)",
        "version": {"identifier": revision + 1},
        "main_entity": {"identifier": "Q1234567"},
        "redirects": squirrel["redirects"][1:],
    }
    other = page_records("enwiki")[0]
    clashing = {**other, "redirects": [*other.get("redirects", []), {"name": "Squirrel (animal)"}]}
    records = [newer, older, clashing] if newer_first else [older, newer, clashing]
    dump = write_enterprise_dump(tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", records, 1)
    report = build_knowledge_source(dump, tmp_path / "data", ParseSettings(KnowledgeSourceParams(workers=0)))
    paths = SnapshotPaths(tmp_path / "data", report.snapshot_id)
    pages = {p["wikipedia_title"]: p for p in iter_pages(paths)}
    assert pages["Squirrel (animal)"]["history"]["revid"] == revision + 1 and "Squirrel" not in pages
    assert pages["Squirrel (animal)"]["wikidata_info"] == {"wikidata_id": "Q1234567"}
    redirects = pl.read_parquet(paths.redirects_file)
    assert set(redirects["status"].to_list()) == {"resolved"}  # none missing its target
    assert set(redirects["target_wikipedia_title"].to_list()) == {"Squirrel (animal)"}
    assert "Squirrel (animal)" not in redirects["source_title"].to_list()
    assert report.skipped["redirect_named_like_an_article"] == 1
    if newer_first:
        assert report.skipped["older_revision_of_a_page"] == 1
    else:
        assert report.skipped["redirect_of_a_superseded_revision"] == len(squirrel["redirects"])
