"""Landing-folder detection on dumps derived from the real excerpt: single files, part sets, checksums."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from assets.wikipedia.dump import find_bz2_streams
from assets.wikipedia.fetch import LandingScan, end_checks, landing, scan_landing
from support.dump_variants import read_xml, write_dump, write_multistream, write_parts

SNAP = "enwiki-20160501"
LATER = time.time() + 3600  # "now" for scans that must see every file as settled
OTHER_FILES = [  # listed by Wikimedia's checksum files, never needed here
    f"{SNAP}-pages-meta-history1.xml-p1p872.7z",
    f"{SNAP}-abstract.xml.gz",
    f"{SNAP}-pages-articles-multistream-index.txt.bz2",
    f"{SNAP}-stub-meta-current.xml.gz",
]


@pytest.fixture(scope="module")
def xml(excerpt: Path) -> bytes:
    return read_xml(excerpt)


def write_checksums(folder: Path, files: list[Path], algorithms: tuple[str, ...] = ("md5", "sha1")) -> None:
    """``{SNAP}-md5sums.txt`` / ``-sha1sums.txt`` as Wikimedia writes them, with absent files too."""
    for algorithm in algorithms:
        lines = [f"{hashlib.new(algorithm, f.read_bytes()).hexdigest()}  {f.name}" for f in files]
        lines += [f"{hashlib.new(algorithm, name.encode()).hexdigest()}  {name}" for name in OTHER_FILES]
        (folder / f"{SNAP}-{algorithm}sums.txt").write_text("\n".join(sorted(lines, key=str.split)) + "\n")


def only(scan: LandingScan) -> landing.LandedDump:
    assert not scan.incomplete, scan.incomplete
    assert len(scan.complete) == 1
    return scan.complete[0]


def reason(scan: LandingScan) -> str:
    assert not scan.complete, scan.complete
    assert len(scan.incomplete) == 1
    return scan.incomplete[0].reason


@pytest.mark.parametrize(
    ("name", "compression"),
    [
        (f"{SNAP}-pages-articles.xml", "none"),
        (f"{SNAP}-pages-articles.xml.bz2", "bz2"),
        (f"{SNAP}-pages-articles.xml.gz", "gzip"),
        (f"{SNAP}-pages-articles.xml.xz", "xz"),
        (f"{SNAP}-pages-articles-multistream.xml.bz2", "multistream"),
    ],
)
def test_single_file_without_checksums(tmp_path: Path, xml: bytes, name: str, compression: str) -> None:
    """Complete once settled and properly ended; a half-copied file never is."""
    path = tmp_path / name
    if compression == "multistream":
        write_multistream(path, xml, 10)
    else:
        write_dump(path, xml, compression)
    assert "changed 0s ago" in reason(scan_landing(tmp_path, settle_seconds=120))
    dump = only(scan_landing(tmp_path, settle_seconds=120, now=LATER))
    assert (dump.snapshot_id, dump.dbname, dump.date) == (SNAP, "enwiki", "20160501")
    assert dump.form == ("multistream" if compression == "multistream" else "combined")
    assert dump.files == (path.absolute(),) and dump.verified_by == "settled"
    assert dump.total_bytes == path.stat().st_size and dump.run_key.startswith(f"{SNAP}:")

    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # half-copied
    why = reason(scan_landing(tmp_path, settle_seconds=120, now=LATER))
    assert why.startswith(f"{dump.form}: {name}: ")
    assert any(word in why for word in ("</mediawiki>", "end-of-stream marker", "truncated", "footer")), why


def test_bz2_end_checks(tmp_path: Path, xml: bytes) -> None:
    """bz2: the end-of-stream marker, then the last stream decompressed (a multistream's last stream)."""
    good = write_dump(tmp_path / "good.xml.bz2", xml, "bz2", streams=4)
    assert end_checks.dump_end_problem(good) is None
    footerless = write_dump(tmp_path / "footerless.xml.bz2", xml[: xml.rindex(b"</mediawiki>")], "bz2")
    assert "does not end with </mediawiki>" in end_checks.dump_end_problem(footerless)
    data = good.read_bytes()
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(data[:-1000])
    assert "end-of-stream marker" in end_checks.dump_end_problem(cut)
    multistream = write_multistream(tmp_path / "multistream.xml.bz2", xml, 10)
    assert end_checks.dump_end_problem(multistream) is None
    data = multistream.read_bytes()
    cut.write_bytes(data[: find_bz2_streams(multistream)[-2]])  # cut between two streams: whole streams
    assert "does not end with </mediawiki>" in end_checks.dump_end_problem(cut)


@pytest.mark.parametrize("compression", ["none", "bz2"])
def test_preallocated_file_with_a_hole_is_not_complete(
    tmp_path: Path, xml: bytes, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a downloader that preallocates leaves: the full size, the end written, zeros in the middle.
    A single bz2 stream longer than the tail scan (20 GB in real life) is not decompressed: the hole check
    is what refuses it."""
    monkeypatch.setattr(end_checks, "BZ2_TAIL_SCAN_BYTES", 64 << 10)
    path = write_dump(
        tmp_path / f"{SNAP}-pages-articles.xml{'.bz2' if compression == 'bz2' else ''}", xml, compression
    )
    data = bytearray(path.read_bytes())
    start = len(data) // 3
    data[start : start + 256 * 1024] = bytes(256 * 1024)  # a 256 KiB chunk not downloaded yet
    path.write_bytes(bytes(data))
    why = reason(scan_landing(tmp_path, settle_seconds=120, now=LATER))
    assert f"4096 zero bytes at byte {start}" in why and "preallocating download" in why, why
    path.write_bytes(
        xml if compression == "none" else write_dump(tmp_path / "x.bz2", xml, "bz2").read_bytes()
    )
    (tmp_path / "x.bz2").unlink(missing_ok=True)
    assert only(scan_landing(tmp_path, settle_seconds=120, now=LATER)).verified_by == "settled"


def test_plain_file_without_the_closing_tag_is_not_complete(tmp_path: Path, xml: bytes) -> None:
    path = write_dump(tmp_path / f"{SNAP}-pages-articles.xml", xml[: xml.rindex(b"</mediawiki>")])
    assert "does not end with </mediawiki>" in reason(scan_landing(tmp_path, settle_seconds=120, now=LATER))
    path.write_bytes(xml)
    assert only(scan_landing(tmp_path, settle_seconds=120, now=LATER)).files == (path.absolute(),)


def test_parts_with_checksums_missing_truncated_then_complete(tmp_path: Path, xml: bytes) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts)
    dump = only(scan_landing(tmp_path, settle_seconds=0))
    assert dump.form == "parts" and dump.verified_by == "sha1sums"  # sha1 preferred over md5
    assert dump.files == tuple(p.absolute() for p in parts)
    assert dump.total_bytes == sum(p.stat().st_size for p in parts)
    assert only(scan_landing(tmp_path, settle_seconds=0)).run_key == dump.run_key  # stable

    content = parts[1].read_bytes()
    parts[1].unlink()
    why = reason(scan_landing(tmp_path, settle_seconds=0))
    assert why == f"parts: 1 of 3 parts missing: {parts[1].name}"

    parts[1].write_bytes(content[: len(content) // 2])  # half-copied
    scan = scan_landing(tmp_path, settle_seconds=0)
    assert reason(scan) == f"parts: {parts[1].name}: sha1 mismatch (still being copied, or corrupt)"
    assert scan.incomplete[0].snapshot_id == SNAP and len(scan.incomplete[0].files) == 5

    parts[1].write_bytes(content)  # the copy finished
    again = only(scan_landing(tmp_path, scan.cache, settle_seconds=0))
    assert again.run_key == dump.run_key


def test_cache_avoids_rehashing(tmp_path: Path, xml: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts)
    calls: list[str] = []
    real = landing.file_digest
    monkeypatch.setattr(landing, "file_digest", lambda path, alg: calls.append(path.name) or real(path, alg))

    first = scan_landing(tmp_path, settle_seconds=0)
    assert sorted(calls) == sorted(p.name for p in parts)
    assert first.hashed_bytes == sum(p.stat().st_size for p in parts)
    cursor = json.loads(json.dumps(first.cache))  # what the sensor keeps in its cursor
    assert set(cursor) == {str(p.absolute()) for p in tmp_path.iterdir()}

    calls.clear()
    second = scan_landing(tmp_path, cursor, settle_seconds=0)
    assert calls == [] and second.hashed_bytes == 0
    assert only(second).run_key == only(first).run_key

    parts[2].write_bytes(parts[2].read_bytes())  # a new version of one file (mtime moves): rehashed alone
    third = scan_landing(tmp_path, second.cache, settle_seconds=0)
    assert calls == [parts[2].name] and only(third).run_key == only(first).run_key


def test_hash_budget_spreads_work_over_scans(tmp_path: Path, xml: bytes) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts, ("md5",))
    scan = scan_landing(tmp_path, settle_seconds=0, hash_budget_bytes=1)
    assert scan.hashed_bytes == parts[0].stat().st_size
    assert "hashing budget of this scan used up" in reason(scan)
    scan = scan_landing(tmp_path, scan.cache, settle_seconds=0, hash_budget_bytes=1)
    assert scan.hashed_bytes == parts[1].stat().st_size and scan.incomplete
    scan = scan_landing(tmp_path, scan.cache, settle_seconds=0, hash_budget_bytes=1)
    assert only(scan).verified_by == "md5sums"


def test_unsettled_files_are_not_hashed(tmp_path: Path, xml: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts)
    monkeypatch.setattr(landing, "file_digest", lambda path, alg: pytest.fail(f"hashed {path}"))
    assert reason(scan_landing(tmp_path, settle_seconds=600)).startswith("checksum file not usable yet")


def test_parts_in_part_number_order(tmp_path: Path, xml: bytes) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 11)  # ...articles10 sorts before ...articles2 by name
    write_checksums(tmp_path, parts, ("sha1",))
    assert only(scan_landing(tmp_path, settle_seconds=0)).files == tuple(p.absolute() for p in parts)


def test_parts_without_checksums_are_never_complete(tmp_path: Path, xml: bytes) -> None:
    write_parts(tmp_path, xml, SNAP, 3)
    why = reason(scan_landing(tmp_path, settle_seconds=0, now=LATER))
    assert why == "parts: part files without a checksum file (the set of parts is unknown)"


def test_checksum_file_must_be_whole(tmp_path: Path, xml: bytes) -> None:
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts, ("sha1",))
    sums = tmp_path / f"{SNAP}-sha1sums.txt"
    text = sums.read_text()
    sums.write_text(text[: len(text) // 2])  # half-copied list
    why = reason(scan_landing(tmp_path, settle_seconds=0))
    assert why.startswith("checksum file not usable yet: ") and sums.name in why


def test_prefers_multistream_and_reports_other_snapshots(tmp_path: Path, xml: bytes) -> None:
    """Several forms complete: the multistream file (read in parallel) wins. Another snapshot's lone
    checksum file and an unrelated file are reported / ignored."""
    parts = write_parts(tmp_path, xml, SNAP, 3)
    multistream = write_multistream(tmp_path / f"{SNAP}-pages-articles-multistream.xml.bz2", xml, 10)
    write_checksums(tmp_path, [*parts, multistream])
    (tmp_path / "enwiki-20160601-md5sums.txt").write_text("")
    (tmp_path / "notes.txt").write_text("not a dump")
    scan = scan_landing(tmp_path, settle_seconds=0)
    assert [(d.snapshot_id, d.form, d.files) for d in scan.complete] == [
        (SNAP, "multistream", (multistream.absolute(),))
    ]
    assert [(d.snapshot_id, d.reason) for d in scan.incomplete] == [
        ("enwiki-20160601", "checksum file present, no pages-articles file yet")
    ]
    multistream.unlink()
    assert [d.form for d in scan_landing(tmp_path, scan.cache, settle_seconds=0).complete] == ["parts"]


def test_unlisted_single_file_falls_back_to_settling(tmp_path: Path, xml: bytes) -> None:
    """A file the checksum list does not name (here: decompressed by hand) is judged like a file
    without checksums."""
    parts = write_parts(tmp_path, xml, SNAP, 3)
    write_checksums(tmp_path, parts[:1], ("sha1",))  # lists one part only: the part set is incomplete
    plain = write_dump(tmp_path / f"{SNAP}-pages-articles.xml", xml)
    dump = only(scan_landing(tmp_path, settle_seconds=10, now=LATER))
    assert (dump.form, dump.files, dump.verified_by) == ("combined", (plain.absolute(),), "settled")
    plain.write_bytes(xml[:-100])
    why = reason(scan_landing(tmp_path, settle_seconds=10, now=LATER))
    assert f"combined: not listed in {SNAP}-sha1sums.txt; {plain.name}: file does not end with" in why
    assert "parts: part files not listed in" in why


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="landing folder not found"):
        scan_landing(tmp_path / "absent")


def _page_props_text(xml: bytes) -> str:
    """A page_props table for the excerpt's first page ids (QIDs of the real MKQA records)."""
    from support.dump_variants import field, split_dump
    from support.sql_dumps import PAGE_PROPS_DDL, page_props_rows, sql_dump_text

    _, pages, _ = split_dump(xml)
    qids = ["Q56005", "Q952176", "Q5638484"]
    rows = page_props_rows((int(field(page, "id")), qid) for page, qid in zip(pages, qids, strict=False))
    return sql_dump_text("page_props", PAGE_PROPS_DDL, rows)


def test_side_tables_go_with_the_dump_once_complete(tmp_path: Path, xml: bytes) -> None:
    """page_props and redirect tables beside a dump: settled and ending like a SQL dump, or hashed when
    the checksum file lists them; one being copied makes the dump wait; they change the run key."""
    from support.sql_dumps import REDIRECT_DDL, sql_dump_text, write_gz

    dump_file = write_dump(tmp_path / f"{SNAP}-pages-articles.xml.bz2", xml, "bz2")
    alone = only(scan_landing(tmp_path, settle_seconds=0))
    assert alone.page_props is None and alone.redirect_table is None
    page_props = write_gz(tmp_path / f"{SNAP}-page_props.sql.gz", _page_props_text(xml))
    redirect = write_gz(
        tmp_path / f"{SNAP}-redirect.sql.gz", sql_dump_text("redirect", REDIRECT_DDL, [(10, 0, "X", "", "")])
    )
    both = only(scan_landing(tmp_path, settle_seconds=0))
    assert (both.page_props, both.redirect_table) == (page_props.absolute(), redirect.absolute())
    assert both.run_key != alone.run_key and both.to_dict()["page_props"] == str(page_props.absolute())

    data = page_props.read_bytes()
    page_props.write_bytes(data[: len(data) // 2])  # still being copied
    why = reason(scan_landing(tmp_path, settle_seconds=0))
    assert why.startswith("waiting for page_props table: ") and "truncated" in why
    page_props.write_bytes(data)
    write_checksums(tmp_path, [dump_file, page_props, redirect])
    listed = only(scan_landing(tmp_path, settle_seconds=0))
    assert listed.verified_by == "sha1sums" and listed.page_props == page_props.absolute()
    page_props.write_bytes(data[:-7])
    assert "page_props.sql.gz: sha1 mismatch" in reason(scan_landing(tmp_path, settle_seconds=0))


def test_sql_dump_end_check(tmp_path: Path, xml: bytes) -> None:
    from support.sql_dumps import write_gz

    text = _page_props_text(xml)
    assert end_checks.sql_dump_end_problem(write_gz(tmp_path / "whole.sql.gz", text)) is None
    cut = write_gz(tmp_path / "cut.sql.gz", text[: text.index("/*!40000 ALTER TABLE `page_props` ENABLE")])
    assert "does not end with '-- Dump completed'" in end_checks.sql_dump_end_problem(cut)
