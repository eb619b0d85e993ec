"""A Dagster home records one data dir's snapshots: the rule the CLI, the UI, the daemon and every run keep.

An instance's partitions and asset materializations name paths under one data dir; a build of another data
dir recorded in it would add partitions whose paths are not there, and its runs would look like the home's
own. So the home names its data dir in :data:`DATA_DIR_MARK`: the first build or run of any kind writes it
(``kiltpipe build``, a run launched from ``make ui``, a sensor's run), and a build or run of another data
dir is refused, naming both and how to give that data dir a home of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

__all__ = ["DATA_DIR_MARK", "claim_home", "instance_lock"]

DATA_DIR_MARK = "kiltpipe-data-dir"
"""The file in ``DAGSTER_HOME`` naming the data dir whose snapshots its instance records."""


@contextlib.contextmanager
def instance_lock(home: Path) -> Iterator[None]:
    """One process at a time creates the Dagster instance's storage, adds a partition or claims the home:
    two builds that start together on a fresh ``DAGSTER_HOME`` would otherwise both create its tables."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".kiltpipe-instance.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def claim_home(home: Path, data_dir: Path, how: str = "kiltpipe build ...") -> str | None:
    """Why ``data_dir``'s builds may not be recorded in the Dagster home ``home`` (None: they may; a home
    that names no data dir yet is claimed for it). ``how``: the command the advice shows."""
    data_dir = Path(data_dir).absolute()
    with instance_lock(home):
        mark = home / DATA_DIR_MARK
        recorded = mark.read_text(encoding="utf-8").strip() if mark.is_file() else None
        if recorded is None:
            mark.write_text(f"{data_dir}\n", encoding="utf-8")
            return None
    if Path(recorded).absolute() == data_dir:
        return None
    return (
        f"DAGSTER_HOME {home} records the snapshots of the data dir {recorded}, not of {data_dir}: give this "
        f"data dir a Dagster home of its own (DAGSTER_HOME={data_dir / '.dagster_home'} {how}), "
        f"or remove {home / DATA_DIR_MARK} to move this instance to it"
    )


def main() -> int:
    """``python -m orchestration.dagster_home``: claim ``$DAGSTER_HOME`` for params.yaml's data dir before
    the UI and the daemon start (``make ui``); exit 2 naming both when it records another one."""
    import os
    import sys

    from assets import params

    home = os.environ.get("DAGSTER_HOME")
    if not home:
        print("DAGSTER_HOME is not set", file=sys.stderr)
        return 2
    problem = claim_home(Path(home), params.data_dir(), "make ui")
    if problem:
        print(f"kiltpipe: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
