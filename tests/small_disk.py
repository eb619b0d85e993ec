"""A command run on a small filesystem: a tmpfs of a given size mounted over a folder in a mount namespace
of its own (``unshare``: as root directly, otherwise as the root of a new user namespace), so a test fills
a real disk without touching the machine's and without being root. Nothing is mounted outside the
command's namespace; the mount, and what was written there, go away with the command."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SmallDiskRun:
    returncode: int
    stdout: str
    stderr: str
    left: list[str]
    """What the command left on the small filesystem (paths relative to it, sorted)."""
    used_bytes: int
    """Bytes in use on it when the command ended."""


def _namespace_command() -> list[str]:
    """``unshare`` with a mount namespace this process may create: as root directly, else (or when root may
    not) as the root of a new user namespace."""
    tries = [["unshare", "--user", "--map-root-user", "--mount"]]
    if os.geteuid() == 0:
        tries.insert(0, ["unshare", "--mount"])
    for command in tries:
        if subprocess.run([*command, "true"], capture_output=True, check=False).returncode == 0:
            return command
    raise AssertionError(
        "cannot create a mount namespace (unshare --mount, or --user --map-root-user --mount): the full-disk "
        "tests need one for their small tmpfs"
    )


def run_on_small_disk(
    folder: Path, size_bytes: int, command: Sequence[str], *, env: dict[str, str], timeout: float = 600
) -> SmallDiskRun:
    """Run ``command`` with a ``size_bytes`` tmpfs over ``folder`` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    report = folder.parent / f".{folder.name}-after.json"
    unshare = _namespace_command()
    where = shlex.quote(str(folder))
    listing = (
        "import json, os, sys; root = sys.argv[1]; "
        "left = sorted(os.path.relpath(os.path.join(d, n), root) "
        "for d, ds, fs in os.walk(root) for n in ds + fs); "
        "s = os.statvfs(root); "
        "json.dump({'left': left, 'used': (s.f_blocks - s.f_bfree) * s.f_frsize}, open(sys.argv[2], 'w'))"
    )
    script = (
        f"mount -t tmpfs -o size={size_bytes} tmpfs {where} || exit 97; "
        f"{' '.join(shlex.quote(part) for part in command)}; status=$?; "
        f"{shlex.quote(sys.executable)} -c {shlex.quote(listing)} {where} {shlex.quote(str(report))}; "
        "exit $status"
    )
    done = subprocess.run(
        [*unshare, "sh", "-c", script], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode != 97, f"cannot mount a tmpfs in a new mount namespace: {done.stderr}"
    after = json.loads(report.read_text())
    return SmallDiskRun(done.returncode, done.stdout, done.stderr, after["left"], after["used"])
