"""Reusable benchmark helpers: the source excerpt, process measurement, HTTP load, peer trees (replicated
multistream dumps: :mod:`benchmarks.replication`; the generated Wikipedia: :mod:`support.generator`).

Scratch and results folders and progress messages: :mod:`support.workspace` (re-exported here).
"""

from __future__ import annotations

import contextlib
import cProfile
import http.client
import importlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

import psutil

from assets.files import sha256_of
from assets.indexes import cpu_model
from support.real_data import real_file
from support.workspace import REPO_ROOT, RESULTS_DIR, WORK_DIR


def code_fingerprint(paths: Sequence[Path]) -> dict[str, str]:
    """Short sha256 of each source file (a folder: each ``.py`` under it), so results name the code they
    measured."""
    files = [f for p in paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    return {str(f.relative_to(REPO_ROOT)): sha256_of(f)[:12] for f in sorted(files)}


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_bytes": psutil.virtual_memory().total,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


# ------------------------------------------------------------------------------------- source excerpt
def locate_excerpt() -> Path:
    """The real enwiki excerpt (206 pages) the repository carries (``tests/data``)."""
    from support.real_data import excerpt_dump

    return excerpt_dump()


# ------------------------------------------------------------------------------------- measurement
@dataclass(slots=True)
class ProcessRun:
    """Wall time, CPU and memory of one subprocess (and its descendants)."""

    command: list[str]
    returncode: int
    started_epoch: float  # time.time() just before the process was started
    wall_seconds: float
    user_seconds: float  # CPU of the process and its reaped descendants (from wait4)
    system_seconds: float
    cpu_seconds_main: float  # polled user+system CPU of the process itself (last sample)
    cpu_seconds_descendants: float  # polled, summed over descendants (last sample of each)
    cpu_seconds_max_process: float  # polled, the busiest single process (main or a descendant)
    peak_rss_main: int  # bytes, highest polled RSS of the process itself
    peak_rss_tree: int  # bytes, highest polled sum of RSS over the process and all its descendants
    max_rss_single: int  # bytes, kernel's ru_maxrss: largest RSS of any single process in the tree
    load_average_before: float
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, main rss, tree rss)
    stdout: str = ""
    stderr: str = ""

    @property
    def cpu_utilisation(self) -> float:
        """Average number of busy cores."""
        return (self.user_seconds + self.system_seconds) / self.wall_seconds if self.wall_seconds else 0.0

    def peaks_between(self, start: float, stop: float) -> tuple[int, int]:
        """Highest (main, tree) RSS sampled between ``start`` and ``stop`` seconds after launch."""
        window = [(m, t) for s, m, t in self.samples if start <= s < stop]
        return (max((m for m, _ in window), default=0), max((t for _, t in window), default=0))

    def timeline(self, step: float = 1.0) -> list[list[float]]:
        """``[seconds, main MiB, tree MiB]`` about every ``step`` seconds (for plots)."""
        points, next_at = [], 0.0
        for s, m, t in self.samples:
            if s >= next_at:
                points.append([round(s, 1), round(m / 2**20), round(t / 2**20)])
                next_at = s + step
        return points

    def summary(self) -> dict[str, Any]:
        """JSON-ready measurements (long arguments such as ``-c`` code abbreviated)."""
        payload = {k: v for k, v in asdict(self).items() if k not in ("stdout", "stderr", "samples")}
        payload["command"] = [a if len(a) < 200 else a[:60] + "..." for a in self.command]
        payload["cpu_utilisation"] = round(self.cpu_utilisation, 2)
        payload["sample_count"] = len(self.samples)
        payload["rss_timeline_mib"] = self.timeline()
        return payload


def run_measured(
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    interval: float = 0.05,
    log_dir: Path | None = None,
) -> ProcessRun:
    """Run ``command``, polling RSS and CPU of it and its descendants every ``interval`` seconds.

    stdout/stderr go to files (no pipe can fill up while polling) and are returned as text.
    """
    log_dir = log_dir or WORK_DIR / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    out_path, err_path = log_dir / f"{tag}.out", log_dir / f"{tag}.err"
    load = os.getloadavg()[0]
    samples: list[tuple[float, int, int]] = []
    cpu_main = 0.0
    cpu_children: dict[int, float] = {}
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started_epoch = time.time()
        started = time.perf_counter()
        proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=out, stderr=err)
        handle = psutil.Process(proc.pid)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter() - started
            try:
                with handle.oneshot():
                    main = handle.memory_info().rss
                    times = handle.cpu_times()
                    cpu_main = times.user + times.system
                tree = main
                for child in handle.children(recursive=True):
                    with contextlib.suppress(psutil.Error), child.oneshot():
                        tree += child.memory_info().rss
                        times = child.cpu_times()
                        cpu_children[child.pid] = times.user + times.system
            except psutil.Error:  # exited (zombie) between wait4 and the sample
                main = tree = 0
            samples.append((now, main, tree))
            time.sleep(interval)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: Popen must not wait again
    run = ProcessRun(
        command=list(command),
        returncode=proc.returncode,
        started_epoch=started_epoch,
        wall_seconds=round(wall, 3),
        user_seconds=round(usage.ru_utime, 2),
        system_seconds=round(usage.ru_stime, 2),
        cpu_seconds_main=round(cpu_main, 2),
        cpu_seconds_descendants=round(sum(cpu_children.values()), 2),
        cpu_seconds_max_process=round(max([cpu_main, *cpu_children.values()]), 2),
        peak_rss_main=max((m for _, m, _ in samples), default=0),
        peak_rss_tree=max((t for _, _, t in samples), default=0),
        max_rss_single=usage.ru_maxrss * 1024,
        load_average_before=round(load, 2),
        samples=samples,
        stdout=out_path.read_text(errors="replace"),
        stderr=err_path.read_text(errors="replace"),
    )
    out_path.unlink()
    err_path.unlink()
    return run


def run_measured_json(
    command: Sequence[str], *, env: dict[str, str] | None = None, interval: float = 0.2
) -> tuple[Any, dict[str, Any]]:
    """``command`` run by :func:`run_measured`: (the JSON of its stdout or of its last line, its wall, CPU
    seconds and peak RSS of the process tree); a failure exits with its stderr."""
    run = run_measured(command, env=env, interval=interval)
    if run.returncode != 0:
        raise SystemExit(
            f"{' '.join(map(str, command[:4]))} failed ({run.returncode}):\n{run.stderr[-4000:]}"
        )
    figures = {
        "wall_s": run.wall_seconds,
        "cpu_s": round(run.user_seconds + run.system_seconds, 1),
        "peak_rss_bytes": run.peak_rss_tree,
    }
    text = run.stdout.strip()
    try:  # kiltpipe prints its summary as indented JSON; a child script as one line after its log
        return json.loads(text), figures
    except ValueError:
        return json.loads(text.splitlines()[-1]), figures


def mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Plain-text table, first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def repo_path(path: Path | str) -> str:
    """``path`` relative to the repository when it is inside it (as results quote paths), else absolute."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def write_results(name: str, payload: dict[str, Any]) -> Path:
    """``benchmarks/results/<name>.json`` (quoted by the README)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return path


# ------------------------------------------------------------------------------------- profiling
def profiled_initializer(profile_dir: str, module: str, attribute: str, *args: Any) -> None:
    """Pool initializer that profiles a spawned worker, then runs the real initializer.

    Use ``functools.partial(profiled_initializer, dir, "pkg.mod", "_init_worker")`` in place of the
    real one; each worker writes ``worker-<pid>.pstats`` when the pool shuts it down.
    """
    profiler = cProfile.Profile()  # wall timer: a CPU timer's syscall per event would dominate here
    target = Path(profile_dir) / f"worker-{os.getpid()}.pstats"

    def dump() -> None:
        profiler.disable()
        profiler.dump_stats(target)

    Finalize(None, dump, exitpriority=100)
    profiler.enable()
    getattr(importlib.import_module(module), attribute)(*args)


# ------------------------------------------------------------------------------------ queries, servers
NQ_TOPICS = real_file("original", "dpr_topics", "topics.dpr.nq.dev.txt")
"""Real NQ dev questions (DPR's topics file, shipped in tests/data)."""


def nq_questions(limit: int | None) -> list[str]:
    """The first ``limit`` NQ dev questions (all with None)."""
    questions = [
        line.split("\t", 1)[0] for line in NQ_TOPICS.read_text(encoding="utf-8").splitlines() if line
    ]
    return questions[:limit] if limit else questions


def start_server(command: list[str], **popen: Any) -> tuple[subprocess.Popen, int, float]:
    """A search server (``kiltpipe serve --port 0`` or a peer printing the same line) in its own process
    group (``popen``: ``cwd``, ``env``): the process, its port and the seconds until it said it serves.

    SIGTERM stops it as it stops a server a user starts: a benchmark started by a launcher that ignores
    SIGTERM (a background job of some sandboxes; the ignore is inherited across ``exec``) passes the
    default on to its servers, or a peer without a handler of its own would wait out the stop's timeout
    (measured: 30 s a peer in the test suite here)."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    started = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True, **popen)
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/search", line)
        if found:
            threading.Thread(target=process.stderr.read, daemon=True).start()  # keep draining
            return process, int(found.group(1)), time.perf_counter() - started
    raise SystemExit(f"the server exited with {process.wait()} before serving")


PEER_PREAMBLE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("peer_server", sys.argv[1])
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)
from assets import params
try:
    from assets.indexes.settings import IndexSettings
    from assets.indexes.retriever import Retriever
except ImportError:  # a tree of before the indexes became packages (the peer's own, as a worktree)
    from assets.indexes.retrieval import IndexSettings, Retriever
from assets.storage import resolve_snapshot
retriever = Retriever(resolve_snapshot(params.data_dir(), None), IndexSettings.from_params())
"""
"""The start of a peer server script: ``peer`` (the server module of another commit, the script's first
argument) and ``retriever`` over the newest snapshot of the data dir."""


def tree_env(tree: Path, data_dir: Path | None = None) -> dict[str, str]:
    """The environment that runs the project as ``tree`` holds it (``PYTHONPATH``) with that tree's own
    params.yaml (an older tree refuses keys added since), over ``data_dir`` when given."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KILT_PARAMS": str(Path(tree) / "params.yaml")}
    return env | ({"KILT_DATA_DIR": str(Path(data_dir).resolve())} if data_dir is not None else {})


@contextlib.contextmanager
def peer_worktree(commit: str) -> Iterator[Path]:
    """This repository's whole tree at ``commit``, checked out into a temporary git worktree (removed
    afterwards): a peer that runs as the project ran then, on this venv (``PYTHONPATH`` = the tree)."""
    folder = Path(tempfile.mkdtemp(prefix="kilt-peer-"))
    tree = folder / "tree"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), commit],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    try:
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def module_at_commit(commit: str, path: str, folder: Path) -> Path:
    """The file ``path`` of this repository as committed at ``commit``, written into ``folder``."""
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = folder / Path(path).name
    module.write_text(source)
    return module


def client(
    port: int, index: str, questions: list[str], latencies: list[float], route: str = "search"
) -> None:
    """One keep-alive connection sending ``questions`` as ``GET /search`` (k=10, with text) or, with
    ``route`` ``answer``, ``GET /answer`` (the answerer's defaults); each latency appended to
    ``latencies``; a status other than 200 is an error."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for question in questions:
        asked = {"q": question, "index": index, **({"k": 10} if route == "search" else {})}
        query = urllib.parse.urlencode(asked)
        started = time.perf_counter()
        connection.request("GET", f"/{route}?{query}")
        response = connection.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{index}: HTTP {response.status}: {body[:200]!r}")
    connection.close()


def load_test(
    port: int, index: str, questions: list[str], clients: int, requests: int, route: str = "search"
) -> dict[str, Any]:
    """``requests`` questions spread over ``clients`` concurrent connections (``route``: ``search`` or
    ``answer``): p50/p99/mean ms, queries/s."""
    per_client = [questions[i::clients][: max(1, requests // clients)] for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    threads = [
        threading.Thread(target=client, args=(port, index, per_client[i], latencies[i], route))
        for i in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    import numpy as np  # only here: common.py stays light for every script

    values = np.array([v for chunk in latencies for v in chunk]) * 1000
    return {
        "index": index,
        "clients": clients,
        "requests": int(values.size),
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p99_ms": round(float(np.percentile(values, 99)), 1),
        "mean_ms": round(float(values.mean()), 1),
        "queries_per_second": round(values.size / wall, 1),
    }


def pyserini_doc_lookup(index_dir: Path) -> Callable[[str], str | None]:
    """The peer of a passage lookup by id: pyserini's own ``LuceneSearcher(index_dir).doc(id).raw()``, as a
    user of its prebuilt indexes fetches a passage."""
    from assets.indexes.bm25 import configure_jnius, import_pyserini

    configure_jnius()
    searcher = import_pyserini("pyserini.search.lucene").LuceneSearcher(str(index_dir))

    def doc(passage_id: str) -> str | None:
        found = searcher.doc(passage_id)
        return found.raw() if found is not None else None

    return doc


def lookup_latencies(call: Callable[[Any], Any], keys: Sequence[Any]) -> dict[str, float]:
    """Each key's lookup timed on its own (an empty answer is an error: every key exists): p50, p99, max
    and mean in ms, and lookups per second of lookup time."""
    import numpy as np

    values = np.empty(len(keys))
    for i, key in enumerate(keys):
        started = time.perf_counter()
        found = call(key)
        values[i] = time.perf_counter() - started
        if not found:
            raise RuntimeError(f"lookup of {key!r} found nothing")
    ms = values * 1000
    return {
        "lookups": len(keys),
        "p50_ms": round(float(np.percentile(ms, 50)), 4),
        "p99_ms": round(float(np.percentile(ms, 99)), 4),
        "max_ms": round(float(ms.max()), 4),
        "mean_ms": round(float(ms.mean()), 4),
        "per_s": round(len(keys) / float(values.sum()), 1),
    }
