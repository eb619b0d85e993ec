"""The Enterprise HTML form fetched and rebuilt by itself: a dump site laid out as Wikimedia's
(``support/dump_site.py``: ``other/enterprise_html/runs/<date>/``, listed with exact sizes and no checksum,
serving an Enterprise dump made in code from the real records and Parsoid pages) is read by ``kiltpipe fetch
--form enterprise-html`` and the release sensor; the file survives a drop and 503s, is verified by its size
and every gzip member's CRC-32 and length (what the run lets a fetch verify; a checksum where the run
publishes one), lands with the sha1 list of what was verified, and the landing sensor's run of it builds
the snapshot on the HTML route. A damaged copy never lands; a half-copied file in the landing folder waits."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, SensorResult, build_sensor_context

from assets.limits import FetchLimits
from assets.params import ReleasesParams
from assets.storage import SnapshotPaths
from assets.wikipedia.fetch import (
    HTML_FORM,
    Fetcher,
    FetchError,
    FetchSettings,
    ReleaseUnavailable,
    find_wiki_release,
    html_dump_name,
    scan_landing,
)
from assets.wikipedia.fetch.files import GZIP_CHECKED, verify
from assets.wikipedia.fetch.releases import ReleaseFile
from orchestration.definitions import build_definitions
from orchestration.releases import build_release_sensor
from orchestration.resources import SNAPSHOTS, PipelineSettings
from orchestration.sensors import build_landing_sensor
from support.dump_site import DumpSite, write_html_run
from support.enterprise_dump import page_records, real_records, write_enterprise_dump

REPO = Path(__file__).resolve().parents[2]
FAST = FetchSettings.of(stall_seconds=1.0, connect_seconds=5.0, backoff_seconds=0.01, chunk_bytes=1 << 14)
WIKI, OLD, NEW = "enwiki", "20240601", "20240701"
SNAPSHOT = f"{WIKI}-{OLD}"


@pytest.fixture(scope="module")
def dump_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """An Enterprise dump of the real enwiki record and the enwiki Parsoid pages, in two tar members."""
    records = [r for r in real_records() if r["is_part_of"]["identifier"] == WIKI] + page_records(WIKI)
    path = tmp_path_factory.mktemp("html-dump") / html_dump_name(WIKI, OLD)
    return write_enterprise_dump(path, records).read_bytes()


@pytest.fixture
def html_site(tmp_path: Path, dump_bytes: bytes):
    """Two runs: ``OLD`` has enwiki's file, the newer ``NEW`` only dewiki's (enwiki's not out yet)."""
    root = tmp_path / "site"
    write_html_run(root, OLD, {WIKI: dump_bytes})
    write_html_run(root, NEW, {"dewiki": dump_bytes})
    with DumpSite(root) as site:
        yield site


def _release(site: DumpSite):
    fetcher = Fetcher(FAST)
    return fetcher, find_wiki_release(WIKI, [site.url], fetcher.read_text, fetcher.read_json, form=HTML_FORM)


def test_the_newest_run_with_the_wiki_is_fetched_through_faults_and_verified_by_its_crcs(
    html_site: DumpSite, tmp_path: Path, dump_bytes: bytes
) -> None:
    fetcher, release = _release(html_site)
    assert (release.snapshot_id, release.form) == (SNAPSHOT, HTML_FORM)
    assert any(f"lists no {html_dump_name(WIKI, NEW)}" in answer for answer in release.skipped)
    (remote,) = release.files
    assert remote.size == len(dump_bytes) and remote.md5 is None and remote.sha1 is None  # none published
    html_site.faults.cut_at[remote.name] = [remote.size // 3]
    html_site.faults.unavailable = 2
    landing = tmp_path / "landing"
    landing.mkdir()
    report = fetcher.fetch(release, landing)
    (file,) = report.files
    assert file.verified == GZIP_CHECKED and file.resumes >= 1 and file.downloaded == remote.size
    assert (landing / remote.name).read_bytes() == dump_bytes
    sha1 = hashlib.sha1(dump_bytes).hexdigest()
    assert file.sha1 == sha1
    assert (landing / f"{SNAPSHOT}-sha1sums.txt").read_text() == f"{sha1}  {remote.name}\n"
    (landed,) = scan_landing(landing, settle_seconds=0).complete
    assert (landed.snapshot_id, landed.form, landed.verified_by) == (SNAPSHOT, HTML_FORM, "sha1sums")
    again = fetcher.fetch(release, landing)  # already there: verified again, not fetched
    assert again.files[0].already_there and again.downloaded == 0


def test_a_damaged_copy_is_fetched_again_and_one_damaged_everywhere_never_lands(
    html_site: DumpSite, tmp_path: Path, dump_bytes: bytes
) -> None:
    fetcher, release = _release(html_site)
    name = release.files[0].name
    html_site.faults.corrupt_once.add(name)
    landing = tmp_path / "landing"
    landing.mkdir()
    report = fetcher.fetch(release, landing)
    assert len(report.files[0].restarts) == 1 and (landing / name).read_bytes() == dump_bytes
    html_site.faults.corrupt_always.add(name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(FetchError, match=rf"{name}: no source's copy matches its size and CRCs"):
        fetcher.fetch(release, elsewhere)
    assert not list(elsewhere.glob("*ENTERPRISE*")) and not list(elsewhere.glob("*sums.txt"))


def test_every_member_s_crc_and_length_is_checked(tmp_path: Path, dump_bytes: bytes) -> None:
    """What the fetch's verification catches in a file of the listed size: a byte flipped in the deflate
    data, in the CRC-32 or in the length of the trailer, a second member cut short; a whole copy passes."""
    path = tmp_path / html_dump_name(WIKI, OLD)
    remote = ReleaseFile(path.name, "http://127.0.0.1/x", len(dump_bytes), None, None, HTML_FORM)
    path.write_bytes(dump_bytes)
    assert verify(path, remote) == (GZIP_CHECKED, "")
    for offset, what in (
        (len(dump_bytes) // 2, "is damaged"),
        (-8, "incorrect data check"),
        (-2, "incorrect length check"),
    ):
        damaged = bytearray(dump_bytes)
        damaged[offset] ^= 0x01
        path.write_bytes(bytes(damaged))
        how, why = verify(path, remote)
        assert how is None and "gzip" in why and what in why, (offset, why)
    two = dump_bytes + gzip.compress(b"x" * 5000)  # a second member, then cut inside it
    path.write_bytes(two[:-20])
    member = ReleaseFile(path.name, remote.url, len(two) - 20, None, None, HTML_FORM)
    how, why = verify(path, member)
    assert how is None and "truncated" in why and str(path) in why


def test_a_published_checksum_is_used_where_the_run_has_one(
    html_site: DumpSite, tmp_path: Path, dump_bytes: bytes
) -> None:
    folder = html_site.root / "other" / "enterprise_html" / "runs" / OLD
    name = html_dump_name(WIKI, OLD)
    (folder / f"{name}.md5").write_text(hashlib.md5(dump_bytes).hexdigest() + "\n")
    fetcher, release = _release(html_site)
    assert release.files[0].md5 == hashlib.md5(dump_bytes).hexdigest()
    report = fetcher.fetch(release, tmp_path)
    assert report.files[0].verified == "md5"
    assert (tmp_path / f"{SNAPSHOT}-md5sums.txt").read_text().split()[1] == name


def test_a_half_copied_dump_in_the_landing_folder_waits(tmp_path: Path, dump_bytes: bytes) -> None:
    """No checksum list (copied by hand): the file is whole when every gzip member checks and the tar
    ends with its two zero blocks; cut anywhere it is not, and the reason says why."""
    name = html_dump_name(WIKI, OLD)
    (tmp_path / name).write_bytes(dump_bytes[: len(dump_bytes) * 2 // 3])
    (waiting,) = scan_landing(tmp_path, settle_seconds=0).incomplete
    assert (
        waiting.snapshot_id == SNAPSHOT
        and "truncated" in waiting.reason
        and "enterprise-html" in waiting.reason
    )
    with tarfile.open(fileobj=io.BytesIO(dump_bytes), mode="r:gz") as archive:
        first = archive.next()
        assert first is not None
        head = gzip.decompress(dump_bytes)[: 512 + ((first.size + 511) // 512) * 512]
    (tmp_path / name).write_bytes(gzip.compress(head))  # a whole gzip of a tar cut after its first member
    (cut,) = scan_landing(tmp_path, settle_seconds=0).incomplete
    assert "two zero blocks" in cut.reason
    (tmp_path / name).write_bytes(dump_bytes)
    (whole,) = scan_landing(tmp_path, settle_seconds=0).complete
    assert (whole.form, whole.verified_by, whole.files) == (HTML_FORM, "settled", (tmp_path / name,))


def test_the_sensors_fetch_it_and_the_landing_run_builds_it_on_the_html_route(
    html_site: DumpSite, tmp_path: Path
) -> None:
    """The release sensor with ``form: enterprise-html`` requests one fetch; ``kiltpipe fetch --form
    enterprise-html`` lands it; the landing sensor's run request, executed, builds the knowledge source
    from the Parsoid HTML (the manifest's route)."""
    import yaml

    settings = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    settings["snapshots"]["releases"].update(
        {"wikis": [WIKI], "sources": [html_site.url], "stall_seconds": 2, "form": HTML_FORM}
    )
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump(settings), encoding="utf-8")
    landing, data = tmp_path / "landing", tmp_path / "data"
    pipeline = PipelineSettings(data_dir=str(data), params_file=str(params_file))
    sensor = build_release_sensor(
        ReleasesParams(wikis=(WIKI,), sources=(html_site.url,), form=HTML_FORM), landing
    )
    tick = sensor(
        build_sensor_context(instance=DagsterInstance.ephemeral(), resources={"pipeline": pipeline})
    )
    assert isinstance(tick, SensorResult)
    (request,) = tick.run_requests
    assert request.run_key == f"fetch-{SNAPSHOT}"

    env = {**os.environ, "KILT_PARAMS": str(params_file)}
    env.pop("KILT_DATA_DIR", None)
    done = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", "fetch", "--wiki", WIKI, "--form", HTML_FORM,
         "--out", str(landing), "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["form"] == HTML_FORM and report["files"][0]["verified"] == GZIP_CHECKED

    instance = DagsterInstance.ephemeral()
    landed = build_landing_sensor("build_all", landing, interval_seconds=5, settle_seconds=0)
    result = landed(build_sensor_context(instance=instance, resources={"pipeline": pipeline}))
    (build,) = result.run_requests
    config = build.run_config["ops"]["wikipedia_dump"]["config"]
    assert config["details"]["form"] == HTML_FORM and config["dump_paths"] == [
        str((landing / html_dump_name(WIKI, OLD)).absolute())
    ]
    instance.add_dynamic_partitions(SNAPSHOTS.name, [SNAPSHOT])
    job = build_definitions(pipeline, landing).resolve_job_def("build_all")
    run = job.execute_in_process(
        run_config=build.run_config,
        instance=instance,
        partition_key=SNAPSHOT,
        asset_selection=[AssetKey("wikipedia_dump"), AssetKey("knowledge_source")],
    )
    assert run.success
    manifest = json.loads(SnapshotPaths(data, SNAPSHOT).manifest_file.read_text())
    assert manifest["route"] == HTML_FORM and manifest["articles"] >= 5


def test_a_listing_of_a_thousand_checksum_lists_costs_a_few_requests(html_site: DumpSite) -> None:
    """A run folder listing 1,000 checksum lists (a hostile or broken mirror): the fetch reads at most
    ``CHECKSUM_LISTS_READ`` of them, the run's own first, and finds the file's checksum in it."""
    from assets.wikipedia.fetch.html_runs import CHECKSUM_LISTS_READ

    folder = html_site.root / "other" / "enterprise_html" / "runs" / OLD
    name = html_dump_name(WIKI, OLD)
    for index in range(1000):
        (folder / f"x{index:04d}-md5sums.txt").write_text(f"{'0' * 32}  other-{index}.json.tar.gz\n")
    digest = hashlib.md5((folder / name).read_bytes()).hexdigest()
    (folder / f"{WIKI}-{OLD}-md5sums.txt").write_text(f"{digest}  {name}\n")
    _, release = _release(html_site)
    assert release.files[0].md5 == digest
    lists = [path for path, _ in html_site.requests if path.endswith("sums.txt")]
    assert 1 <= len(lists) <= CHECKSUM_LISTS_READ


def test_thousands_of_run_folders_are_probed_newest_first_within_the_bound(
    tmp_path: Path, dump_bytes: bytes
) -> None:
    """Issue 63, part 6: a run listing of 10,000 folders (derived in code: one dated run a day back from
    OLD), the wiki's file only in the 1,798th newest: limits.fetch.max_runs_probed folders are looked into,
    newest first, then the search ends; the error names at most limits.fetch.max_answers_told answers and
    counts the rest (it was 10,001 GETs and a 1.38 MB message)."""
    from datetime import date, timedelta

    root = tmp_path / "site"
    newest = date(2024, 6, 1)
    dates = [(newest - timedelta(days=n)).strftime("%Y%m%d") for n in range(10_000)]
    for run in dates:
        root.joinpath("other", "enterprise_html", "runs", run).mkdir(parents=True)
    write_html_run(root, dates[1797], {WIKI: dump_bytes})
    limits = FetchLimits(max_runs_probed=30, max_answers_told=5)
    with DumpSite(root) as site:
        fetcher = Fetcher(FAST)
        with pytest.raises(ReleaseUnavailable) as refused:
            find_wiki_release(
                WIKI, [site.url], fetcher.read_text, fetcher.read_json, form=HTML_FORM, limits=limits
            )
        run_gets = [path for path, _ in site.requests if path.rstrip("/").split("/")[-1].isdigit()]
        assert len(run_gets) == 30 and run_gets[0].rstrip("/").endswith(dates[0])
        message = str(refused.value)
        assert len(message) < 2_000 and "and 25 more answers" in message
        found = find_wiki_release(
            WIKI,
            [site.url],
            fetcher.read_text,
            fetcher.read_json,
            form=HTML_FORM,
            date=dates[1797],
            limits=limits,
        )
        assert found.date == dates[1797]  # a run named by its date is still fetched


@pytest.mark.parametrize("junk", [False, True], ids=["file-then-zeros", "junk"])
def test_a_body_that_goes_on_past_the_listed_size_ends_the_fetch(
    html_site: DumpSite, tmp_path: Path, dump_bytes: bytes, junk: bool
) -> None:
    """Issue 63, part 6: an answer with no Content-Length that goes on past the listed size (the real file
    then zeros without end, or bytes that are not the file): one GET reads the listed size and stops; the
    real file lands verified, the junk is refused by its CRCs, and either ends in seconds."""
    fetcher, release = _release(html_site)
    name = release.files[0].name
    if junk:
        (html_site.root / "other" / "enterprise_html" / "runs" / OLD / name).write_bytes(
            bytes(reversed(dump_bytes))
        )
    html_site.faults.endless.add(name)
    landing = tmp_path / "landing"
    landing.mkdir()
    started = time.monotonic()
    if junk:
        with pytest.raises(FetchError, match="no source's copy matches its size and CRCs"):
            fetcher.fetch(release, landing)
        assert not (landing / name).exists()
    else:
        report = fetcher.fetch(release, landing)
        assert report.files[0].downloaded == len(dump_bytes)
        assert (landing / name).read_bytes() == dump_bytes
    assert time.monotonic() - started < 30
