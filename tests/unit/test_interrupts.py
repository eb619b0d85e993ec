"""A process started with SIGINT ignored (``kiltpipe build &`` from a script) can still end its children
with SIGTERM once Dagster has mapped SIGTERM onto SIGINT's handler (``orchestration/interrupts.py``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, signal, sys, time
    import orchestration  # what every kiltpipe, code server, run worker and step process imports
    from dagster._core.execution.compute_logs import execute_posix_tail
    from dagster._utils.interrupts import setup_interrupt_handlers

    setup_interrupt_handlers()  # what Dagster's command lines and step launches do
    started = time.monotonic()
    with execute_posix_tail(sys.argv[1], sys.stderr):  # a step's output mirror, ended with SIGTERM
        pass
    print(json.dumps({
        "mirror_seconds": time.monotonic() - started,
        "sigterm_ignored": signal.getsignal(signal.SIGTERM) is signal.SIG_IGN,
        "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
    }))
    """
)


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell without job control starts `cmd &`


def test_a_step_output_mirror_ends_at_once_in_a_process_started_with_sigint_ignored(tmp_path: Path) -> None:
    (tmp_path / "step.log").write_text("step output\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "step.log")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_ignoring_sigint,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not seen["sigterm_ignored"] and not seen["sigint_ignored"]
    # ignored, Dagster waits 30 s for its `tail` and 30 s more for the orphan watcher
    assert seen["mirror_seconds"] < 10, seen


def test_signals_set_on_purpose_are_left_alone() -> None:
    from orchestration.interrupts import keep_sigterm_deliverable

    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # the import of orchestration fixed it
    before = signal.getsignal(signal.SIGTERM)
    assert keep_sigterm_deliverable() == []
    assert signal.getsignal(signal.SIGTERM) is before
