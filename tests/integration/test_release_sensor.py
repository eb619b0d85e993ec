"""The release sensor and ``kiltpipe fetch`` against a dump site on 127.0.0.1 (``support/dump_site.py``)
serving the real excerpt: a run is fetched once its jobs are done, once; the fetch job and the CLI put
verified files into the landing folder, where the landing sensor then finds a complete dump; a run still in
progress, a wiki not watched, a snapshot already there are not fetched; a full disk is one line naming the
folder, before the first byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, SensorResult, SkipReason, build_sensor_context

from assets.params import Params, ReleasesParams, SnapshotsParams
from orchestration.releases import build_release_sensor
from orchestration.resources import PipelineSettings
from support.dump_site import DumpSite, write_run
from tests.conftest import NEW, OLD, WIKI
from tests.small_disk import run_on_small_disk

REPO = Path(__file__).resolve().parents[2]


def _params(tmp_path: Path, site: DumpSite, **releases) -> Path:
    """A params.yaml watching ``enwiki`` on the site (fast retries), the rest the defaults."""
    import yaml

    settings = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    settings["snapshots"]["releases"].update(
        {"wikis": [WIKI], "sources": [site.url], "stall_seconds": 2, **releases}
    )
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


def _tick(sensor, data_dir: Path, params_file: Path, cursor: str | None = None):
    pipeline = PipelineSettings(data_dir=str(data_dir), params_file=str(params_file))
    context = build_sensor_context(
        instance=DagsterInstance.ephemeral(), cursor=cursor, resources={"pipeline": pipeline}
    )
    return sensor(context)


def test_the_sensor_requests_one_fetch_per_ready_run(
    site: DumpSite, tmp_path: Path, run_of_excerpt: dict[str, bytes]
) -> None:
    landing = tmp_path / "landing"
    params_file = _params(tmp_path, site)
    sensor = build_release_sensor(ReleasesParams(wikis=(WIKI,), sources=(site.url,)), landing)
    first = _tick(sensor, tmp_path / "data", params_file)
    assert isinstance(first, SensorResult) and len(first.run_requests) == 1
    (request,) = first.run_requests
    assert request.run_key == f"fetch-{WIKI}-{OLD}"
    config = request.run_config["ops"]["fetch_release"]["config"]
    assert config == {"wiki": WIKI, "date": OLD, "source": site.url, "landing_dir": str(landing.absolute())}
    again = _tick(sensor, tmp_path / "data", params_file, first.cursor)
    assert not again.run_requests and f"no run newer than {OLD}" in again.skip_reason.skip_message

    write_run(site.root, WIKI, NEW, run_of_excerpt)
    site.faults.job_status[(NEW, "pagepropstable")] = "in-progress"
    waiting = _tick(sensor, tmp_path / "data", params_file, first.cursor)
    assert not waiting.run_requests  # the newer run is in progress: the sensor waits for it
    assert f"no run newer than {OLD} of {WIKI} is ready" in waiting.skip_reason.skip_message
    site.faults.job_status.clear()
    done = _tick(sensor, tmp_path / "data", params_file, first.cursor)
    assert [r.run_key for r in done.run_requests] == [f"fetch-{WIKI}-{NEW}"]

    (landing / f"{WIKI}-{NEW}-sha1sums.txt").parent.mkdir(parents=True, exist_ok=True)
    (landing / f"{WIKI}-{NEW}-sha1sums.txt").write_text("")  # already landed (copied by hand)
    there = _tick(sensor, tmp_path / "data", params_file, first.cursor)
    assert (
        not there.run_requests
        and f"{WIKI}-{NEW} is already in {landing.absolute()}" in there.skip_reason.skip_message
    )


def test_nothing_to_watch_is_a_skip_that_says_how(site: DumpSite, tmp_path: Path) -> None:
    sensor = build_release_sensor(ReleasesParams(), tmp_path / "landing")
    result = _tick(sensor, tmp_path / "data", _params(tmp_path, site, wikis=[]))
    assert isinstance(result, SkipReason) and "snapshots.releases.wikis" in result.skip_message


def test_the_fetch_job_lands_a_dump_the_landing_sensor_builds(site: DumpSite, tmp_path: Path) -> None:
    """The ``fetch_dump`` job of the project's definitions (its resources and IO managers) fetches a run
    through a dropped connection; the landing folder then holds a dump the landing sensor's scan calls
    complete, with its SQL tables."""
    from assets.wikipedia.fetch import scan_landing
    from orchestration.definitions import build_definitions

    landing = tmp_path / "landing"
    params_file = _params(tmp_path, site)
    site.faults.cut_at[f"{WIKI}-{OLD}-pages-articles-multistream.xml.bz2"] = [500_000]
    pipeline = PipelineSettings(data_dir=str(tmp_path / "data"), params_file=str(params_file))
    job = build_definitions(pipeline, landing).resolve_job_def("fetch_dump")
    result = job.execute_in_process(
        run_config={"ops": {"fetch_release": {"config": {"wiki": WIKI, "landing_dir": str(landing)}}}},
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    (output,) = [e for e in result.events_for_node("fetch_release") if e.event_type_value == "STEP_OUTPUT"]
    metadata = {key: value.value for key, value in output.step_output_data.metadata.items()}
    assert metadata["snapshot_id"] == f"{WIKI}-{OLD}" and metadata["resumes"] == 1
    assert metadata["bytes_downloaded"] == metadata["bytes"]
    scan = scan_landing(landing, settle_seconds=0)
    assert [d.snapshot_id for d in scan.complete] == [f"{WIKI}-{OLD}"]
    assert scan.complete[0].page_props is not None and scan.complete[0].redirect_table is not None


def _kiltpipe(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_kiltpipe_fetch_and_a_run_not_there(site: DumpSite, tmp_path: Path) -> None:
    env = {**os.environ, "KILT_PARAMS": str(_params(tmp_path, site))}
    out = tmp_path / "landing"
    done = _kiltpipe("fetch", "--wiki", WIKI, "--out", str(out), "--contact", "ops@example.org", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["snapshot_id"] == f"{WIKI}-{OLD}" and report["downloaded"] == report["size"]
    assert any("ops@example.org" in (h.get("User-Agent") or "") for _, h in site.requests)
    missing = _kiltpipe("fetch", "--wiki", WIKI, "--date", "20990101", "--out", str(out), env=env)
    assert missing.returncode == 1 and "no run 20990101 of enwiki is ready" in missing.stderr
    bad = _kiltpipe("fetch", "--wiki", WIKI, "--tables", "pageprops", "--out", str(out), env=env)
    assert bad.returncode == 2 and "unknown table 'pageprops'" in bad.stderr


def test_a_full_disk_stops_the_fetch_before_the_first_byte(site: DumpSite, tmp_path: Path) -> None:
    env = {**os.environ, "KILT_PARAMS": str(_params(tmp_path, site))}
    small = tmp_path / "small"
    run = run_on_small_disk(
        small,
        1 << 20,  # 1 MiB: less than the 1.7 MB of the articles
        [sys.executable, "-m", "orchestration.cli", "fetch", "--wiki", WIKI, "--out", str(small / "landing")],
        env=env,
    )
    assert run.returncode == 2, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("kiltpipe:")]
    assert "disk full: the fetch of enwiki-20160501 needs about 1.7 MB" in line and str(small) in line
    assert not [name for name in run.left if not name.startswith("landing/.fetch") and name != "landing"]
    assert not any(name.endswith(".bz2") for name in run.left)
    assert sum(n for n in site.sent.values()) == 0  # not a byte of a dump file was downloaded


def test_releases_settings_are_read_from_params() -> None:
    section = Params().snapshots.releases
    assert section == SnapshotsParams().releases and section.connections_per_host == 2
    assert section.sources[0] == "https://dumps.wikimedia.org" and section.form == "multistream"
    sensor = build_release_sensor(section)
    assert sensor.name == "dump_release_sensor" and sensor.job_name == "fetch_dump"


def test_a_killed_fetch_goes_on_from_its_bytes(site: DumpSite, tmp_path: Path) -> None:
    """``kiltpipe fetch`` killed (SIGKILL) mid-file, then run again: the second run asks for the rest of the
    file (a Range from the bytes on disk) and the two runs together download the release once."""
    import signal
    import time

    env = {**os.environ, "KILT_PARAMS": str(_params(tmp_path, site))}
    out = tmp_path / "landing"
    command = [sys.executable, "-m", "orchestration.cli", "fetch", "--wiki", WIKI, "--out", str(out)]
    articles = f"{WIKI}-{OLD}-pages-articles-multistream.xml.bz2"
    part = out / ".fetch" / f"{WIKI}-{OLD}" / f"{articles}.part"
    slow = subprocess.Popen([*command, "--rate-limit", "200000", "--quiet"], env=env, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and (not part.is_file() or part.stat().st_size < 400_000):
        time.sleep(0.1)
    os.killpg(slow.pid, signal.SIGKILL)
    slow.wait()
    kept = part.stat().st_size
    assert 400_000 <= kept < 1_700_000 and not (out / articles).exists()
    done = _kiltpipe(*command[3:], env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    fetched = next(f for f in report["files"] if f["name"] == articles)
    assert fetched["resumes"] == 1 and fetched["downloaded"] == fetched["size"] - kept
    ranges = [h.get("Range") for path, h in site.requests if path.endswith(articles) and h.get("Range")]
    assert ranges == [f"bytes={kept}-"]
    assert (out / articles).stat().st_size == fetched["size"]


def test_the_fetch_job_fetches_the_entity_dump_too_when_asked(site: DumpSite, tmp_path: Path) -> None:
    """``snapshots.releases.wikidata: true``: with the run, the newest ready Wikidata entity dump of the
    same site (the real dump slice of tests/data) lands verified in ``<landing>/wikidata/``, where
    ``wikidata.files: [landing]`` finds it; a second run does not fetch it again."""
    from assets.wikidata import embedded_entity_files
    from assets.wikipedia.fetch import ENTITY_WIKI, landed_entity_dumps
    from orchestration.definitions import build_definitions
    from support.dump_site import write_entity_run

    slice_bytes = embedded_entity_files()[0].read_bytes()
    write_entity_run(site.root, "20190401", {"all.json.bz2": slice_bytes})
    landing = tmp_path / "landing"
    params_file = _params(tmp_path, site, wikidata=True)
    pipeline = PipelineSettings(data_dir=str(tmp_path / "data"), params_file=str(params_file))
    job = build_definitions(pipeline, landing).resolve_job_def("fetch_dump")
    for _ in range(2):
        result = job.execute_in_process(
            run_config={"ops": {"fetch_release": {"config": {"wiki": WIKI, "landing_dir": str(landing)}}}},
            instance=DagsterInstance.ephemeral(),
        )
        assert result.success
    (landed,) = landed_entity_dumps(landing / ENTITY_WIKI)
    assert landed.read_bytes() == slice_bytes
    fetched = [path for path, _ in site.requests if path.endswith("wikidata-20190401-all.json.bz2")]
    assert len(fetched) == 1
