"""Wikidata's entity dump fetched like a wiki's dump: a run of a dump site laid out as Wikimedia's
(``support/dump_site.py``: ``wikidatawiki/entities/<date>/`` with its checksum lists, serving the real dump
slice of tests/data) is found where it is ready, survives a drop and 503s, lands verified in
``<landing>/wikidata/``, is what ``wikidata.files: [landing]`` reads, and a run without a checksum list or
a mirror without the run is passed over with the reason said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assets.wikidata import embedded_entity_files
from assets.wikipedia.fetch import (
    ENTITY_WIKI,
    Fetcher,
    FetchSettings,
    ReleaseUnavailable,
    entity_dump_name,
    find_entity_release,
    landed_entity_dumps,
)
from support.dump_site import DumpSite, write_entity_run

FAST = FetchSettings.of(stall_seconds=1.0, connect_seconds=5.0, backoff_seconds=0.01, chunk_bytes=1 << 14)
OLD, NEW = "20190401", "20190415"


@pytest.fixture
def entity_site(tmp_path: Path):
    dump = embedded_entity_files()[0].read_bytes()
    root = tmp_path / "site"
    write_entity_run(root, OLD, {"all.json.bz2": dump})
    newer = write_entity_run(root, NEW, {"all.json.bz2": dump})
    for listed in newer.glob("*sums.txt"):
        listed.unlink()  # the newer run's checksums are not out yet: not ready
    with DumpSite(root) as site:
        yield site


def test_the_newest_ready_run_is_fetched_verified_through_faults(
    entity_site: DumpSite, tmp_path: Path
) -> None:
    fetcher = Fetcher(FAST)
    release = find_entity_release([entity_site.url], fetcher.read_text)
    assert (release.date, release.snapshot_id) == (OLD, f"{ENTITY_WIKI}-{OLD}")
    assert any(f"run {NEW} not ready" in answer for answer in release.skipped)
    (remote,) = release.files
    assert remote.name == entity_dump_name(OLD) and remote.size > 0 and remote.md5 and remote.sha1
    entity_site.faults.cut_at[remote.name] = [remote.size // 3]
    entity_site.faults.unavailable = 2
    landing = tmp_path / "landing" / ENTITY_WIKI
    landing.mkdir(parents=True)
    report = fetcher.fetch(release, landing)
    served = embedded_entity_files()[0].read_bytes()
    assert (landing / remote.name).read_bytes() == served
    assert report.files[0].attempts >= 2
    assert landed_entity_dumps(landing) == [landing / remote.name]


def test_no_ready_run_says_what_each_source_answered(entity_site: DumpSite, tmp_path: Path) -> None:
    fetcher = Fetcher(FAST)
    with pytest.raises(ReleaseUnavailable, match=f"run {NEW} not ready.*no checksum list"):
        find_entity_release([entity_site.url], fetcher.read_text, date=NEW)
    mirror = DumpSite(tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    with mirror, pytest.raises(ReleaseUnavailable, match="no entity dump run is ready"):
        find_entity_release([mirror.url], fetcher.read_text)


def test_the_cli_fetches_into_the_landing_folder_and_the_build_reads_it(
    entity_site: DumpSite, tmp_path: Path, kiltpipe, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing = tmp_path / "landing"
    monkeypatch.setenv("KILT_LANDING_DIR", str(landing))
    code, out, err = kiltpipe("fetch", "--wikidata", "--source", entity_site.url, "--quiet")
    assert code == 0, err
    report = json.loads(out)
    assert report["snapshot_id"] == f"{ENTITY_WIKI}-{OLD}"
    assert landed_entity_dumps(landing / ENTITY_WIKI)[0].name == entity_dump_name(OLD)
    from assets.storage import SnapshotPaths
    from orchestration.assets.wikidata import LANDING, entity_files
    from orchestration.resources import PipelineSettings

    pipeline = PipelineSettings(data_dir=str(tmp_path / "data"), params_file=str(tmp_path / "params.yaml"))
    snapshot = SnapshotPaths(tmp_path / "data", "enwiki-20190401")
    assert (
        entity_files(None, pipeline, snapshot) == []
    )  # not the embedded default: no entity files of its own
    with pytest.raises(FileNotFoundError, match=r"extra\.json, which do not exist"):
        entity_files((LANDING, "extra.json"), pipeline, snapshot)
    shutil.copy(embedded_entity_files()[0], tmp_path / "extra.json")  # a real entity file
    assert entity_files((LANDING, "extra.json"), pipeline, snapshot) == [
        landing / ENTITY_WIKI / entity_dump_name(OLD),
        tmp_path / "extra.json",  # relative: from params.yaml's folder
    ]
    code, _, err = kiltpipe("fetch", "--source", entity_site.url, "--quiet")
    assert code != 0 and "--wikidata" in err
