"""The build lock and record on their own: who holds the lock, what a build that failed or was killed
leaves as the snapshot's state, and the leftovers a killed build's atomic writes leave."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from assets.files import atomic_path
from assets.snapshot_ids import InvalidSnapshotId, check_snapshot_id, dated_snapshot_id, split_snapshot_id
from assets.storage import (
    BuildLock,
    SnapshotBusy,
    build_state,
    building,
    complete_snapshots,
    exchange_paths,
    list_snapshots,
    new_owner,
    read_record,
    resolve_snapshot,
    staging_root,
    sweep_leftovers,
)


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
        "import sys, time; from assets.storage import BuildLock, new_owner; "
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


def _manifest(root: Path) -> dict:
    return json.loads((root / "knowledge_source" / "manifest.json").read_text())


def _stage(session, version: str) -> None:
    """What a build step does in its staging folder: replace an artifact atomically."""
    with atomic_path(session.root / "knowledge_source" / "manifest.json") as temp:
        temp.write_text(json.dumps({"snapshot_id": session.snapshot_id, "version": version}))


def test_first_build_that_publishes_nothing_leaves_nothing(tmp_path: Path) -> None:
    with building(tmp_path, "enwiki-20160501") as session:
        session.failed("step knowledge_source failed: truncated")
    assert read_record(tmp_path, "enwiki-20160501") is None
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == []  # no empty snapshot folder
    assert list_snapshots(tmp_path) == [] and build_state(tmp_path, "enwiki-20160501").state == "failed"


def test_rebuild_is_staged_beside_the_published_version_and_swapped_in(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    published = tmp_path / "snapshots" / "enwiki-20160501"
    with building(tmp_path, "enwiki-20160501") as session:
        assert session.root == staging_root(tmp_path, "enwiki-20160501") != published
        staged = session.root / "knowledge_source" / "manifest.json"
        assert staged.stat().st_ino == (published / "knowledge_source" / "manifest.json").stat().st_ino
        state = build_state(tmp_path, "enwiki-20160501")  # readers see the published version meanwhile
        assert state.complete and state.rebuild.startswith("being rebuilt by pid")
        _stage(session, "new")
        assert "version" not in _manifest(published)  # the link was replaced, not written through
        session.materialized("knowledge_source")
    assert _manifest(published)["version"] == "new"
    record = read_record(tmp_path, "enwiki-20160501")
    assert record["state"] == "complete" and record["published"] == ["knowledge_source"] and record["version"]
    assert not (tmp_path / "snapshots" / ".staging").exists()


def test_failed_rebuild_keeps_the_complete_version_and_resumes(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    with pytest.raises(RuntimeError), building(tmp_path, "enwiki-20160501") as session:
        _stage(session, "half")
        session.materialized("knowledge_source")
        raise RuntimeError("bm25 crashed")
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.complete and "failed and was not published: RuntimeError: bm25 crashed" in state.rebuild
    assert "version" not in _manifest(tmp_path / "snapshots" / "enwiki-20160501")
    assert complete_snapshots(tmp_path) == ["enwiki-20160501"]
    with building(tmp_path, "enwiki-20160501") as session:  # resumes from the kept staging folder
        assert _manifest(session.root)["version"] == "half" and "resumed" in session.owner["staging"]
        session.materialized("passages")
    assert _manifest(tmp_path / "snapshots" / "enwiki-20160501")["version"] == "half"
    assert build_state(tmp_path, "enwiki-20160501").rebuild == ""


def test_first_build_whose_checks_failed_is_published_as_failed(tmp_path: Path) -> None:
    with building(tmp_path, "enwiki-20160501") as session:
        (session.root / "knowledge_source").mkdir()
        _stage(session, "bad")
        session.materialized("knowledge_source")
        session.failed("check unique_ids_and_titles failed (1 duplicate titles)")
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.state == "failed" and "duplicate titles" in state.reason
    assert list_snapshots(tmp_path) == ["enwiki-20160501"] and complete_snapshots(tmp_path) == []


def _kill_inside_a_build(data: Path) -> None:
    script = (
        "import os; from assets.storage import building; "
        f"ctx = building({str(data)!r}, 'enwiki-20160501'); session = ctx.__enter__(); os._exit(9)"
    )
    subprocess.run([sys.executable, "-c", script], check=False)


def test_a_killed_rebuild_leaves_the_published_version_complete(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    _kill_inside_a_build(tmp_path)
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.complete and "stopped before it finished" in state.rebuild
    with building(tmp_path, "enwiki-20160501") as session:
        assert "resumed" in session.owner["staging"]
        session.failed("step x failed")  # publishes nothing: the published version stays
    assert build_state(tmp_path, "enwiki-20160501").complete


def test_a_killed_first_build_reads_as_interrupted(tmp_path: Path) -> None:
    _kill_inside_a_build(tmp_path)
    state = build_state(tmp_path, "enwiki-20160501")
    assert state.state == "interrupted" and "stopped before it finished" in state.reason
    with pytest.raises(LookupError, match="enwiki-20160501 is incomplete: its build by pid"):
        resolve_snapshot(tmp_path, None)


def test_leftovers_of_atomic_writes_are_swept(tmp_path: Path) -> None:
    _published(tmp_path, "enwiki-20160501")
    _kill_inside_a_build(tmp_path)  # leaves a staging folder to resume
    passages = staging_root(tmp_path, "enwiki-20160501") / "passages"
    with pytest.raises(KeyboardInterrupt), atomic_path(passages / "passages.tsv") as temp:
        temp.write_text("half")
        leftover = temp.with_name(temp.name + "-copy")
        leftover.write_text("half")  # what a kill -9 leaves: the cleanup below never runs
        raise KeyboardInterrupt
    (passages / ".old-parquet-0123").mkdir()
    assert sweep_leftovers(staging_root(tmp_path, "enwiki-20160501")) == 2
    assert not [p for p in passages.rglob("*") if p.name.startswith((".tmp-", ".old-"))]


def test_readers_never_see_neither_version(tmp_path: Path) -> None:
    """While builds swap new versions in, a reader polling the published manifest always finds one, and a
    reader holding the old version's file open keeps reading it after the swap."""
    _published(tmp_path, "enwiki-20160501")
    manifest = tmp_path / "snapshots" / "enwiki-20160501" / "knowledge_source" / "manifest.json"
    held = open(manifest)  # noqa: SIM115 - held across the swaps
    stop, misses, reads = threading.Event(), [], [0]

    def poll() -> None:
        while not stop.is_set():
            try:
                json.loads(manifest.read_text())
                reads[0] += 1
            except (FileNotFoundError, json.JSONDecodeError) as error:
                misses.append(repr(error))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for number in range(30):
            with building(tmp_path, "enwiki-20160501") as session:
                _stage(session, str(number))
                session.materialized("knowledge_source")
    finally:
        stop.set()
        reader.join()
    assert misses == [] and reads[0] > 30
    assert json.loads(held.read()) == {"snapshot_id": "enwiki-20160501"}  # the version it opened
    held.close()
    assert json.loads(manifest.read_text())["version"] == "29"


def test_exchange_swaps_two_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b" / "x").write_text("b")
    assert exchange_paths(tmp_path / "a", tmp_path / "b")  # Linux with renameat2 (every CI machine)
    assert (tmp_path / "a" / "x").read_text() == "b" and (tmp_path / "b" / "x").read_text() == "a"


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
