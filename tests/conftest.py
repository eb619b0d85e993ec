"""Shared fixtures: the real data of ``tests/data`` (``support.real_data``) and a built snapshot."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from assets.params import KnowledgeSourceParams, PassagesParams
from support.benchmark_smoke import SmokeQueue, SmokeRun, run_smoke
from support.real_data import excerpt_dump

REPO = Path(__file__).resolve().parents[1]

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""How the tests' JVMs (Anserini's, in process and in subprocesses) run: every one is short, so C1 code
and one GC thread cost a quarter less CPU than C2 and a parallel collector on two cores (what a JVM
computes is the same: the indexes stay byte for byte). A ``JAVA_TOOL_OPTIONS`` of your own is kept."""
os.environ.setdefault("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)

TEST_OPENMP_WAIT_POLICY = "PASSIVE"
"""How the tests' OpenMP threads (torch's, FAISS's) wait between parallel regions: asleep, not spinning.
The tests run two pytest workers and the demo build at once on two cores, each with its own OpenMP team;
spinning threads then burn the cores the others wait for (three MiniLM encoders at once, measured: 120
CPU-s and 46 s each spinning, 91 CPU-s and 31 s asleep). Set before anything imports torch; what a thread
computes is the same (vectors byte for byte). An ``OMP_WAIT_POLICY`` of your own is kept."""
os.environ.setdefault("OMP_WAIT_POLICY", TEST_OPENMP_WAIT_POLICY)


@pytest.fixture(scope="session")
def excerpt() -> Path:
    return excerpt_dump()


@pytest.fixture(scope="session")
def built_excerpt(tmp_path_factory: pytest.TempPathFactory, excerpt: Path):
    """The excerpt built once as snapshot enwiki-20160501 (2 worker processes, 3 shards)."""
    from assets.storage import SnapshotPaths
    from assets.wikipedia.pages import build_knowledge_source

    data_dir = tmp_path_factory.mktemp("data")
    report = build_knowledge_source(
        excerpt, data_dir, KnowledgeSourceParams(workers=2, rows_per_shard=40), progress=False
    )
    return SnapshotPaths(data_dir, report.snapshot_id), report


@pytest.fixture(scope="session")
def fast_encoder():
    """The fast backend (int8 ONNX Runtime) of the default model, exported once into the default cache
    (which the Dagster steps of the tests and the CLI share)."""
    from assets.indexes.dense.encoders import load_encoder

    return load_encoder("default", "onnx")


@pytest.fixture(autouse=True)
def _offline_embedded_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the embedded-corpus fetcher copy the excerpt of ``tests/data`` instead of calling pip (the pip
    path has its own test)."""
    monkeypatch.setenv("KILT_EMBEDDED_DUMP", str(excerpt_dump()))


@pytest.fixture(scope="session")
def built_store(built_excerpt):
    """Passages (kilt mode, N=100) and the provenance store on top of the built excerpt."""
    from assets.provenance_store import build_store
    from assets.wikipedia.passages import build_passages

    paths, _ = built_excerpt
    passages_report = build_passages(
        paths, PassagesParams(max_words=100, mode="kilt", workers=2), progress=False
    )
    build_store(paths)
    return paths, passages_report


@pytest.fixture
def kiltpipe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture):
    """``kiltpipe`` run in this process with its own Dagster home: ``run(*args) -> (exit code, stdout,
    stderr)``."""
    from orchestration.cli import main

    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def small_excerpt(tmp_path_factory: pytest.TempPathFactory, excerpt: Path) -> Path:
    """Eight real articles of the excerpt as ``enwiki-20160501-pages-articles.xml`` (builds in seconds)."""
    from support.dump_variants import read_xml, small_dump, write_dump

    folder = tmp_path_factory.mktemp("small")
    return write_dump(folder / "enwiki-20160501-pages-articles.xml", small_dump(read_xml(excerpt)))


@pytest.fixture(scope="session")
def tiny_excerpt(tmp_path_factory: pytest.TempPathFactory, excerpt: Path) -> Path:
    """Three real articles of the excerpt (54 passages) as ``enwiki-20160501-pages-articles.xml``: every
    asset, the encoder included, builds in seconds."""
    from support.dump_variants import TINY_TITLES, article_subset, read_xml, write_dump

    folder = tmp_path_factory.mktemp("tiny")
    return write_dump(
        folder / "enwiki-20160501-pages-articles.xml", article_subset(read_xml(excerpt), TINY_TITLES)
    )


@dataclass(frozen=True)
class DemoBuild:
    """What ``make demo`` builds: ``kiltpipe build`` of the embedded default (every asset, every check, the
    fp32 reference encoder) in its own process, with its own Dagster home and data dir."""

    root: Path
    data_dir: Path
    env: dict[str, str]
    summary: dict

    @property
    def paths(self):
        from assets.storage import SnapshotPaths

        return SnapshotPaths(self.data_dir, self.summary["snapshot_id"])

    def copy(self, target: Path) -> Path:
        """A private copy of the data dir to change (the shared build stays read-only); returns it."""
        shutil.copytree(self.data_dir, target, symlinks=True)
        return target


DEMO_FIXTURE = "demo_build"
_DEMO_WANTED = pytest.StashKey[bool]()
_SMOKES = pytest.StashKey[list[tuple[SmokeRun, bool]]]()


def _smoke_of(item: pytest.Item) -> SmokeRun | None:
    callspec = getattr(item, "callspec", None)
    smoke = callspec.params.get("smoke") if callspec is not None else None
    return smoke if isinstance(smoke, SmokeRun) else None


@pytest.hookimpl(trylast=True)  # after ``-k``/``-m`` deselected theirs: only the runs to be tested are queued
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with a test that reads the demo build run last (module order kept, modules never split),
    so the build, started in the background when the session starts, overlaps the other tests; the smoke
    runs of benchmark scripts come last of all, when most are done (in one process they are done in the
    background once the build has ended, :func:`smoke_runs`; under pytest-xdist each is a unit of work,
    :func:`pytest_xdist_make_scheduler`)."""
    readers = {item.module.__name__ for item in items if DEMO_FIXTURE in getattr(item, "fixturenames", ())}
    for item in items:
        if _smoke_of(item) is not None:  # what the scheduler of pytest-xdist sends alone (by name)
            assert item.originalname in SMOKE_TESTS, f"{item.nodeid}: a smoke test not in SMOKE_TESTS"
    # stable: order within each group kept
    items.sort(key=lambda item: (_smoke_of(item) is not None, item.module.__name__ in readers))
    config.stash[_DEMO_WANTED] = bool(readers)
    smokes = [(smoke, DEMO_FIXTURE in item.fixturenames) for item in items if (smoke := _smoke_of(item))]
    config.stash[_SMOKES] = sorted(smokes, key=lambda pair: pair[1])  # those without the demo first


SMOKE_TESTS = frozenset(
    {"test_a_benchmark_runs_on_its_smallest_input", "test_a_benchmark_of_the_built_snapshot_runs"}
)
"""The tests that each wait for one smoke run: under pytest-xdist each is a unit of work of its own."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``make test``'s pytest-xdist scheduling: whole modules (their module-scoped builds made once), in
    the collection's order (``--no-loadscope-reorder``: the demo's readers, then the smoke runs, last), and
    each smoke run alone, so that both workers share them at the end instead of one worker doing them all."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndSmokeRuns(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            name = nodeid.rsplit("::", 1)[-1].split("[", 1)[0]
            return nodeid if name in SMOKE_TESTS else super()._split_scope(nodeid)

    return ModulesAndSmokeRuns(config, log)


class _DemoProcess:
    """``kiltpipe fetch-default && kiltpipe build --quiet`` of the embedded default in its own process
    group, with its own Dagster home and data dir; :meth:`result` waits for it.

    Under pytest-xdist the workers share one build: the first worker to claim ``root`` starts it, the
    others wait for the exit status it leaves in ``root/rc``."""

    def __init__(self, root: Path, excerpt: Path, niceness: int) -> None:
        self.root, self.data_dir = root, root / "data"
        home = root / "dagster_home"
        self.env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "KILT_DATA_DIR": str(self.data_dir),
            "KILT_PARAMS": str(REPO / "params.yaml"),
            "KILT_EMBEDDED_DUMP": str(excerpt),
            # one float thread: the build shares the cores with the tests that run meanwhile (threads that
            # wait on each other's barriers there only burn CPU); its float outputs are checked by
            # tolerance like any other CPU's, its other outputs byte for byte
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        self.stdout, self.stderr, self.rc = root / "build.json", root / "build.log", root / "rc"
        self.process: subprocess.Popen | None = None
        self._result: DemoBuild | None = None
        try:
            os.close(os.open(root / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # another worker builds it
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        kiltpipe = shlex.quote(str(Path(sys.executable).parent / "kiltpipe"))
        build = f"{kiltpipe} fetch-default >&2 && {kiltpipe} build --quiet"
        rc = shlex.quote(str(self.rc))
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(
                ["bash", "-c", f"{build}; echo $? > {rc}.part && mv {rc}.part {rc}"],
                cwd=root,
                env=self.env,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
            )

    def wait(self) -> int:
        """The build's exit status, once it has ended."""
        if self.process is not None:
            self.process.wait()
        deadline = time.monotonic() + DEMO_WAIT_SECONDS
        while not self.rc.is_file():
            assert time.monotonic() < deadline, f"the demo build in {self.root} left no exit status"
            time.sleep(1)
        return int(self.rc.read_text())

    def result(self) -> DemoBuild:
        if self._result is None:
            code = self.wait()
            log = self.stderr.read_text(errors="replace")
            assert code == 0, f"the demo build (fetch-default && build) exited {code}:\n{log[-5000:]}"
            summary = json.loads(self.stdout.read_text())
            self._result = DemoBuild(self.root, self.data_dir, self.env, summary)
        return self._result

    def stop(self, *, shared: bool) -> None:
        """End the build: killed when this process alone reads it, awaited when other workers may."""
        if self.process is None or self.process.poll() is not None:
            return
        if shared:
            self.process.wait()
        else:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


DEMO_WAIT_SECONDS = 3600
"""How long a worker waits for the demo build another worker runs."""
BACKGROUND_NICENESS = 10
"""How much lower the work done in the background (the demo build, the smoke runs) runs in the scheduler's
priority than the tests: it takes the core the tests leave idle, not the tests' own."""


def _xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.fixture(scope="session", autouse=True)
def _demo_build_in_background(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Start the demo build as the session starts, when a collected test reads it (under pytest-xdist, once
    for all workers, in the folder their base temporary folders share)."""
    if not request.config.stash.get(_DEMO_WANTED, False):
        yield None
        return
    shared = _xdist_worker(request.config)
    if shared:
        root = tmp_path_factory.getbasetemp().parent / "demo"
        root.mkdir(exist_ok=True)
    else:
        root = tmp_path_factory.mktemp("demo")
    # alone beside one test process it takes the idle core, niced; beside pytest-xdist's workers it takes
    # its share (niced, it would wait for them, and the demo's readers for it)
    process = _DemoProcess(root, excerpt_dump(), 0 if shared else BACKGROUND_NICENESS)
    try:
        yield process
    finally:
        process.stop(shared=shared)


def _demo_smoke(demo: _DemoProcess, smoke: SmokeRun, folder: Path) -> dict:
    """A smoke run over the demo build, once it is built; it must build nothing into the demo's data."""
    from assets.storage import list_snapshots

    build = demo.result()
    snapshots = list_snapshots(build.data_dir)
    # one float thread: the run shares the cores with the tests that run meanwhile
    written = run_smoke(
        smoke, folder, env={**build.env, "OMP_NUM_THREADS": "1"}, niceness=BACKGROUND_NICENESS
    )
    assert list_snapshots(build.data_dir) == snapshots, f"{smoke.script} built into the demo's data"
    return written


def _after_the_demo_build(demo: _DemoProcess | None, smoke: SmokeRun, folder: Path) -> dict:
    """A smoke run that needs no demo build, started once the build (when there is one) has ended."""
    if demo is not None:
        demo.wait()
    return run_smoke(smoke, folder, niceness=BACKGROUND_NICENESS)


@pytest.fixture(scope="session", autouse=True)
def smoke_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _demo_build_in_background
):
    """The collected smoke runs of benchmark scripts, queued as the session starts and done one after
    another in the background once the demo build (when one runs) has ended; each smoke test waits for its
    own (:class:`support.benchmark_smoke.SmokeQueue`)."""
    queue = SmokeQueue(tmp_path_factory.mktemp("smoke"))
    demo = _demo_build_in_background
    for smoke, reads_demo in request.config.stash.get(_SMOKES, []):
        # while the demo builds, it and the tests keep both cores busy: every run waits for its end
        queue.plan(smoke, partial(_demo_smoke if reads_demo else _after_the_demo_build, demo))
    if not _xdist_worker(request.config):  # a worker runs its own tests' runs only, when it reaches them
        queue.start_all()
    try:
        yield queue
    finally:
        queue.close()


@pytest.fixture(scope="session")
def demo_build(_demo_build_in_background: _DemoProcess | None, excerpt: Path) -> DemoBuild:
    """The embedded default built once per session, as ``make demo`` builds it (started in the
    background as the session starts); tests only read it (or :meth:`DemoBuild.copy` it)."""
    assert _demo_build_in_background is not None, "collection saw no reader of the demo build"
    return _demo_build_in_background.result()


WIKI, OLD, NEW = "enwiki", "20160501", "20160601"
"""The wiki and the two runs the dump-site tests publish (``support/dump_site.py``)."""


@pytest.fixture(scope="session")
def run_of_excerpt(tmp_path_factory: pytest.TempPathFactory, excerpt: Path) -> dict[str, bytes]:
    """A run's files made from the real excerpt (``support.dump_site.run_files``), made once per session."""
    from support.dump_site import run_files
    from support.dump_variants import read_xml

    return run_files(read_xml(excerpt), tmp_path_factory.mktemp("made"))


@pytest.fixture
def site(tmp_path: Path, run_of_excerpt: dict[str, bytes]):
    """A dump site on 127.0.0.1 publishing run ``OLD`` of ``WIKI``, made from the real excerpt."""
    from support.dump_site import DumpSite, write_run

    write_run(tmp_path / "site", WIKI, OLD, run_of_excerpt)
    with DumpSite(tmp_path / "site") as served:
        yield served
