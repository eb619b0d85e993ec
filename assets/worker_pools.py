"""Worker process pools that die with the process that started them.

A ``ProcessPoolExecutor`` worker blocks on its call queue; when its parent is killed (``kill -9``, the OOM
killer, a cancelled Dagster step) nothing tells it, and it finishes its work or waits, sometimes for
minutes, holding memory and CPU. :func:`worker_pool` starts every worker with
``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, so the kernel kills it the moment its parent dies, plus a
watchdog thread polling ``getppid()`` (for other systems, and for a parent that died before the worker
asked to be told).

Workers are forked from multiprocessing's fork server, started once per process with the modules the
pools run (``preload``) imported: a worker starts in milliseconds instead of importing them again (about a
second of CPU each, four times per build with two pools of two). Each worker takes the environment its
pool's creator has when the pool starts (a spawned process would), dies with the fork server (the kernel's
parent-death signal; the fork server ends when the process that started it does) and with the pool's
creator (watched through a pidfd).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

__all__ = ["die_with_parent", "in_order", "worker_pool"]

_PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 1.0


def _exit_when_orphaned(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(WATCHDOG_SECONDS)


def die_with_parent(parent: int) -> None:
    """Pool initializer: end this worker when process ``parent`` (the one that started it) is gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watchdog below still applies
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True, name="orphan-watchdog").start()


def _exit_when_gone(pid: int) -> None:
    """End this process the moment process ``pid`` ends, watched through a pidfd (Linux 5.3+). Where there
    is none, the fork server, which ends with ``pid``, takes the worker with it (:func:`die_with_parent`)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        return

    def watch() -> None:
        select.select([handle], [], [])
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="creator-watchdog").start()


def _start_worker(
    creator: int, environ: dict[str, str], initializer: Callable[..., None] | None, initargs: tuple
) -> None:
    os.environ.clear()
    os.environ.update(environ)
    die_with_parent(os.getppid())  # the fork server
    _exit_when_gone(creator)
    if initializer is not None:
        initializer(*initargs)


_PRELOAD: set[str] = set()


def worker_pool(
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    preload: Sequence[str] = (),
) -> ProcessPoolExecutor:
    """``workers`` processes that end with this process, however it ends (each set up by
    ``initializer(*initargs)`` first, when given), forked from this process's fork server. ``preload``:
    the modules of the functions the pool runs, imported once by the fork server when it starts (a module
    named after it has started is imported by each worker instead)."""
    _PRELOAD.update(preload)
    context = get_context("forkserver")
    context.set_forkserver_preload(sorted(_PRELOAD))
    return ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), dict(os.environ), initializer, initargs),
    )


def in_order(
    function: Callable[..., Any],
    items: Iterable[Any],
    pool: ProcessPoolExecutor | None,
    window: int,
    *args: Any,
) -> Iterator[tuple[Any, Any]]:
    """``(item, function(item, *args))`` for every item, computed in the pool's worker processes when there is
    one (in this process otherwise), at most ``window`` items in flight so memory does not grow with the
    input; results come back in input order."""
    if pool is None:
        for item in items:
            yield item, function(item, *args)
        return
    in_flight: deque[tuple[Any, Future[Any]]] = deque()
    for item in items:
        in_flight.append((item, pool.submit(function, item, *args)))
        if len(in_flight) >= window:
            done, future = in_flight.popleft()
            yield done, future.result()
    while in_flight:
        done, future = in_flight.popleft()
        yield done, future.result()
