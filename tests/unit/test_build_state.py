"""The build lock and record on their own: who holds the lock, what a build that failed or was killed
leaves as the snapshot's state, and the leftovers a killed build's atomic writes leave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assets.build_state import (
    BuildLock,
    SnapshotBusy,
    build_state,
    building,
    new_owner,
    read_record,
    sweep_leftovers,
)
from assets.snapshot_ids import InvalidSnapshotId, check_snapshot_id, dated_snapshot_id, split_snapshot_id
from assets.storage import atomic_path, complete_snapshots, list_snapshots


def _published(data: Path, snapshot: str) -> None:
    """What a published knowledge source looks like to the state functions (a folder and a manifest)."""
    manifest = data / "snapshots" / snapshot / "knowledge_source" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"snapshot_id": snapshot}))


def test_lock_names_its_holder_and_is_released(tmp_path: Path) -> None:
    owner = new_owner(command="kiltpipe build --dump x")
    with BuildLock(tmp_path, "enwiki-20160501").acquire(owner):
        holder = BuildLock(tmp_path, "enwiki-20160501").holder()
        assert holder["token"] == owner["token"] and holder["command"] == "kiltpipe build --dump x"
        with pytest.raises(SnapshotBusy, match=r"being built by pid \d+ .*\(kiltpipe build --dump x\)"):
            BuildLock(tmp_path, "enwiki-20160501").acquire(new_owner())
        BuildLock(tmp_path, "enwiki-20160601").acquire(new_owner()).release()  # other snapshots are free
    assert BuildLock(tmp_path, "enwiki-20160501").holder() is None


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    script = (
        "import sys, time; from assets.build_state import BuildLock, new_owner; "
        f"lock = BuildLock({str(tmp_path)!r}, 'enwiki-20160501').acquire(new_owner(command='other')); "
        "print('held', flush=True); time.sleep(60)"
    )
    other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        with pytest.raises(SnapshotBusy, match=f"pid {other.pid} "):
            BuildLock(tmp_path, "enwiki-20160501").acquire(new_owner())
    finally:
        other.kill()
        other.wait()
    BuildLock(tmp_path, "enwiki-20160501").acquire(new_owner()).release()  # the kernel dropped it


def test_records_complete_failed_and_unchanged(tmp_path: Path) -> None:
    with building(tmp_path, "enwiki-20160501") as session:  # publishes nothing: no record at all
        session.failed("step knowledge_source failed: truncated")
    assert read_record(tmp_path, "enwiki-20160501") is None

    _published(tmp_path, "enwiki-20160501")
    with building(tmp_path, "enwiki-20160501") as session:
        assert build_state(tmp_path, "enwiki-20160501").state == "building"
        session.materialized("knowledge_source")
    assert build_state(tmp_path, "enwiki-20160501").complete
    complete = read_record(tmp_path, "enwiki-20160501")

    with building(tmp_path, "enwiki-20160501") as session:  # fails before publishing: state kept
        session.failed("step knowledge_source.parse failed")
    assert read_record(tmp_path, "enwiki-20160501") == complete

    with pytest.raises(RuntimeError), building(tmp_path, "enwiki-20160501") as session:
        session.materialized("passages")
        raise RuntimeError("bm25 crashed")
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.state == "failed" and state.reason == "its build failed: RuntimeError: bm25 crashed"
    assert list_snapshots(tmp_path) == ["enwiki-20160501"] and complete_snapshots(tmp_path) == []


def test_a_killed_build_reads_as_interrupted(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    script = (
        "import os; from assets.build_state import building; "
        f"ctx = building({str(tmp_path)!r}, 'enwiki-20160501'); ctx.__enter__(); os._exit(9)"
    )
    subprocess.run([sys.executable, "-c", script], check=False)
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.state == "interrupted" and "stopped before it finished" in state.reason
    with building(tmp_path, "enwiki-20160501") as session:
        session.failed("step x failed")  # publishes nothing: the interruption stays on record
    assert build_state(tmp_path, "enwiki-20160501").state == "failed"


def test_leftovers_of_atomic_writes_are_swept(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    passages = tmp_path / "snapshots" / "enwiki-20160501" / "passages"
    with pytest.raises(KeyboardInterrupt), atomic_path(passages / "passages.tsv") as temp:
        temp.write_text("half")
        leftover = temp.with_name(temp.name + "-copy")
        leftover.write_text("half")  # what a kill -9 leaves: the cleanup below never runs
        raise KeyboardInterrupt
    (passages / ".old-parquet-0123").mkdir()
    assert sweep_leftovers(tmp_path, "enwiki-20160501") == 2
    assert not [p for p in passages.rglob("*") if p.name.startswith((".tmp-", ".old-"))]
    assert (tmp_path / "snapshots" / "enwiki-20160501" / "knowledge_source" / "manifest.json").is_file()


@pytest.mark.parametrize(
    "good", ["enwiki-20160501", "zh_yuewiki-20240601", "kilt-20190801", "kilt-copy", "a.b"]
)
def test_snapshot_id_rule_accepts(good: str) -> None:
    assert check_snapshot_id(good) == good


@pytest.mark.parametrize(
    "bad", ["", ".", "..", "../x", "/abs", "a/b", "a\\b", ".hidden", "-x", "x" * 101, "a..b"]
)
def test_snapshot_id_rule_refuses(bad: str) -> None:
    with pytest.raises(InvalidSnapshotId, match="is not valid"):
        check_snapshot_id(bad)


def test_dated_ids() -> None:
    assert dated_snapshot_id("enwiki", "2016-05-01T12:00:00Z") == "enwiki-20160501"
    assert split_snapshot_id("zh_yuewiki-20240601") == ("zh_yuewiki", "20240601")
    assert split_snapshot_id("kilt-copy") is None
