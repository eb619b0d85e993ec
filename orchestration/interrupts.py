"""Every process that runs this project's Dagster code can be stopped with SIGTERM.

A shell without job control starts ``cmd &`` with SIGINT ignored (so that a Ctrl-C meant for the script
spares its background jobs), and Dagster gives SIGTERM whatever SIGINT has (``setup_interrupt_handlers``,
called by its command lines and around every step): SIGINT ignored makes SIGTERM ignored too, in that
process and, across ``exec``, in every process it starts. Dagster ends the ``tail`` that mirrors each
step's output with SIGTERM and then waits 30 s for it, twice: on such a machine every step of a
``kiltpipe build &`` took a minute more, and no run worker or step could be terminated.

:func:`keep_sigterm_deliverable` gives SIGINT Python's own handler back (a KeyboardInterrupt, as in any
foreground process) and SIGTERM its default, once per process, when they arrive ignored. Importing
``orchestration`` calls it, so the ``kiltpipe`` command, the code server, run workers and step processes
(which all import this package) are covered. Pure module: no project import."""

from __future__ import annotations

import signal
import threading

__all__ = ["keep_sigterm_deliverable"]


def keep_sigterm_deliverable() -> list[str]:
    """Un-ignore SIGINT (Python's KeyboardInterrupt handler) and SIGTERM (the default: the process ends)
    where this process inherited them ignored; returns the names of the signals changed. Signal
    dispositions belong to the main thread: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return []
    changed = []
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        changed.append("SIGINT")
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        changed.append("SIGTERM")
    return changed
