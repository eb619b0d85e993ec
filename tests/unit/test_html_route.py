"""The HTML route's pure parts on real data: Parsoid HTML -> KILT entries, and the Enterprise dump reader,
with hostile variants made in code from the real records and pages (never hand-written HTML)."""

from __future__ import annotations

import copy
import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from assets.input_forms import FORM_NAMES, recorded_conversion, recorded_route
from assets.limits import HtmlLimits
from assets.wikipedia.articles import bullet_marker_end
from assets.wikipedia.dump.enterprise import (
    EnterpriseDumpError,
    EnterpriseRead,
    is_enterprise_dump,
    read_enterprise_dump,
)
from assets.wikipedia.html.parsoid import HtmlPageError, parse_parsoid_html
from assets.wikipedia.wikitext import parse_wikitext
from support.enterprise_dump import page_records, parsoid_pages, real_records, write_enterprise_dump
from support.real_data import real_file
from support.timing import cpu_seconds

MAX = 32 * 2**20


def _record(wiki: str) -> dict:
    return next(r for r in real_records() if r["is_part_of"]["identifier"] == wiki)


def _text(parsed) -> str:
    return " ".join(parsed.text)


# ------------------------------------------------------------------------------------- Parsoid HTML
@pytest.mark.parametrize(
    ("wiki", "made_by_templates", "lost_on_wikitext"),
    [
        ("enwiki", "10–14 cm (3.9–5.5 in)", "(3.9–5.5 in)"),  # {{convert}}
        ("dewiki", "Squirrel (englisch für", "englisch für"),  # {{enS}}
        ("ruwiki", "Squirrel (с англ.", "с англ."),  # {{lang-en}}
    ],
)
def test_the_html_keeps_what_templates_make(wiki: str, made_by_templates: str, lost_on_wikitext: str) -> None:
    record = _record(wiki)
    html = parse_parsoid_html(record["name"], record["article_body"]["html"])
    wikitext = parse_wikitext(record["name"], record["article_body"]["wikitext"])
    assert made_by_templates in _text(html)
    assert lost_on_wikitext not in _text(wikitext)
    # the same KILT shape as the wikitext route: title first, sections, bullets, one entry a line
    assert html.text[0] == "Squirrel\n" and all(entry.endswith("\n") for entry in html.text)
    headings = [e for e in html.text if e.startswith("Section::::")]
    assert [e for e in wikitext.text if e.startswith("Section::::")] == headings
    for anchor in html.anchors:  # offsets index the final strings
        assert html.text[anchor.paragraph_id][anchor.start : anchor.end] == anchor.text


def test_what_a_kilt_page_leaves_out_is_left_out() -> None:
    record = _record("enwiki")
    html = record["article_body"]["html"]
    parsed = parse_parsoid_html(record["name"], html)
    text = _text(parsed)
    assert 'class="mw-ref reference"' in html and "cite_note" in html  # references are there ...
    assert "[1]" not in text and "^" not in text and "Retrieved" not in text.split("Section::::Further")[0]
    assert 'role="note"' in html and "For other uses, see" not in text  # ... a hatnote, the navboxes
    assert 'role="navigation"' in html and "Extant species of family Sciuridae" not in text
    assert "Family of rodents" not in text  # the hidden short description
    assert "mw-parser-output" not in text and "{" not in text  # no styles
    assert "Articles with short description" in parsed.categories  # categories from the page's links
    assert not parsed.is_disambiguation
    assert any(a.target == "Rodent" and a.text == "rodents" for a in parsed.anchors)
    german = _record("dewiki")
    assert parse_parsoid_html(german["name"], german["article_body"]["html"]).is_disambiguation


def test_both_text_styles_mean_what_they_mean_on_the_wikitext_route() -> None:
    record = _record("enwiki")
    kilt = parse_parsoid_html(record["name"], record["article_body"]["html"], style="kilt")
    clean = parse_parsoid_html(record["name"], record["article_body"]["html"], style="clean")
    assert '"esquirel"' in _text(kilt) and '"esquirel"' not in _text(clean)  # italics quoted in kilt
    assert " esquirel" in _text(clean)
    assert all(bullet_marker_end(e) for e in kilt.text if e.startswith("BULLET::::"))
    # captions: none in kilt (KILT's pages have no images); clean keeps a gallery's, as the wikitext route
    wikitext_clean = parse_wikitext(record["name"], record["article_body"]["wikitext"], style="clean")
    captions = [e for e in wikitext_clean.text if "Chandigarh" in e]
    assert captions and [e for e in clean.text if "Chandigarh" in e] == captions
    assert not [e for e in kilt.text if "Chandigarh" in e]
    # tables: none in kilt; clean writes a row a paragraph, its cells joined by " | "
    rows = [e for page in parsoid_pages("enwiki") for e in parse_parsoid_html(page["title"], page["html"],
            style="clean").text if e.count(" | ") >= 2]  # fmt: skip
    assert len(rows) >= 5 and rows[0].startswith("Title (translated) | Area of focus")  # Einstein's papers
    with pytest.raises(ValueError, match="unknown text style"):
        parse_parsoid_html("x", "<p>x</p>", style="fancy")


def test_every_shipped_parsoid_page_converts_with_consistent_anchors() -> None:
    for page in parsoid_pages():
        parsed = parse_parsoid_html(page["title"], page["html"])
        assert len(parsed.text) > 2, page["title"]
        for anchor in parsed.anchors:
            assert parsed.text[anchor.paragraph_id][anchor.start : anchor.end] == anchor.text


def test_hostile_html_is_parsed_in_linear_time_or_refused_clearly() -> None:
    record = _record("enwiki")
    body = record["article_body"]["html"]
    paragraph = body[body.index("<p id=") : body.index("</p>", body.index("<p id=")) + 4]
    with pytest.raises(HtmlPageError, match="empty"):
        parse_parsoid_html("x", "  ")
    cut = parse_parsoid_html("x", body[: len(body) // 2])  # malformed: cut inside the document
    assert len(cut.text) > 5
    timings = {}
    for depth in (10_000, 100_000):  # refused whole, never cut where libxml2's depth limit falls
        nested = "<div>" * depth + paragraph + "</div>" * depth

        def refused(html: str = nested) -> None:
            with pytest.raises(HtmlPageError, match=r"depth|deeper"):
                parse_parsoid_html("x", html)

        timings[depth] = cpu_seconds(refused, 1)
    assert timings[100_000] < 20 * max(timings[10_000], 0.01)  # linear, not quadratic
    garbage = parse_parsoid_html("x", bytes(range(256)) * 50)  # not UTF-8, not HTML
    assert garbage.text[0] == "x\n"


# ------------------------------------------------------------------------------------- Enterprise dumps
def test_a_dump_is_read_as_a_stream_of_typed_records(tmp_path: Path) -> None:
    records = real_records() + page_records("enwiki")
    dump = write_enterprise_dump(tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", records, 3)
    assert is_enterprise_dump(dump)
    renamed = dump.rename(tmp_path / "copy.tgz")
    assert is_enterprise_dump(renamed)  # by its content: a gzip'd tar of ndjson
    read = EnterpriseRead()
    got = list(read_enterprise_dump(renamed, MAX, read))
    assert [record.identifier for _, _, record in got] == [
        r["identifier"] for i in range(3) for r in records[i::3]
    ]
    assert read.members == 3 and read.records == len(records) and read.skipped == 0
    member, line, squirrel = next(g for g in got if g[2].name == "Squirrel" and g[2].qid == "Q9482")
    assert member.endswith(".ndjson") and line >= 1 and squirrel.revision == 1171934824
    assert "Sciuridae" in [r.name for r in squirrel.redirects] and squirrel.html and squirrel.wikitext
    assert not is_enterprise_dump(Path(__file__))


def test_bad_records_are_counted_skips_naming_member_and_line(tmp_path: Path) -> None:
    good = real_records()
    other_namespace = copy.deepcopy(good[1]) | {"namespace": {"identifier": 1}, "identifier": 9}
    wrong_type = copy.deepcopy(good[1]) | {"identifier": "not a number"}
    past_int64 = copy.deepcopy(good[1]) | {"identifier": 2**63}  # no int64 column holds it
    too_large = copy.deepcopy(good[1])
    too_large["article_body"]["html"] *= 290  # a 100 MB article_body.html: over the 32 MiB bound
    huge_number = json.dumps(good[1]).replace(
        f'"identifier": {good[1]["identifier"]}', '"identifier": ' + "9" * 5000, 1
    )
    lines = [json.dumps(r) for r in (good[0], other_namespace, wrong_type, too_large, good[2], past_int64)]
    lines.insert(3, huge_number)
    lines.insert(2, "[" * 100_000 + "]" * 100_000)  # nested 100k deep
    not_utf8 = json.dumps(good[1]).encode().replace(b"Squirrel", b"Squ\xffrrel")
    path = tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        _add(archive, "a.ndjson", ("\n".join(lines) + "\n").encode() + not_utf8 + b"\n")
        _add(archive, "page.html", _page_bytes())  # a member that is not ndjson: each line a skip
        _add_dir(archive, "folder")
    read = EnterpriseRead()
    names = [record.name for _, _, record in read_enterprise_dump(path, MAX, read)]
    assert names == ["Squirrel", "Squirrel"]  # dewiki and ruwiki: the rest skipped
    reasons = read.skipped_by_reason
    assert reasons["other_namespace"] == 1 and reasons["record_too_large"] == 1
    assert reasons["not_a_file"] == 1 and reasons["not_utf8"] == 1 and reasons["not_a_record"] >= 5
    first = {(skip["reason"], skip.get("line")) for skip in read.skips if skip["file"].endswith("a.ndjson")}
    assert ("other_namespace", 2) in first and ("record_too_large", 6) in first
    assert all(skip["file"].startswith(path.name + ":") for skip in read.skips if "line" in skip)


def test_a_truncated_or_damaged_dump_is_an_error_naming_the_file(tmp_path: Path) -> None:
    whole = write_enterprise_dump(
        tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", real_records()
    )
    data = whole.read_bytes()
    for fraction in (0.3, 0.6, 0.99):
        cut = tmp_path / f"cut-{fraction}.json.tar.gz"
        cut.write_bytes(data[: int(len(data) * fraction)])
        with pytest.raises(EnterpriseDumpError, match=rf"{cut.name}.*(truncated|damaged|cut)"):
            list(read_enterprise_dump(cut, MAX))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    damaged = tmp_path / "damaged.json.tar.gz"
    damaged.write_bytes(bytes(flipped))
    with pytest.raises(EnterpriseDumpError, match=r"damaged\.json\.tar\.gz"):
        list(read_enterprise_dump(damaged, MAX))


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def _add_dir(archive: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    archive.addfile(info)


def _page_bytes() -> bytes:
    return real_file("wikipedia_html", "parsoid_pages", "Foobar.html").read_bytes()[:4000]


def test_a_renamed_dump_is_named_from_its_records_within_the_bound(tmp_path: Path) -> None:
    from assets.wikipedia.dump import snapshot_id_of_dump

    named = write_enterprise_dump(
        tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz", page_records()
    )
    assert snapshot_id_of_dump([named]) == "enwiki-20240101"  # by its name, nothing read
    renamed = write_enterprise_dump(tmp_path / "copy.tgz", page_records())
    newest = max(r["date_modified"] for r in page_records())
    assert snapshot_id_of_dump([renamed]) == f"enwiki-{newest[:10].replace('-', '')}"
    with pytest.raises(ValueError, match="no record with a date_modified"):  # every record over the bound
        snapshot_id_of_dump([renamed], max_record_bytes=1000)


def test_the_revision_index_keeps_what_a_dict_would_in_16_bytes_a_page() -> None:
    """Every page id's kept revision (a page seen twice keeps its newest): the same answers as a dict over
    100k ids drawn with repeats, merged through a small buffer; 16 bytes a page once merged; the same
    page id 100k times costs no memory."""
    import numpy as np

    from assets.wikipedia.pages.revisions import RevisionIndex

    rng = np.random.default_rng(54)
    index, truth = RevisionIndex(buffer=1000), {}
    for page_id, revision in zip(
        rng.integers(0, 60_000, 100_000), rng.integers(0, 2**40, 100_000), strict=True
    ):
        kept = truth.get(int(page_id))
        assert index.get(int(page_id)) == kept
        if kept is None or revision > kept:
            truth[int(page_id)] = int(revision)
            index.set(int(page_id), int(revision))
    assert len(index) == len(truth) and all(index.get(k) == v for k, v in truth.items())
    assert index.ids.nbytes + index.revisions.nbytes <= 16 * len(truth) and len(index.recent) < 1000
    assert index.get(10**12) is None
    repeated = RevisionIndex(buffer=10)
    for revision in range(100_000):
        repeated.set(7, revision)
    assert len(repeated) == 1 and repeated.get(7) == 99_999


def test_the_input_form_is_read_from_the_file_unless_the_setting_says(tmp_path: Path) -> None:
    """``knowledge_source.input``: ``auto`` reads the form from the name, else the content (a renamed
    copy); ``xml`` takes the file as XML; ``enterprise-html`` on a file holding no records is an error
    naming the file and the setting."""
    from assets.wikipedia.dump import dump_form
    from support.enterprise_dump import wikitext_twin

    renamed = write_enterprise_dump(tmp_path / "dump.bin", real_records())
    xml = tmp_path / "enwiki-20240101-pages-articles.xml"
    xml.write_bytes(wikitext_twin(real_records()))
    assert dump_form(renamed) == dump_form(renamed, "enterprise-html") == "enterprise-html"
    assert dump_form(renamed, "xml") == dump_form(xml) == dump_form(xml, "auto") == "xml"
    with pytest.raises(EnterpriseDumpError, match=rf"{xml}: knowledge_source.input is enterprise-html"):
        dump_form(xml, "enterprise-html")
    with pytest.raises(ValueError, match="choose auto, enterprise-html or xml"):
        dump_form(xml, "html")


def test_a_form_told_already_is_not_told_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dump plan reads the dump's head only when no one told its form for the same setting."""
    from assets.wikipedia.pages import plan as dump_plan
    from support.real_data import excerpt_dump

    told = dump_plan.plan_dump_parts(excerpt_dump(), tmp_path).route
    monkeypatch.setattr(dump_plan, "dump_form", lambda *args: pytest.fail("the head was read again"))
    assert told == "xml" and dump_plan.plan_dump_parts(excerpt_dump(), tmp_path, form=told).route == told


@pytest.mark.parametrize(
    "told",
    ["xml", ["auto"], ["auto", "xml", "x"], ["auto", "zim"], ["auto", "../../etc"], ["xml", "xml"], {"a": 1}],
)
def test_a_told_form_from_the_dump_registry_is_checked(told: object) -> None:
    """A dump handle's told form (which the dump registry keeps, a file a user may edit) is taken only as
    ``[input, form]`` for the run's own input and a known form; anything else has the plan read the head."""
    from orchestration.assets.wikipedia import TOLD_FORM, told_form
    from orchestration.resources import DumpHandle

    assert told_form(DumpHandle(("d.xml",), "cli", {TOLD_FORM: ["auto", "enterprise-html"]}), "auto") == (
        "enterprise-html"
    )
    assert told_form(DumpHandle(("d.xml",), "cli", {TOLD_FORM: told}), "auto") is None
    assert told_form(DumpHandle(("d.xml",), "cli", {}), "auto") is None


def test_every_form_has_one_name_and_a_reader() -> None:
    """A form's one name is what the setting takes, the parse steps' reader is found by and a manifest
    records; a manifest an older version wrote (``wikitext``, ``parsoid-html``, or no route) reads as the
    form it was; a form without a reader is refused by name."""
    from typing import get_args

    from assets.params import KnowledgeSourceParams
    from assets.wikipedia.dump import FORMS
    from assets.wikipedia.pages import READERS, reader_for

    names = [form.name for form in FORMS]
    declared = set(get_args(KnowledgeSourceParams.model_fields["input"].annotation)) - {"auto"}
    assert set(names) == set(FORM_NAMES) == set(READERS) == declared == {"xml", "enterprise-html"}
    assert [recorded_route(m) for m in ({}, {"route": "wikitext"}, {"route": "parsoid-html"})] == [
        "xml",
        "xml",
        "enterprise-html",
    ]
    assert recorded_route({"route": "enterprise-html"}) == "enterprise-html"
    assert recorded_conversion({"text_style": "kilt"}) == {"text_style": "kilt", "route": "xml"}
    with pytest.raises(ValueError, match=r"no reader for the input form 'zim'.*forms: enterprise-html, xml"):
        reader_for("zim")


def test_a_tar_cut_at_a_member_boundary_is_an_error_naming_where_it_stops(tmp_path: Path) -> None:
    """Issue 63, part 2: a whole gzip around a tar that stops after a member (no end-of-archive blocks), as
    a download cut between members leaves it, is refused naming the file, the member and the byte; the same
    members with their end blocks read whole."""
    whole = write_enterprise_dump(tmp_path / "whole.json.tar.gz", real_records() * 2, members=3)
    tar = gzip.decompress(whole.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        members = archive.getmembers()
    assert len(members) == 3 and len(list(read_enterprise_dump(whole, MAX))) == 6
    cut = tmp_path / "enwiki-NS0-20240101-ENTERPRISE-HTML.json.tar.gz"
    cut.write_bytes(gzip.compress(tar[: members[2].offset]))
    read = []
    with pytest.raises(EnterpriseDumpError, match=rf"{cut.name}: the tar archive stops after member "
                       rf"'{members[1].name}' at byte {members[2].offset:,}"):  # fmt: skip
        read.extend(read_enterprise_dump(cut, MAX))
    assert read  # the members before the cut were read: the error comes where the tar stops
    padded = tmp_path / "padded.json.tar.gz"  # the end blocks and a record's padding: whole
    padded.write_bytes(gzip.compress(tar[: members[2].offset] + bytes(10240)))
    assert len(list(read_enterprise_dump(padded, MAX))) == 4  # two members of two records


@pytest.mark.parametrize("where", ["nest", "text", "attribute"])
def test_a_page_over_the_html_limits_is_whole_or_refused_by_name(where: str) -> None:
    """Issue 63, part 1, on the real enwiki record's HTML: 300 nested divs or an 11 MB text node or
    attribute (inside the 32 MiB record bound) before the article's text no longer cut the page there
    (libxml2's own limits, 256 levels and 10 MB, dropped everything after): the page is whole; over
    limits.html it is refused naming the setting, and the HTML route counts it as a skip naming its record."""
    record = _record("enwiki")
    body = record["article_body"]["html"]
    first = body.index("<p id=")
    last_words = " ".join(parse_parsoid_html("Squirrel", body).text[-1].split()[-5:])

    def spliced(size: int) -> str:
        if where == "nest":
            return body[:first] + "<div>" * size + "x" + "</div>" * size + body[first:]
        if where == "text":
            return body[:first] + "<p>" + "x" * size + "</p>" + body[first:]
        return body[:first] + f'<span title="{"x" * size}">y</span>' + body[first:]

    whole = parse_parsoid_html("Squirrel", spliced(300 if where == "nest" else 11 << 20))
    assert last_words in " ".join(whole.text)
    over = spliced(600 if where == "nest" else 17 << 20)
    with pytest.raises(HtmlPageError, match=r"limits\.html\.max_(depth|node_bytes)"):
        parse_parsoid_html("Squirrel", over)
    small = HtmlLimits(max_depth=100, max_node_bytes=1 << 20)
    with pytest.raises(HtmlPageError, match=r"limits\.html"):
        parse_parsoid_html("Squirrel", spliced(300 if where == "nest" else 11 << 20), limits=small)


def test_the_kilt_style_leaves_rendered_citation_templates_out() -> None:
    """Issue 63, part 10, on the real enwiki Parsoid page "Albert Einstein": what its citation templates
    rendered ({{cite book}}: ``<cite class="citation ...">``, the "Works cited" list) is not in the kilt
    style's text, as the wikitext route and KILT's pages drop the templates; the clean style keeps it."""
    import lxml.etree

    from support.enterprise_dump import parsoid_pages

    page = next(p for p in parsoid_pages("enwiki") if p["title"] == "Albert Einstein")
    root = lxml.etree.fromstring(page["html"].encode(), lxml.etree.HTMLParser(huge_tree=True))
    cited = [
        " ".join("".join(c.itertext()).split())
        for c in root.iter("cite")
        if "citation" in (c.get("class") or "")
    ]
    assert len(cited) > 20
    kilt = " ".join(" ".join(parse_parsoid_html(page["title"], page["html"]).text).split())
    clean = " ".join(" ".join(parse_parsoid_html(page["title"], page["html"], style="clean").text).split())
    assert not [c for c in cited if len(c) > 40 and c in kilt]
    assert sum(c in clean for c in cited if len(c) > 40) > 10
