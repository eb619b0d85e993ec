"""Wikidata's entity files read as typed entities: every layout of the real files in tests/data, their
statements read back exactly (checked against an independent ``json`` parse), and hostile variants
derived from them (truncated streams, lines that are not JSON, an oversized line, an entity with 100,000
statements, snaks without a value, unknown value types)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import time
from pathlib import Path

import pytest

from assets.limits import WikidataLimits
from assets.wikidata import (
    Entity,
    EntityHead,
    ReadReport,
    Value,
    WikidataReadError,
    embedded_entity_files,
    iter_entities,
    mapping,
    render_value,
    sitelink_title,
    snak_value,
    term,
    time_text,
)
from support.real_data import real_file

SAMPLE = "opentapioca_sample_wikidata_items.json.bz2"
LAYOUTS = [  # file under tests/data/wikidata, layout, entities
    ("opentapioca_sample_wikidata_items.json.bz2", "dump", 100),
    ("opentapioca_short_stream.ndjson.bz2", "lines", 635),
    ("wdtk_sample-dump-20150815.json.gz", "dump", 101),
    ("wikibase-dump-filter_first50.json.gz", "dump", 49),
    ("entitybase_entity_metadata_labels.jsonl.xz", "lines", 838),
    ("entities/wbgetentities-Q6-Q42-P31.json", "document", 3),
    ("entities/wd_Q42.json", "document", 1),
    ("entities/WE-Framework_Q30.json", "lines", 1),
]


def _data(name: str) -> Path:
    """A real entity file: the embedded default's (package data) or one of tests/data/wikidata."""
    embedded = {path.name: path for path in embedded_entity_files()}
    return embedded.get(name) or real_file("wikidata", *name.split("/"))


def _raw_entities(path: Path) -> list[dict]:
    """The entities of a file by an independent reading: ``json`` of each line or of the document."""
    head = path.read_bytes()[:6]
    opener = bz2.open if head[:3] == b"BZh" else gzip.open if head[:2] == b"\x1f\x8b" else open
    if head == b"\xfd7zXZ\x00":
        opener = lzma.open
    with opener(path, "rb") as handle:
        data = handle.read()
    try:
        document = json.loads(data)
    except json.JSONDecodeError:
        lines = [line.strip().rstrip(b",") for line in data.splitlines()]
        return [json.loads(line) for line in lines if line not in (b"", b"[", b"]")]
    if isinstance(document, dict) and "entities" in document:
        return list(document["entities"].values())
    return document if isinstance(document, list) else [document]


@pytest.mark.parametrize(("name", "layout", "count"), LAYOUTS)
def test_every_layout_reads_its_real_entities(name: str, layout: str, count: int) -> None:
    path = _data(name)
    report = ReadReport()
    entities = list(iter_entities(path, Entity, report=report, threads=2))
    assert report.layouts[path.name] == layout
    assert len(entities) == count and report.skipped == 0
    raw = _raw_entities(path)
    assert [e.id for e in entities] == [r["id"] for r in raw]
    for entity, expected in zip(entities, raw, strict=True):  # every statement, exactly
        claims = expected.get("claims") or {}
        assert sorted(mapping(entity.claims)) == sorted(claims)
        for prop, statements in mapping(entity.claims).items():
            assert [s.id for s in statements] == [s.get("id", "") for s in claims[prop]]
            assert [s.rank for s in statements] == [s["rank"] for s in claims[prop]]
        labels = expected.get("labels") or {}
        assert {k: term(entity.labels, k) for k in mapping(entity.labels)} == {
            k: t["value"] for k, t in labels.items()
        }
        for site, link in (expected.get("sitelinks") or {}).items():
            assert sitelink_title(entity.sitelinks, site) == link["title"]


def test_an_uncompressed_dump_reads_as_its_gzip(tmp_path: Path) -> None:
    packed = _data("wikibase-dump-filter_first50.json.gz")
    plain = tmp_path / "latest-all.json"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    assert [e.id for e in iter_entities(plain, EntityHead)] == [
        e.id for e in iter_entities(packed, EntityHead)
    ]


def _entity(name: str, qid: str) -> Entity:
    return next(e for e in iter_entities(_data(name), Entity) if e.id == qid)


def test_real_statements_read_back_exactly() -> None:
    angola = _entity("opentapioca_sample_wikidata_items.json.bz2", "Q916")
    (capital,) = mapping(angola.claims)["P36"]
    assert (capital.id, capital.rank) == ("q916$6B20E52E-F10E-42C9-9667-2AD6F0E671F3", "normal")
    assert snak_value(capital.mainsnak) == Value("entity", "Q3897", object="Q3897")
    usa = _entity("entities/WE-Framework_Q30.json", "Q30")
    capitals = {snak_value(s.mainsnak).value: s.rank for s in mapping(usa.claims)["P36"]}
    assert capitals["Q61"] == "preferred"  # Washington, D.C.; the others normal
    assert set(capitals.values()) == {"preferred", "normal"}


def test_values_read_as_a_reader_reads_them() -> None:
    assert time_text("+1975-11-11T00:00:00Z", 11) == "11 November 1975"
    assert time_text("+1975-11-00T00:00:00Z", 10) == "November 1975"
    assert time_text("+1975-00-00T00:00:00Z", 9) == "1975"
    assert time_text("+1970-00-00T00:00:00Z", 8) == "1970s"
    assert time_text("+1901-00-00T00:00:00Z", 7) == "20th century"
    assert time_text("-0500-00-00T00:00:00Z", 9) == "500 BCE"
    assert time_text("-13798000000-00-00T00:00:00Z", 3) == "13,798,000,000 years ago"
    area = Value("quantity", "+1246700", unit="Q712226")
    assert render_value(area, {"Q712226": "square kilometre"}.get) == "1246700 square kilometre"
    assert render_value(Value("coordinate", "-12.35,17.35"), str) == "12.35°S, 17.35°E"
    # what a passage cannot state is a reason, counted by the build
    assert snak_value({"snaktype": "somevalue", "property": "P36"}) == "somevalue"
    assert snak_value({"snaktype": "novalue", "property": "P36"}) == "novalue"
    unknown = {"snaktype": "value", "property": "P1", "datavalue": {"type": "zzz-new-type", "value": 1}}
    assert snak_value(unknown) == "unknown_type:zzz-new-type"
    broken = {"snaktype": "value", "property": "P1", "datavalue": {"type": "time", "value": {}}}
    assert snak_value(broken) == "malformed:time"


def _lines(name: str) -> list[bytes]:
    with bz2.open(_data(name), "rb") as handle:
        return handle.read().splitlines(keepends=True)


@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("codec", [gzip, bz2, lzma])
def test_a_truncated_stream_is_an_error_naming_the_file(tmp_path: Path, codec, fraction: float) -> None:
    """A real entity file recompressed by each codec and cut at ``fraction``: never a short, silent
    success (rapidgzip once read 24 of 49 entities of such a file, or none, with rc 0)."""
    whole = b"".join(_lines("opentapioca_short_stream.ndjson.bz2"))
    data = codec.compress(whole)
    cut = tmp_path / f"cut.{codec.__name__}"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(
        WikidataReadError, match=f"{cut}: the .* stream is truncated.* after [0-9,]+ decompressed"
    ):
        list(iter_entities(cut, EntityHead, threads=2))


@pytest.mark.parametrize("content", [b"", b"[\n]\n", b"\n\n"])
@pytest.mark.parametrize("codec", [None, gzip, bz2])
def test_an_entity_file_without_entities_is_refused(tmp_path: Path, content: bytes, codec) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(codec.compress(content) if codec else content)
    with pytest.raises(WikidataReadError, match=f"{path}: holds no entity"):
        list(iter_entities(path, EntityHead))


def test_lines_that_are_not_entities_are_counted_skips(tmp_path: Path) -> None:
    lines = _lines("opentapioca_short_stream.ndjson.bz2")
    broken = [
        *lines[:3],
        b'{"id": "Q1", "labels": \n',
        b"not json at all\n",
        b'["an", "array"]\n',
        *lines[3:],
    ]
    path = tmp_path / "broken.ndjson"
    path.write_bytes(b"".join(broken))
    report = ReadReport()
    entities = list(iter_entities(path, EntityHead, report=report))
    assert len(entities) == len(lines)
    assert report.skipped == 3 and report.skipped_by_reason == {"not_an_entity": 3}
    offset = sum(len(line) for line in lines[:3])
    assert report.skips[0]["offset"] == offset and report.skips[0]["file"] == "broken.ndjson"


def test_an_oversized_line_is_skipped_and_never_held(tmp_path: Path) -> None:
    lines = _lines("opentapioca_short_stream.ndjson.bz2")
    limit = sorted(map(len, lines))[len(lines) // 2]  # half the real entities are longer
    path = tmp_path / "stream.ndjson"
    path.write_bytes(b"".join(lines))
    report = ReadReport()
    ids = [
        e.id
        for e in iter_entities(path, EntityHead, report=report, limits=WikidataLimits(max_entity_bytes=limit))
    ]
    too_large = [json.loads(line)["id"] for line in lines if len(line) > limit + 1]
    assert too_large and report.skipped_by_reason == {"too_large": len(too_large)}
    assert ids == [json.loads(line)["id"] for line in lines if len(line) <= limit + 1]


def test_a_document_over_its_limit_is_refused(tmp_path: Path) -> None:
    path = real_file("wikidata", "entities", "wd_Q42.json")
    with pytest.raises(WikidataReadError, match="max_document_bytes"):
        list(iter_entities(path, limits=WikidataLimits(max_document_bytes=10_000)))


def test_an_entity_with_100000_statements_reads_in_linear_time(tmp_path: Path) -> None:
    raw = next(r for r in _raw_entities(_data(SAMPLE)) if r["id"] == "Q916")
    statements = [s for group in raw["claims"].values() for s in group]
    many = [dict(statements[i % len(statements)], id=f"Q916${i}") for i in range(100_000)]
    raw = dict(raw, claims={"P1": [dict(s, mainsnak=dict(s["mainsnak"], property="P1")) for s in many]})
    path = tmp_path / "big.ndjson"
    path.write_text(json.dumps(raw) + "\n")
    started = time.perf_counter()
    (entity,) = list(iter_entities(path))
    assert len(mapping(entity.claims)["P1"]) == 100_000
    assert time.perf_counter() - started < 10
