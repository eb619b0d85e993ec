"""A hostile dump site (``support/dump_site.py``'s hostile faults over the real excerpt's run): the fetch
trusts only what it verified. Each case is bounded in time (and the part file in size), ends in a clear
error naming the file, the URL or the field, and publishes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from assets.wikipedia.fetch import (
    STAGING,
    Fetcher,
    FetchError,
    FetchSettings,
    ReleaseUnavailable,
    find_release,
)
from support.dump_site import DumpSite, write_run
from tests.conftest import OLD, WIKI

FAST = FetchSettings.of(
    stall_seconds=1.0,
    connect_seconds=5.0,
    backoff_seconds=0.01,
    chunk_bytes=1 << 14,
    retries=20,
    max_listing_bytes=1 << 20,
)


def _release(site: DumpSite, fetcher: Fetcher, sources: list[str] | None = None):
    return find_release(WIKI, sources or [site.url], fetcher.read_text, fetcher.read_json)


def _published(landing: Path) -> list[str]:
    return [p.name for p in landing.iterdir() if p.name != STAGING] if landing.is_dir() else []


def _url_edit(name_part: str, url: str):
    def edit(status: dict) -> dict:
        for job in status["jobs"].values():
            for name, entry in job["files"].items():
                if name_part in name:
                    entry["url"] = url
        return status

    return edit


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.2:9/enwiki/20160501/x.sql.gz", "leaves the source"),
        ("/enwiki/20160501/../../../../etc/passwd", "its path /etc/passwd is not"),
        ("/enwiki/20160501/%2e%2e/%2e%2e/etc/passwd", "its path /etc/passwd is not"),
        ("file:///etc/passwd", "leaves the source"),
        ("/enwiki/20160501/enwiki-20160501-redirect.sql.gz?x=1", "query"),
    ],
)
def test_a_file_url_off_the_source_is_refused_and_named(site: DumpSite, url: str, reason: str) -> None:
    """The status names a file URL on another host, up the tree or under another scheme: the run is not
    ready there, the reason names the field and the URL, and nothing is requested from it."""
    site.faults.edit_status = _url_edit("page_props", url)
    fetcher = Fetcher(FAST)
    with pytest.raises(ReleaseUnavailable) as refused:
        _release(site, fetcher)
    message = str(refused.value)
    assert "files.enwiki-20160501-page_props.sql.gz.url" in message and reason in message, message
    assert not any("passwd" in path for path, _ in site.requests)


def test_another_host_in_a_status_is_never_contacted(
    site: DumpSite, tmp_path: Path, run_of_excerpt: dict[str, bytes]
) -> None:
    """A second site on another port (another origin) is named in the status: it gets no request."""
    write_run(tmp_path / "other", WIKI, OLD, run_of_excerpt)
    with DumpSite(tmp_path / "other") as other:
        name = f"{WIKI}-{OLD}-redirect.sql.gz"
        site.faults.edit_status = _url_edit("redirect", f"{other.url}/{WIKI}/{OLD}/{name}")
        with pytest.raises(ReleaseUnavailable, match="leaves the source"):
            _release(site, Fetcher(FAST))
        assert other.requests == []


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda status: [], "the document: Input should be a valid dictionary"),
        (
            lambda status: {"jobs": {"articlesmultistreamdump": {"files": []}}},
            "jobs.articlesmultistreamdump.files",
        ),
        (
            lambda status: {"jobs": {"articlesmultistreamdump": {"files": {"x": "a string"}}}},
            "jobs.articlesmultistreamdump.files.x",
        ),
        (lambda status: {"jobs": "done"}, "jobs: Input should be a valid dictionary"),
        (
            lambda status: {
                **status,
                "jobs": {
                    **status["jobs"],
                    "redirecttable": {
                        **status["jobs"]["redirecttable"],
                        "files": {
                            name: {**entry, "size": -5}
                            for name, entry in status["jobs"]["redirecttable"]["files"].items()
                        },
                    },
                },
            },
            "size: Input should be greater than or equal to 0 (got -5)",
        ),
        (
            lambda status: {
                **status,
                "jobs": {
                    **status["jobs"],
                    "redirecttable": {
                        **status["jobs"]["redirecttable"],
                        "files": {
                            name: {**entry, "size": "12"}
                            for name, entry in status["jobs"]["redirecttable"]["files"].items()
                        },
                    },
                },
            },
            "size: Input should be a valid integer",
        ),
    ],
)
def test_a_status_not_as_wikimedia_writes_it_names_the_field(site: DumpSite, edit, field: str) -> None:
    site.faults.edit_status = edit
    started = time.monotonic()
    with pytest.raises(ReleaseUnavailable) as refused:
        _release(site, Fetcher(FAST))
    assert field in str(refused.value) and "not as Wikimedia writes it" in str(refused.value), refused.value
    assert time.monotonic() - started < 5


def test_endless_listings_are_cut_at_their_cap(site: DumpSite) -> None:
    """An index page and a status that never end: read up to limits.fetch.max_listing_bytes, then refused
    (the memory they take is the cap, not what the server sends)."""
    site.faults.endless_listings = True
    started = time.monotonic()
    with pytest.raises(ReleaseUnavailable) as refused:
        _release(site, Fetcher(FAST))
    assert "limits.fetch.max_listing_bytes" in str(refused.value)
    assert time.monotonic() - started < 10


def test_a_status_that_trickles_in_is_a_stall_not_a_wait(site: DumpSite) -> None:
    """A dumpstatus.json sent a byte every 0.2 s (it would take minutes): refused after stall_seconds
    as under limits.fetch.min_bytes_per_second."""
    site.faults.slow["dumpstatus.json"] = 0.2
    started = time.monotonic()
    with pytest.raises(ReleaseUnavailable, match=r"limits\.fetch\.min_bytes_per_second"):
        _release(site, Fetcher(FAST))
    assert time.monotonic() - started < 10


def test_an_endless_file_body_stops_at_the_declared_size(site: DumpSite, tmp_path: Path) -> None:
    """A file body that goes on after the file: the part file never grows past the size the status
    lists, and the file is verified and published."""
    fetcher = Fetcher(FAST)
    release = _release(site, fetcher)
    articles = release.files[0]
    site.faults.endless.add(articles.name)
    started = time.monotonic()
    report = fetcher.fetch(release, tmp_path / "landing")
    assert time.monotonic() - started < 30
    assert report.files[0].verified == "sha1" and report.files[0].downloaded == articles.size
    assert (tmp_path / "landing" / articles.name).stat().st_size == articles.size


def test_a_byte_every_few_seconds_is_a_stall_that_goes_on_to_the_next_source(
    site: DumpSite, tmp_path: Path, run_of_excerpt: dict[str, bytes]
) -> None:
    """The first source sends one byte every 0.3 s (under limits.fetch.min_bytes_per_second): the file
    goes on to the mirror and is fetched from there, resumed from the bytes on disk."""
    write_run(tmp_path / "mirror", WIKI, OLD, run_of_excerpt)
    with DumpSite(tmp_path / "mirror") as mirror:
        fetcher = Fetcher(FAST)
        release = _release(site, fetcher, [site.url, mirror.url])
        assert release.source == site.url and release.mirrors == (mirror.url,)
        name = release.files[1].name  # page_props: small
        site.faults.slow[name] = 0.3
        started = time.monotonic()
        report = fetcher.fetch(release, tmp_path / "landing")
        assert time.monotonic() - started < 30
        assert report.files[1].verified == "sha1"
        assert mirror.sent.get(name, 0) > 0


def test_a_slow_source_without_mirror_fails_in_bounded_time(site: DumpSite, tmp_path: Path) -> None:
    fetcher = Fetcher(FAST)
    release = _release(site, fetcher)
    name = release.files[1].name
    site.faults.slow[name] = 0.5
    few = FetchSettings.of(stall_seconds=1.0, backoff_seconds=0.01, retries=2, chunk_bytes=1 << 14)
    started = time.monotonic()
    with pytest.raises(FetchError, match="stalled: under 1,024 bytes/s"):
        Fetcher(few).fetch(release, tmp_path / "landing")
    assert time.monotonic() - started < 20
    assert _published(tmp_path / "landing") == []


@pytest.mark.parametrize("target", ["loop", "elsewhere", "file"])
def test_redirects_in_a_loop_or_off_the_source_are_not_retried(
    site: DumpSite, tmp_path: Path, target: str
) -> None:
    fetcher = Fetcher(FAST)
    release = _release(site, fetcher)
    name = release.files[2].name
    path = f"/{WIKI}/{OLD}/{name}"
    site.faults.redirect[path] = {
        "loop": path,
        "elsewhere": f"http://127.0.0.2:9{path}",
        "file": "file:///etc/passwd",
    }[target]
    started = time.monotonic()
    with pytest.raises(FetchError, match="not retried") as failed:
        fetcher.fetch(release, tmp_path / "landing")
    assert time.monotonic() - started < 10
    assert name in str(failed.value)
    assert ("redirects" if target == "loop" else "redirected off the source") in str(failed.value)
    assert sum(1 for p, _ in site.requests if p == path) <= FAST.limits.max_redirects + 1
    assert _published(tmp_path / "landing") == []
    # issue 63, part 8: nothing to resume, so nothing suggests running it again, and no .part.json is left
    assert not failed.value.resumable
    assert not list((tmp_path / "landing").rglob(f"{name}.part*"))


def test_a_wrong_size_is_not_retried(site: DumpSite, tmp_path: Path) -> None:
    """The status lists a size the server does not have: one attempt, the error names both sizes, nothing
    is published (it used to be retried for 16 minutes)."""
    fetcher = Fetcher(FAST)
    release = _release(site, fetcher)
    articles = release.files[0]
    served = site.root / WIKI / OLD / articles.name
    served.write_bytes(served.read_bytes() + b"\0" * 10)
    with pytest.raises(FetchError, match=rf"size on the server {articles.size + 10:,} != {articles.size:,}"):
        fetcher.fetch(release, tmp_path / "landing")
    asked = [p for p, _ in site.requests if p.endswith(articles.name)]
    assert len(asked) == 1
    assert _published(tmp_path / "landing") == []
