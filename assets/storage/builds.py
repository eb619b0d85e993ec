"""Who is building a snapshot, where the build writes, and how its result replaces what readers see.

A snapshot has one *published* version, ``<data_dir>/snapshots/<id>/``, which only readers open. A build
never writes there: it works in ``snapshots/.staging/<id>/`` (a hard-linked copy of the published version,
so a build of one asset costs the disk of what it changes) and, when its steps and blocking checks pass,
swaps that folder with the published one in one ``renameat2(RENAME_EXCHANGE)`` call. Readers see the old
version until then and the new one after, never neither; a reader holding files open keeps reading the
version it opened. Three files per snapshot under ``<data_dir>/builds/``:

* ``<id>.lock``: an exclusive ``flock`` held by the process that runs a build (``kiltpipe build``, the run
  worker of a run launched from the UI, the landing sensor or the schedule, ``kiltpipe map``) for the whole
  run. A second build of the same snapshot fails at once with :class:`SnapshotBusy` naming the holder (pid,
  host, command, start time). The kernel drops the lock when its process dies, ``kill -9`` included.
* ``<id>.building.json``: the build under way (who, since when). Left behind with its staging folder by a
  killed build: the next build resumes from that folder.
* ``<id>.json``: the record of the published version: ``complete`` or ``failed`` (with the failed steps
  and checks), its ``version`` and what its last build published. A published snapshot without a record
  (pulled with DVC, built before records existed) counts as complete.

A build that fails leaves the published version as it was, unless there is no complete one: a first build
whose checks failed is published as ``failed`` so that it can be inspected (never the default snapshot).

Only complete snapshots become the default "newest" snapshot of lookups (:func:`assets.storage.
resolve_snapshot`); the others are reported with the reason.

Pure module: no Dagster import.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import logging
import os
import shutil
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from assets.disk_space import DISK_FULL, exception_disk_full_line
from assets.files import write_bytes_atomic, write_json_atomic
from assets.snapshot_ids import check_snapshot_id

log = logging.getLogger(__name__)

BUILDS_DIR = "builds"
WORK_DIR = ".work"
"""Under ``snapshots/``: scratch folders of build steps (``assets.storage.work_dir``)."""
STAGING_DIR = ".staging"
"""Under ``snapshots/``: one working folder per snapshot being built (not a valid snapshot id)."""
LOCK_TAG = ".dagster/kilt_build_lock"  # under the prefix whose tags the Dagster UI does not show
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


def building_file(data_dir: Path | str, snapshot_id: str) -> Path:
    """The record of the build under way (or of the killed build whose staging folder is left)."""
    return builds_dir(data_dir) / f"{check_snapshot_id(snapshot_id)}.building.json"


def dump_registry_file(data_dir: Path | str, snapshot_id: str) -> Path:
    """``<data_dir>/dumps/<snapshot_id>.json``: the dump files a snapshot's published knowledge source was
    built from (a build that publishes nothing leaves it as it was: :func:`building`)."""
    return Path(data_dir) / "dumps" / f"{check_snapshot_id(snapshot_id)}.json"


def published_root(data_dir: Path | str, snapshot_id: str) -> Path:
    """``snapshots/<id>``: the version readers open."""
    return Path(data_dir) / "snapshots" / check_snapshot_id(snapshot_id)


def staging_root(data_dir: Path | str, snapshot_id: str) -> Path:
    """``snapshots/.staging/<id>``: where a build of the snapshot writes, until it is swapped in."""
    return Path(data_dir) / "snapshots" / STAGING_DIR / check_snapshot_id(snapshot_id)


def published_path(path: Path | str) -> Path:
    """Where ``path``, written in a build's staging folder (``snapshots/.staging/<id>/...``), lives once the
    build publishes (``snapshots/<id>/...``); any other path as it is. What asset metadata records: the
    staging folder is gone after the build."""
    path = Path(path)
    parts = path.parts
    for i in range(len(parts) - 2):
        if parts[i] == "snapshots" and parts[i + 1] == STAGING_DIR:
            return Path(*parts[: i + 1], *parts[i + 2 :])
    return path


def in_data_dir(path: Path | str) -> Path | None:
    """A snapshot artifact's path relative to its data dir (``snapshots/<id>/...``, published form), which
    stays true when the data dir moves; None for a path outside every ``snapshots`` folder."""
    parts = published_path(path).parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "snapshots" and i + 1 < len(parts):
            return Path(*parts[i:])
    return None


def is_published(data_dir: Path | str, snapshot_id: str) -> bool:
    """Whether the snapshot has a published knowledge source (a manifest readers can open)."""
    return (published_root(data_dir, snapshot_id) / "knowledge_source" / "manifest.json").is_file()


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return _parse_owner(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


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
                if self._still_the_lock_file(handle):
                    break
                handle.close()  # its holder removed the file as it released it: lock the path's new file
                self.path.parent.mkdir(parents=True, exist_ok=True)
                handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115
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

    def _still_the_lock_file(self, handle: Any) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            return False

    def release(self, remove: bool = False) -> None:
        """Unlock; with ``remove`` (nothing of the snapshot is left) the lock file goes too, removed while
        still locked (a process waiting on it sees that and locks the path's new file)."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.seek(0)
                self._handle.truncate()
                self._handle.flush()
            if remove:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
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
    """What readers of a snapshot see: ``complete``, ``failed``, ``building`` (a first build under way) or
    ``interrupted`` (a first build that was killed); ``rebuild`` describes a build of a published snapshot
    that is under way or that failed or was killed (the published version stays what readers see)."""

    snapshot_id: str
    state: State
    reason: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    rebuild: str = ""

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
    write_json_atomic(record_file(data_dir, snapshot_id), record)


def _without_token(owner: dict[str, Any]) -> dict[str, Any]:
    """What a record keeps of a lock's owner (the token is the lock's alone)."""
    return {key: value for key, value in owner.items() if key != "token"}


def _killed(build: dict[str, Any]) -> str:
    return (
        f"its build by pid {build.get('pid')} on {build.get('host')} (started {build.get('started')}) "
        "stopped before it finished (killed?); build it again"
    )


def build_state(data_dir: Path | str, snapshot_id: str) -> BuildState:
    """The state readers see of ``snapshot_id`` (see the module docstring)."""
    record = read_record(data_dir, snapshot_id)
    underway = _read_json(building_file(data_dir, snapshot_id))
    holder = BuildLock(data_dir, snapshot_id).holder() if underway is not None else None
    rebuild = ""
    if underway is not None:
        rebuild = f"being rebuilt by {describe_owner(holder)}" if holder is not None else _killed(underway)
    if not is_published(data_dir, snapshot_id):
        if underway is None:
            return BuildState(snapshot_id, "failed", "it has no published knowledge source", record or {})
        if holder is not None:
            return BuildState(snapshot_id, "building", f"it is being built by {describe_owner(holder)}")
        return BuildState(snapshot_id, "interrupted", _killed(underway), underway)
    if record is not None and (last := record.get("last_build")) and not rebuild:
        rebuild = (
            f"its last rebuild ({last.get('finished')}) failed and was not published: {last.get('reason')}"
        )
    if record is None or record.get("state") == "complete":
        return BuildState(snapshot_id, "complete", record=record or {}, rebuild=rebuild)
    return BuildState(snapshot_id, "failed", f"its build failed: {record.get('reason')}", record, rebuild)


RENAME_EXCHANGE = 2  # linux/fs.h


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two paths in one step (``renameat2(RENAME_EXCHANGE)``); False where the kernel or filesystem
    cannot (the caller then renames twice)."""
    libc_name = ctypes.util.find_library("c")
    if sys.platform != "linux" or libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"cannot swap {first} and {second}: {os.strerror(code)}")


def _remove_tree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def linked_copy(source: Path, target: Path) -> int:
    """``target`` as a copy of the folder ``source`` whose files are hard links (copied where the
    filesystem has none); returns the number of files. Safe because no artifact is changed in place:
    every writer replaces a file or folder by renaming a new one over it."""
    count = 0
    for folder, dirs, files in os.walk(source):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        dirs[:] = [d for d in dirs if not d.startswith(LEFTOVER_PREFIXES)]
        for name in files:
            if name.startswith(LEFTOVER_PREFIXES):
                continue
            try:
                os.link(Path(folder) / name, target / relative / name)
            except OSError:
                shutil.copy2(Path(folder) / name, target / relative / name)
            count += 1
    return count


@dataclass(slots=True)
class BuildSession:
    """One build of a snapshot, holding its lock (:func:`building`): where it writes (``root``), what
    failed and what was published."""

    data_dir: Path
    snapshot_id: str
    owner: dict[str, Any]
    previous: dict[str, Any] | None
    root: Path
    failures: list[str] = field(default_factory=list)
    published: list[str] = field(default_factory=list)
    disk_full: str | None = None
    """Why the build ran out of space, when it did: its staging folder is then removed, nothing published."""
    swapped_in: bool = False
    """Whether the build's staging folder became the published version."""
    _finishers: list[Callable[[], None]] = field(default_factory=list)

    def on_finish(self, action: Callable[[], None]) -> None:
        """Run ``action`` when the build ends, after publishing (or not), while the lock is still held."""
        self._finishers.append(action)

    def failed(self, what: str) -> None:
        """Note a failed step or check (the record's reason lists them in order)."""
        if what not in self.failures:
            self.failures.append(what)
        if f"{DISK_FULL}:" in what and self.disk_full is None:
            self.disk_full = what[what.index(f"{DISK_FULL}:") :]

    def materialized(self, asset: str) -> None:
        """Note an asset this build wrote (every asset writes atomically, then materializes)."""
        if asset not in self.published:
            self.published.append(asset)

    def _finish(self, extra_failure: str | None = None) -> None:
        if extra_failure:
            self.failed(extra_failure)
        try:
            self._publish_or_keep()
        finally:
            building_file(self.data_dir, self.snapshot_id).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the staging folder's parent, when no other build uses it
                self.root.parent.rmdir()
            for action in self._finishers:
                action()

    def _publish_or_keep(self) -> None:
        has_knowledge_source = (self.root / "knowledge_source" / "manifest.json").is_file()
        previous_complete = (
            is_published(self.data_dir, self.snapshot_id)
            and build_state(self.data_dir, self.snapshot_id).state == "complete"
        )
        if self.disk_full is not None:  # half-written files on a full disk: freed, never published
            _remove_tree(self.root)
            if previous_complete:
                last = {"finished": _now(), "reason": "; ".join(self.failures), "pid": os.getpid()}
                _write_record(
                    self.data_dir,
                    self.snapshot_id,
                    {"state": "complete", **(self.previous or {}), "last_build": last},
                )
            log.warning(
                f"snapshot {self.snapshot_id}: {self.disk_full}; its staging folder {self.root} was removed "
                "and nothing was published"
            )
            return
        if not has_knowledge_source or (self.failures and not self.published):
            _remove_tree(self.root)  # nothing new: the published version stays as it was
            return
        record = _without_token(self.owner)
        record.update(finished=_now(), published=self.published, version=self.owner["token"][:16])
        if self.failures:
            record.update(state="failed", reason="; ".join(self.failures))
            if previous_complete:  # readers keep the complete version; this build's work is kept to resume
                last = {k: record[k] for k in ("finished", "reason", "pid", "host", "command")}
                _write_record(
                    self.data_dir,
                    self.snapshot_id,
                    {"state": "complete", **(self.previous or {}), "last_build": last},
                )
                log.warning(
                    f"snapshot {self.snapshot_id}: the rebuild failed ({record['reason']}); the published "
                    f"version stays, and the next build resumes from {self.root}"
                )
                return
        else:
            record["state"] = "complete"
        self._swap_in()
        _write_record(self.data_dir, self.snapshot_id, record)

    def _swap_in(self) -> None:
        """Put the staging folder where readers look, in one step when the filesystem can."""
        self.swapped_in = True
        published = published_root(self.data_dir, self.snapshot_id)
        if not published.exists():
            os.rename(self.root, published)
            return
        if exchange_paths(self.root, published):
            _remove_tree(self.root)  # now the previous version; readers holding its files keep them
            return
        retired = published.parent / f".old-{published.name}-{uuid.uuid4().hex[:12]}"
        os.rename(published, retired)  # no exchange on this filesystem: a moment with neither
        os.rename(self.root, published)
        _remove_tree(retired)


LEFTOVER_PREFIXES = (".tmp-", ".old-")
"""What an interrupted atomic write leaves beside its artifact (``assets.files.atomic_path``)."""


def sweep_leftovers(root: Path | str) -> int:
    """Remove the half-written temp files and retired copies a killed build left under ``root`` (a
    staging folder: only safe with the snapshot's lock held, when nobody else writes there); returns how
    many."""
    root = Path(root)
    found = [p for p in root.rglob("*") if p.name.startswith(LEFTOVER_PREFIXES)] if root.is_dir() else []
    removed = 0
    for path in sorted(found, key=lambda p: len(p.parts)):  # outermost first; nested ones go with them
        if not path.exists():
            continue
        _remove_tree(path)
        removed += 1
    return removed


def _prepare_staging(data_dir: Path, snapshot_id: str) -> tuple[Path, str]:
    """The staging folder of a build: a killed or failed build's, resumed; else a linked copy of the
    published version (or an empty folder for a first build)."""
    root = staging_root(data_dir, snapshot_id)
    if root.is_dir():
        swept = sweep_leftovers(root)
        return root, f"resumed the staging folder of an earlier build ({swept} leftovers swept)"
    published = published_root(data_dir, snapshot_id)
    temp = root.parent / f".tmp-{snapshot_id}-{uuid.uuid4().hex[:12]}"
    temp.parent.mkdir(parents=True, exist_ok=True)
    try:
        files = linked_copy(published, temp) if published.is_dir() else 0
        temp.mkdir(exist_ok=True)
        os.rename(temp, root)
    except BaseException:
        _remove_tree(temp)
        raise
    return root, f"staged a linked copy of the published version ({files} files)" if files else "first build"


def sweep_staging_leftovers(data_dir: Path | str) -> None:
    """Remove what killed builds left outside their staging folders, for snapshots whose lock is free:
    half-made staging copies, scratch folders (``snapshots/.work``) and retired versions."""
    base = Path(data_dir) / "snapshots"
    for leftover in [
        *base.glob(f"{STAGING_DIR}/.tmp-*"),
        *base.glob(f"{WORK_DIR}/.tmp-*"),
        *base.glob(".old-*"),
    ]:
        snapshot_id = leftover.name.split("-", 1)[1].rsplit("-", 1)[0]
        with contextlib.suppress(ValueError):
            if BuildLock(data_dir, snapshot_id).holder() is None:
                _remove_tree(leftover)


@contextlib.contextmanager
def building(
    data_dir: Path | str, snapshot_id: str, owner: dict[str, Any] | None = None
) -> Iterator[BuildSession]:
    """Hold ``snapshot_id``'s lock (or raise :class:`SnapshotBusy`, having touched nothing) and build in
    its staging folder (``session.root``); at the end, publish it (swap it in) when nothing failed, or keep
    the published version (see the module docstring). An exception is a failure."""
    data_dir = Path(data_dir)
    owner = owner or new_owner()
    lock = BuildLock(data_dir, snapshot_id).acquire(owner)
    try:
        sweep_staging_leftovers(data_dir)
        previous = read_record(data_dir, snapshot_id)
        registry = dump_registry_file(data_dir, snapshot_id)
        registered = registry.read_bytes() if registry.is_file() else None
        root, how = _prepare_staging(data_dir, snapshot_id)
        owner = {**owner, "staging": how}
        session = BuildSession(data_dir, snapshot_id, owner, previous, root)
        session.on_finish(lambda: _unless_swapped_in(session, registry, registered))
        write_json_atomic(building_file(data_dir, snapshot_id), _without_token(owner))
        try:
            yield session
        except BaseException as exc:
            full = exception_disk_full_line(exc, root)
            session._finish(full or (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__))
            raise
        session._finish()
    finally:
        lock.release(remove=_nothing_left(data_dir, snapshot_id))


def _unless_swapped_in(session: BuildSession, registry: Path, registered: bytes | None) -> None:
    """After a build that published nothing: the dump registry as it was before the build (it names the
    dump of the published knowledge source only); and no empty scratch folder after any build."""
    if not session.swapped_in:
        if registered is None:
            registry.unlink(missing_ok=True)
        elif not registry.is_file() or registry.read_bytes() != registered:
            write_bytes_atomic(registry, registered)
        with contextlib.suppress(OSError):
            registry.parent.rmdir()  # only when empty
    with contextlib.suppress(OSError):
        (session.data_dir / "snapshots" / WORK_DIR).rmdir()  # only when empty


def _nothing_left(data_dir: Path, snapshot_id: str) -> bool:
    """Whether a snapshot has nothing on disk once its build ended: no published version, no staging
    folder to resume from, no record (its lock file then goes too)."""
    return not (
        is_published(data_dir, snapshot_id)
        or staging_root(data_dir, snapshot_id).exists()
        or record_file(data_dir, snapshot_id).exists()
        or building_file(data_dir, snapshot_id).exists()
    )
