"""The landing sensor and the rebuild schedule, evaluated with Dagster's test contexts on real dump files
copied (or half-copied) into a temporary landing folder."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    RunRequest,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
)

from assets import params
from assets.storage import registered_dump
from orchestration.definitions import defs
from orchestration.resources import SNAPSHOTS, PipelineSettings
from orchestration.sensors import build_landing_sensor, build_rebuild_schedule
from support.dump_variants import read_xml, split_dump, write_dump

SNAPSHOT = "enwiki-20160601"


def _sensor(landing: Path):
    return build_landing_sensor("build_all", landing, interval_seconds=5, settle_seconds=0)


def _tick(sensor, instance: DagsterInstance, data_dir: Path, cursor: str | None = None):
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"pipeline": PipelineSettings(data_dir=str(data_dir))}
    )
    return sensor(context)


def _checksums(folder: Path, algorithm: str, files: dict[str, bytes], snapshot: str = SNAPSHOT) -> Path:
    """A Wikimedia ``*-{md5,sha1}sums.txt`` naming the dump files plus ones that never land here."""
    lines = [f"{hashlib.new(algorithm, data).hexdigest()}  {name}" for name, data in files.items()]
    lines.append(f"{'0' * len(hashlib.new(algorithm).hexdigest())}  {snapshot}-pages-meta-history.xml.bz2")
    path = folder / f"{snapshot}-{algorithm}sums.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    folder = tmp_path / "landing"
    folder.mkdir()
    return folder


def test_missing_or_empty_landing_folder_skips(tmp_path: Path, landing: Path) -> None:
    instance = DagsterInstance.ephemeral()
    result = _tick(_sensor(tmp_path / "nowhere"), instance, tmp_path / "data")
    assert isinstance(result, SkipReason)
    assert f"landing folder {tmp_path / 'nowhere'} does not exist: create it" in result.skip_message
    assert "$KILT_LANDING_DIR" in result.skip_message
    first = _tick(_sensor(landing), instance, tmp_path / "data")
    assert isinstance(first, SensorResult) and not first.run_requests
    assert f"no new complete dump in {landing}" in first.skip_reason.skip_message  # not "an empty result"
    again = _tick(_sensor(landing), instance, tmp_path / "data", first.cursor)
    assert isinstance(again, SkipReason) and "no new complete dump" in again.skip_message


def test_half_copied_dump_waits_then_one_run(tmp_path: Path, landing: Path, excerpt: Path) -> None:
    """The checksum file lands first; the dump is copied in two steps. Only the complete, verified copy
    adds the partition and requests a run; later ticks never request it again."""
    data = excerpt.read_bytes()
    name = f"{SNAPSHOT}-pages-articles.xml.bz2"
    _checksums(landing, "md5", {name: data})
    (landing / name).write_bytes(data[: len(data) // 2])
    sensor, instance, data_dir = _sensor(landing), DagsterInstance.ephemeral(), tmp_path / "data"

    waiting = _tick(sensor, instance, data_dir)
    assert isinstance(waiting, SensorResult) and not waiting.run_requests
    assert str(landing) in waiting.skip_reason.skip_message
    assert registered_dump(data_dir, SNAPSHOT) is None

    (landing / name).write_bytes(data)
    ready = _tick(sensor, instance, data_dir, waiting.cursor)
    [request] = ready.run_requests
    assert isinstance(request, RunRequest) and request.partition_key == SNAPSHOT
    assert request.run_key.startswith(SNAPSHOT) and request.tags["kilt/trigger"] == "landing"
    [add] = ready.dynamic_partitions_requests
    assert add.partitions_def_name == SNAPSHOTS.name and list(add.partition_keys) == [SNAPSHOT]
    config = request.run_config["ops"]["wikipedia_dump"]["config"]  # the files travel with the run ...
    assert config["dump_paths"] == [str(landing / name)] and config["source"] == "landing"
    assert config["details"]["verified_by"] == "md5sums" and config["details"]["run_key"] == request.run_key
    assert registered_dump(data_dir, SNAPSHOT) is None  # ... and are recorded once the build publishes

    instance.add_dynamic_partitions(SNAPSHOTS.name, [SNAPSHOT])  # what the daemon does with the request
    later = _tick(sensor, instance, data_dir, ready.cursor)
    assert isinstance(later, SkipReason)
    assert json.loads(ready.cursor)["requested"] == [request.run_key]


def test_part_files_need_every_part_named_by_the_checksums(
    tmp_path: Path, landing: Path, excerpt: Path
) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    cut = [0, len(pages) // 3, 2 * len(pages) // 3, len(pages)]
    parts: dict[str, bytes] = {}
    for number in range(3):
        xml = header + b"".join(pages[cut[number] : cut[number + 1]]) + footer
        name = f"{SNAPSHOT}-pages-articles{number + 1}.xml-p{cut[number] + 1}p{cut[number + 1]}.bz2"
        parts[name] = write_dump(tmp_path / name, xml, "bz2").read_bytes()
    _checksums(landing, "sha1", parts)
    names = list(parts)
    for name in names[:2]:
        shutil.copy(tmp_path / name, landing / name)
    sensor, instance, data_dir = _sensor(landing), DagsterInstance.ephemeral(), tmp_path / "data"
    waiting = _tick(sensor, instance, data_dir)
    assert waiting.run_requests == []

    shutil.copy(tmp_path / names[2], landing / names[2])
    ready = _tick(sensor, instance, data_dir, waiting.cursor)
    [request] = ready.run_requests
    assert request.partition_key == SNAPSHOT and "(+2 parts)" in request.tags["kilt/dump"]
    dump_paths = request.run_config["ops"]["wikipedia_dump"]["config"]["dump_paths"]
    assert dump_paths == [str(landing / n) for n in names]


def test_a_built_snapshot_is_not_built_again(built_excerpt, landing: Path, excerpt: Path) -> None:
    paths, _ = built_excerpt
    name = f"{paths.snapshot_id}-pages-articles.xml.bz2"
    shutil.copy(excerpt, landing / name)
    _checksums(landing, "md5", {name: excerpt.read_bytes()}, paths.snapshot_id)
    result = _tick(_sensor(landing), DagsterInstance.ephemeral(), paths.data_dir)
    assert isinstance(result, SensorResult) and result.run_requests == []
    assert json.loads(result.cursor)["requested"]  # remembered: the next tick does not look again


def test_schedule_requests_the_newest_built_partition(built_excerpt) -> None:
    paths, _ = built_excerpt
    schedule = build_rebuild_schedule("rebuild_derived", params.RebuildScheduleParams(cron="0 4 * * 0"))
    resources = {"pipeline": PipelineSettings(data_dir=str(paths.data_dir))}
    # each context in a with-block: a context left open keeps the test instance as Dagster's current
    # state storage after the instance's folder is gone, and a later build in this process fails on it
    with instance_for_test() as instance:
        with build_schedule_context(instance=instance, resources=resources) as context:
            skipped = schedule(context)
        assert isinstance(skipped, SkipReason)
        instance.add_dynamic_partitions(
            SNAPSHOTS.name, ["enwiki-20150101", paths.snapshot_id, "enwiki-20990101"]
        )
        with build_schedule_context(instance=instance, resources=resources) as context:
            request = schedule(context)
    assert isinstance(request, RunRequest) and request.partition_key == paths.snapshot_id  # newest built


def test_sensor_and_schedule_are_defined_from_params() -> None:
    snapshots = params.load_params().snapshots
    sensor = defs.resolve_sensor_def("dump_landing_sensor")
    assert sensor.minimum_interval_seconds == snapshots.sensor_interval_seconds
    assert sensor.job_name == "build_all"
    schedule = defs.resolve_schedule_def("rebuild_newest_snapshot")
    assert schedule.cron_schedule == snapshots.rebuild_schedule.cron
    assert schedule.job_name == "rebuild_derived"
    job = defs.resolve_job_def("rebuild_derived")
    derived = {key.to_user_string() for key in job.asset_layer.executable_asset_keys}
    assert "knowledge_source" not in derived and {"passages", "bm25_index", "dense_index"} <= derived


def test_a_landing_folder_the_sensor_cannot_read_says_so_in_the_tick_log(
    tmp_path: Path, landing: Path, capsys: pytest.CaptureFixture
) -> None:
    """A missing or unreadable folder is a warning in the tick's log and a skip naming the absolute path;
    the sensor's description names the folder it watches."""
    import os

    instance = DagsterInstance.ephemeral()
    sensor = _sensor(landing)
    assert str(landing.absolute()) in sensor.description
    relative = build_landing_sensor("build_all", Path("landing-nowhere"), interval_seconds=5)
    assert str(Path("landing-nowhere").absolute()) in relative.description
    capsys.readouterr()
    result = _tick(_sensor(tmp_path / "nowhere"), instance, tmp_path / "data")
    assert f"WARNING - {result.skip_message}" in capsys.readouterr().err  # the tick's log says why
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    result = _tick(_sensor(not_a_folder), instance, tmp_path / "data")
    assert f"landing folder {not_a_folder} is not a folder" in result.skip_message
    if os.getuid() != 0:  # root reads every folder
        landing.chmod(0)
        try:
            result = _tick(sensor, instance, tmp_path / "data")
            assert "cannot be read by this process" in result.skip_message
        finally:
            landing.chmod(0o755)


def test_the_first_build_creates_the_landing_folder(
    kiltpipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_excerpt: Path
) -> None:
    folder = tmp_path / "landing-made-by-build"
    monkeypatch.setenv("KILT_LANDING_DIR", str(folder))
    code, _, err = kiltpipe(
        "build", "--data-dir", tmp_path / "data", "--dump", small_excerpt,
        "--select", "+key:knowledge_source", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert folder.is_dir()
