"""Fetching a dump release from a dump site laid out as Wikimedia's (``support/dump_site.py``, on 127.0.0.1)
serving the real excerpt, with the faults real downloads meet: a run is found where it is ready, every file
survives drops, 503s, stalls, a server without Range, a changed file and a bad transfer, the landing folder
only ever holds verified files (the landing sensor's scan finds the dump complete), and the knowledge
source built from the fetched files is the one built from the local files, byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from assets.params import KnowledgeSourceParams
from assets.wikipedia.fetch import (
    STAGING,
    Fetcher,
    FetchError,
    FetchSettings,
    ReleaseUnavailable,
    find_release,
    scan_landing,
)
from support.dump_site import DumpSite, run_files, write_run
from support.dump_variants import read_xml
from tests.conftest import NEW, OLD, WIKI

FAST = FetchSettings.of(stall_seconds=1.0, connect_seconds=5.0, backoff_seconds=0.01, chunk_bytes=1 << 14)


def _fetcher(settings: FetchSettings = FAST) -> Fetcher:
    return Fetcher(settings)


def _release(site: DumpSite, fetcher: Fetcher, **options):
    return find_release(WIKI, [site.url], fetcher.read_text, fetcher.read_json, **options)


def _landing_holds_only_verified_files(landing: Path, site: DumpSite, date: str = OLD) -> None:
    names = sorted(p.name for p in landing.iterdir() if p.name != STAGING)
    served = {p.name: p for p in (site.root / WIKI / date).iterdir()}
    assert f"{WIKI}-{date}-sha1sums.txt" in names
    for name in names:
        if name.endswith("sums.txt"):
            continue
        assert (
            hashlib.sha1((landing / name).read_bytes()).digest()
            == hashlib.sha1(served[name].read_bytes()).digest()
        )
    scan = scan_landing(landing, settle_seconds=0)
    assert [dump.snapshot_id for dump in scan.complete] == [f"{WIKI}-{date}"] and not scan.incomplete


def test_a_ready_run_is_found_and_fetched_verified(site: DumpSite, tmp_path: Path) -> None:
    fetcher = _fetcher()
    release = _release(site, fetcher)
    assert (release.snapshot_id, release.source, release.form) == (f"{WIKI}-{OLD}", site.url, "multistream")
    assert [f.job for f in release.files] == ["articlesmultistreamdump", "pagepropstable", "redirecttable"]
    landing = tmp_path / "landing"
    report = fetcher.fetch(release, landing)
    assert [f.verified for f in report.files] == ["sha1"] * 3
    assert report.downloaded == report.size == release.size  # no byte fetched twice
    _landing_holds_only_verified_files(landing, site)
    assert not (landing / STAGING).exists()
    agents = {headers.get("User-Agent") for _, headers in site.requests}
    assert all(agent and agent.startswith("kilt-pipeline/") and "+https://" in agent for agent in agents)
    again = fetcher.fetch(release, landing)  # everything is there and verified: nothing is downloaded
    assert again.downloaded == 0 and all(f.already_there for f in again.files)


def test_drops_503s_and_a_stall_resume_without_fetching_twice(site: DumpSite, tmp_path: Path) -> None:
    fetcher = _fetcher()
    release = _release(site, fetcher)
    articles = release.files[0]
    site.faults.cut_at[articles.name] = [articles.size // 4, articles.size // 2, articles.size - 10]
    site.faults.unavailable = 3
    site.faults.stall_at[articles.name] = (articles.size * 3 // 4, 3.0)  # longer than stall_seconds
    report = fetcher.fetch(release, tmp_path / "landing")
    fetched = report.files[0]
    assert fetched.resumes >= 4 and fetched.restarts == [] and fetched.verified == "sha1"
    assert fetched.downloaded <= articles.size + (1 << 15)  # at most what was in flight when the stall cut
    ranges = [h.get("Range") for path, h in site.requests if path.endswith(articles.name) and h.get("Range")]
    assert len(ranges) >= 4 and all(r.startswith("bytes=") for r in ranges)
    _landing_holds_only_verified_files(tmp_path / "landing", site)


def test_a_server_without_range_or_a_changed_file_restarts_that_file_and_says_so(
    site: DumpSite, tmp_path: Path
) -> None:
    fetcher = _fetcher()
    release = _release(site, fetcher)
    articles = release.files[0]
    lines: list[str] = []
    site.faults.no_range = True
    site.faults.cut_at[articles.name] = [articles.size // 2]
    report = fetcher.fetch(release, tmp_path / "a", on_progress=lines.append)
    assert report.files[0].restarts == ["the server ignored the Range request"]
    assert any("ignored the Range request" in line for line in lines)
    _landing_holds_only_verified_files(tmp_path / "a", site)

    site.faults.no_range = False
    site.faults.cut_at[articles.name] = [articles.size // 2]
    with pytest.raises(FetchError):  # interrupted for good: the half file stays in the staging folder
        Fetcher(
            FetchSettings.of(retries=0, stall_seconds=1.0, backoff_seconds=0.01, chunk_bytes=1 << 14)
        ).fetch(release, tmp_path / "b")
    assert not [p for p in (tmp_path / "b").iterdir() if p.name != STAGING]  # nothing the sensor could see
    site.faults.version[articles.name] = 1  # the file is replaced on the server: its ETag changes
    report = fetcher.fetch(release, tmp_path / "b")
    assert report.files[0].restarts == ["the file changed on the server (another ETag)"]
    _landing_holds_only_verified_files(tmp_path / "b", site)


def test_a_bad_transfer_is_fetched_again_and_a_wrong_checksum_publishes_nothing(
    site: DumpSite, tmp_path: Path
) -> None:
    fetcher = _fetcher()
    release = _release(site, fetcher)
    articles = release.files[0]
    site.faults.corrupt_once.add(articles.name)
    report = fetcher.fetch(release, tmp_path / "a")
    assert len(report.files[0].restarts) == 1 and report.files[0].restarts[0].startswith("sha1 ")
    _landing_holds_only_verified_files(tmp_path / "a", site)

    site.faults.wrong_checksum.add(articles.name)
    wrong = _release(site, fetcher)
    before = site.gets[articles.name]
    with pytest.raises(FetchError, match=rf"{articles.name}: no source's copy matches.*sha1") as raised:
        Fetcher(FetchSettings.of(retries=20, backoff_seconds=0.01)).fetch(wrong, tmp_path / "b")
    # a checksum that never matches: fetched twice from the one source (once was 21 times), then an error
    # that says what the source gave and that the bytes are gone
    assert site.gets[articles.name] - before == 2 and not raised.value.resumable
    assert "fetched 2 times in all" in str(raised.value) and "deleted" in str(raised.value)
    assert not [p for p in (tmp_path / "b").iterdir() if p.name != STAGING]
    assert not list((tmp_path / "b").rglob(f"{articles.name}.part"))


def test_a_damaged_copy_on_the_first_source_goes_on_to_the_next_at_once(
    site: DumpSite, tmp_path: Path, run_of_excerpt: dict[str, bytes]
) -> None:
    """The first source's copy of a file is damaged (every answer): the file is fetched once from it, then
    from the mirror, where it verifies; GETs counted per source."""
    write_run(tmp_path / "mirror", WIKI, OLD, run_of_excerpt)
    with DumpSite(tmp_path / "mirror") as mirror:
        fetcher = _fetcher()
        release = find_release(WIKI, [site.url, mirror.url], fetcher.read_text, fetcher.read_json)
        articles = release.files[0]
        site.faults.corrupt_always.add(articles.name)
        report = fetcher.fetch(release, tmp_path / "landing")
        assert site.gets[articles.name] == 1 and mirror.gets[articles.name] == 1
        assert report.files[0].verified == "sha1" and len(report.files[0].restarts) == 1
        _landing_holds_only_verified_files(tmp_path / "landing", site)
        # both copies damaged: each source twice at most, then one error naming what each gave
        mirror.faults.corrupt_always.add(articles.name)
        with pytest.raises(FetchError, match=rf"{site.url}.*sha1.*; {mirror.url}.*sha1.*fetched 4 times"):
            fetcher.fetch(release, tmp_path / "again")
        assert site.gets[articles.name] == 3 and mirror.gets[articles.name] == 3


def test_runs_in_progress_or_missing_on_a_mirror_are_not_fetched(
    site: DumpSite, tmp_path: Path, run_of_excerpt: dict[str, bytes]
) -> None:
    write_run(site.root, WIKI, NEW, run_of_excerpt)
    fetcher = _fetcher()
    site.faults.job_status[(NEW, "articlesmultistreamdump")] = "in-progress"
    release = _release(site, fetcher)
    assert release.date == OLD and any("in-progress" in why for why in release.skipped)
    with pytest.raises(ReleaseUnavailable, match=f"no run newer than {OLD}"):
        _release(site, fetcher, newer_than=OLD)
    site.faults.job_status.clear()  # the run finishes
    assert _release(site, fetcher, newer_than=OLD).date == NEW

    mirror_root = tmp_path / "mirror"
    write_run(mirror_root, WIKI, OLD, run_of_excerpt)
    (mirror_root / WIKI / NEW).mkdir()
    with DumpSite(mirror_root) as mirror:
        mirror.faults.missing_runs.add(NEW)  # listed, but not on this mirror yet
        release = find_release(WIKI, [mirror.url, site.url], fetcher.read_text, fetcher.read_json)
        assert (release.date, release.source) == (NEW, site.url)
        assert any(f"{mirror.url}/{WIKI}/{NEW}/dumpstatus.json" in why for why in release.skipped)
        older = find_release(WIKI, [mirror.url, site.url], fetcher.read_text, fetcher.read_json, date=OLD)
        assert older.source == mirror.url  # the first source that has the run ready


def test_part_files_use_at_most_two_connections(tmp_path: Path, excerpt: Path) -> None:
    root = tmp_path / "site"
    write_run(root, WIKI, OLD, run_files(read_xml(excerpt), tmp_path / "made", form="parts"))
    with DumpSite(root) as site:
        fetcher = _fetcher()
        release = _release(site, fetcher, form="parts")
        assert [f.job for f in release.files] == ["articlesdump"] * 3 + ["pagepropstable", "redirecttable"]
        for remote in release.files:
            site.faults.stall_at[remote.name] = (remote.size // 2, 0.3)  # keep each download open a while
        fetcher.fetch(release, tmp_path / "landing")
        assert site.peak_connections == 2
        _landing_holds_only_verified_files(tmp_path / "landing", site)


def test_the_fetched_dump_builds_the_same_knowledge_source_as_the_local_files(
    site: DumpSite, tmp_path: Path
) -> None:
    from assets.wikipedia.pages import build_knowledge_source

    fetcher = _fetcher()
    release = _release(site, fetcher)
    articles = release.files[0]
    site.faults.cut_at[articles.name] = [articles.size // 3]
    site.faults.unavailable = 2
    landing = tmp_path / "landing"
    fetcher.fetch(release, landing)
    built = {}
    for label, folder in (("fetched", landing), ("local", site.root / WIKI / OLD)):
        build_knowledge_source(
            folder / articles.name,
            tmp_path / label,
            KnowledgeSourceParams(workers=0, snapshot=f"{WIKI}-{OLD}"),
            progress=False,
        )
        shards = sorted(
            (tmp_path / label / "snapshots" / f"{WIKI}-{OLD}" / "knowledge_source").rglob("*.parquet")
        )
        built[label] = [(p.name, p.read_bytes()) for p in shards]
    assert built["fetched"] and built["fetched"] == built["local"]


def test_a_file_whose_size_on_the_server_is_not_the_status_s_is_never_published(
    site: DumpSite, tmp_path: Path
) -> None:
    """The file changes on the server after the status was read (a re-run replacing it): every answer
    says another size than dumpstatus.json, each attempt starts the file again and says why, and the fetch
    fails naming both sizes without publishing anything."""
    fetcher = _fetcher()
    release = _release(site, fetcher)
    articles = release.files[0]
    served = site.root / WIKI / OLD / articles.name
    served.write_bytes(served.read_bytes() + b"\0" * 1000)  # replaced by a longer file
    with pytest.raises(
        FetchError, match=rf"size on the server {articles.size + 1000:,} != {articles.size:,}"
    ):
        Fetcher(FetchSettings.of(retries=2, backoff_seconds=0.01)).fetch(release, tmp_path / "landing")
    assert not [p for p in (tmp_path / "landing").iterdir() if p.name != STAGING]
