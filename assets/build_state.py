"""Who is building a snapshot, and whether its last build completed.

Two files per snapshot under ``<data_dir>/builds/`` (outside ``snapshots/``, so a build that publishes
nothing leaves no snapshot folder behind):

* ``<id>.lock``: an exclusive ``flock`` held by the process that runs a build (``kiltpipe build``, or the
  run worker of a run launched from the UI, the landing sensor or the schedule) for the whole run. A
  second build of the same snapshot fails at once with :class:`SnapshotBusy`, naming the holder (pid,
  host, command, start time), which the lock file records. The kernel drops the lock when its process
  dies, ``kill -9`` included: a stale lock cannot block the next build.
* ``<id>.json``: the build record: ``building`` when a build starts, then ``complete`` or ``failed``
  (with the failed steps and checks). A record still saying ``building`` while nobody holds the lock is
  an *interrupted* build. A snapshot without a record (pulled with DVC, imported, built before records
  existed) counts as complete.

Only complete snapshots become the default "newest" snapshot of lookups (:func:`assets.storage.
resolve_snapshot`); the others are reported with the reason.

Pure module: no Dagster import.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from assets.snapshot_ids import check_snapshot_id

BUILDS_DIR = "builds"
LOCK_TAG = "kilt/build_lock"
"""Run tag carrying the token of the lock its launcher holds (the run does not take the lock again)."""

State = Literal["complete", "building", "failed", "interrupted"]


class SnapshotBusy(RuntimeError):
    """Another build of the same snapshot holds its lock."""


def builds_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / BUILDS_DIR


def lock_file(data_dir: Path | str, snapshot_id: str) -> Path:
    return builds_dir(data_dir) / f"{check_snapshot_id(snapshot_id)}.lock"


def record_file(data_dir: Path | str, snapshot_id: str) -> Path:
    return builds_dir(data_dir) / f"{check_snapshot_id(snapshot_id)}.json"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_owner(command: str | None = None, **extra: Any) -> dict[str, Any]:
    """Who takes a lock: pid, host, command line, start time and a fresh token."""
    return {
        "token": uuid.uuid4().hex,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command if command is not None else " ".join(sys.argv),
        "started": _now(),
        **extra,
    }


def describe_owner(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another process (it left no owner record)"
    run = f", run {owner['run_id']}" if owner.get("run_id") else ""
    return (
        f"pid {owner.get('pid')} on {owner.get('host')} since {owner.get('started')}{run} "
        f"({owner.get('command') or 'unknown command'})"
    )


class BuildLock:
    """The exclusive per-snapshot build lock (see the module docstring)."""

    RETRY_SECONDS = 1.0  # a reader probing the lock (:meth:`holder`) holds it for microseconds

    def __init__(self, data_dir: Path | str, snapshot_id: str) -> None:
        self.snapshot_id = check_snapshot_id(snapshot_id)
        self.path = lock_file(data_dir, snapshot_id)
        self._handle: Any = None
        self.owner: dict[str, Any] | None = None

    def acquire(self, owner: dict[str, Any]) -> BuildLock:
        """Lock for ``owner`` (:func:`new_owner`), or raise :class:`SnapshotBusy` naming its holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release()
        deadline = time.monotonic() + self.RETRY_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = _parse_owner(handle.read())
                    handle.close()
                    raise SnapshotBusy(
                        f"snapshot {self.snapshot_id} is being built by {describe_owner(holder)}; wait for "
                        f"that build to finish or stop it (lock: {self.path})"
                    ) from None
                time.sleep(0.05)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(owner, sort_keys=True))
        handle.flush()
        self._handle, self.owner = handle, owner
        return self

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.seek(0)
                self._handle.truncate()
                self._handle.flush()
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def holder(self) -> dict[str, Any] | None:
        """The owner record of the process holding the lock, or None when nobody holds it."""
        if self._handle is not None:
            return self.owner
        try:
            handle = open(self.path, encoding="utf-8")  # noqa: SIM115
        except FileNotFoundError:
            return None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return _parse_owner(handle.read()) or {}
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None

    def __enter__(self) -> BuildLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _parse_owner(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


# ----------------------------------------------------------------------------------------- records
@dataclass(frozen=True, slots=True)
class BuildState:
    """What the last build of a snapshot left: ``complete``, ``building``, ``failed`` or ``interrupted``."""

    snapshot_id: str
    state: State
    reason: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def describe(self) -> str:
        return f"snapshot {self.snapshot_id} is incomplete: {self.reason}" if not self.complete else ""


def read_record(data_dir: Path | str, snapshot_id: str) -> dict[str, Any] | None:
    path = record_file(data_dir, snapshot_id)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: build record is not valid JSON ({exc}); delete it to reset") from exc


def _write_record(data_dir: Path | str, snapshot_id: str, record: dict[str, Any]) -> None:
    path = record_file(data_dir, snapshot_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    temp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temp, path)


def build_state(data_dir: Path | str, snapshot_id: str) -> BuildState:
    """The state of ``snapshot_id``'s last build (see the module docstring)."""
    record = read_record(data_dir, snapshot_id)
    if record is None:
        return BuildState(snapshot_id, "complete")
    state = record.get("state")
    if state == "complete":
        return BuildState(snapshot_id, "complete", record=record)
    if state == "failed":
        return BuildState(snapshot_id, "failed", f"its build failed: {record.get('reason')}", record)
    holder = BuildLock(data_dir, snapshot_id).holder()
    if holder is not None:
        return BuildState(snapshot_id, "building", f"it is being built by {describe_owner(holder)}", record)
    return BuildState(
        snapshot_id,
        "interrupted",
        f"its build by pid {record.get('pid')} on {record.get('host')} (started {record.get('started')}) "
        "stopped before it finished (killed?); build it again",
        record,
    )


@dataclass(slots=True)
class BuildSession:
    """One build of a snapshot, holding its lock (:func:`building`): what failed and what was published."""

    data_dir: Path
    snapshot_id: str
    owner: dict[str, Any]
    previous: dict[str, Any] | None
    failures: list[str] = field(default_factory=list)
    published: list[str] = field(default_factory=list)

    def failed(self, what: str) -> None:
        """Note a failed step or check (the record's reason lists them in order)."""
        if what not in self.failures:
            self.failures.append(what)

    def materialized(self, asset: str) -> None:
        """Note an asset this build published (every asset publishes atomically, then materializes)."""
        if asset not in self.published:
            self.published.append(asset)

    def _finish(self, extra_failure: str | None = None) -> None:
        if extra_failure:
            self.failed(extra_failure)
        knowledge_source = self.data_dir / "snapshots" / self.snapshot_id / "knowledge_source"
        unchanged = self.failures and not self.published
        if not knowledge_source.is_dir() or (unchanged and (self.previous or {}).get("state") != "failed"):
            # the build changed nothing (it failed before publishing any asset): the snapshot keeps the
            # state it had, and a snapshot that never had a knowledge source keeps no record
            if self.previous is None or not knowledge_source.is_dir():
                record_file(self.data_dir, self.snapshot_id).unlink(missing_ok=True)
            else:
                _write_record(self.data_dir, self.snapshot_id, self.previous)
            return
        record = {key: value for key, value in self.owner.items() if key != "token"}
        record.update(finished=_now(), published=self.published)
        if self.failures:
            record.update(state="failed", reason="; ".join(self.failures))
        else:
            record["state"] = "complete"
        _write_record(self.data_dir, self.snapshot_id, record)


LEFTOVER_PREFIXES = (".tmp-", ".old-")
"""What an interrupted atomic write leaves beside its artifact (``assets.storage.atomic_path``)."""


def sweep_leftovers(data_dir: Path | str, snapshot_id: str) -> int:
    """Remove the half-written temp files and retired copies a killed build left under the snapshot's
    folder (only safe with the snapshot's lock held: nobody else is writing there); returns how many."""
    root = Path(data_dir) / "snapshots" / check_snapshot_id(snapshot_id)
    found = [p for p in root.rglob("*") if p.name.startswith(LEFTOVER_PREFIXES)] if root.is_dir() else []
    removed = 0
    for path in sorted(found, key=lambda p: len(p.parts)):  # outermost first; nested ones go with them
        if not path.exists():
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    return removed


@contextlib.contextmanager
def building(
    data_dir: Path | str, snapshot_id: str, owner: dict[str, Any] | None = None
) -> Iterator[BuildSession]:
    """Hold ``snapshot_id``'s lock (or raise :class:`SnapshotBusy`) and keep its record: ``building`` now,
    ``complete`` or ``failed`` at the end (an exception is a failure). A build that fails before it
    publishes any asset changed nothing: the snapshot keeps its previous record (none for a snapshot that
    has no knowledge source). A killed earlier build's leftovers are swept first (:func:`sweep_leftovers`).
    """
    owner = owner or new_owner()
    with BuildLock(data_dir, snapshot_id).acquire(owner):
        previous = read_record(data_dir, snapshot_id)
        if previous is not None and previous.get("state") == "building":  # an interrupted build's record
            previous = {**previous, "state": "failed", "reason": "an earlier build was interrupted"}
        session = BuildSession(Path(data_dir), snapshot_id, owner, previous)
        swept = sweep_leftovers(data_dir, snapshot_id)
        if swept:
            owner = {**owner, "swept_leftovers": swept}  # recorded with the build
            session.owner = owner
        record = {key: value for key, value in owner.items() if key != "token"}
        _write_record(data_dir, snapshot_id, {**record, "state": "building"})
        try:
            yield session
        except BaseException as exc:
            session._finish(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            raise
        session._finish()
