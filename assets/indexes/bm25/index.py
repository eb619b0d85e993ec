"""Building the BM25 index: Anserini's ``IndexCollection`` over the passages' pyserini JsonCollection
(``{"id": passage_id, "contents": "title\\ntext"}``), in a subprocess with the Java runtime of
:mod:`assets.indexes.bm25.java`, into a temp directory published atomically (:func:`build_bm25_index`);
:func:`build_bm25` builds a snapshot's.

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assets.compressed import open_compressed, strict_lines
from assets.files import publish, temp_sibling
from assets.indexes.bm25 import java, lucene_files
from assets.indexes.bm25.settings import Bm25Settings
from assets.indexes.bm25.text_analysis import ANALYSES, ORIGINAL_FIELD, TextAnalysis, text_analysis
from assets.indexes.registry import BuiltIndex
from assets.languages import WHITESPACE_ANALYZER, anserini_analyzer, resolve_language
from assets.limits import InputLimits
from assets.params import BM25_HEAP, BM25_THREADS
from assets.storage import SnapshotPaths, write_report_json

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
META_FILE = "kilt_bm25.json"  # written into the index directory (Lucene ignores files it did not name)
LOG_FILE = "anserini-index.run.log"  # like every *.run.* file, ignored by DVC (it has timestamps)
COLLECTION_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
_COUNTER_RE = re.compile(r"\b(indexed|unindexable|empty|skipped|errors):\s+([\d,]+)\s*$")
_TOTAL_RE = re.compile(r"Total ([\d,]+) documents indexed")
_PROGRESS_RE = re.compile(r"([\d,]+) documents indexed")


# =========================================================================================== index
class Bm25IndexError(RuntimeError):
    """Anserini lost documents (or indexed none); ``report`` holds its counters."""

    def __init__(self, message: str, report: Bm25IndexReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(slots=True)
class Bm25IndexReport:
    """What ``build_bm25_index`` produced, with Anserini's own counters (never hidden)."""

    index_dir: str
    collection_dir: str
    language: str  # the analyzer actually used
    requested_language: str
    analysis: str  # what documents and queries go through before it (text_analysis.py)
    documents_indexed: int
    collection_documents: int | None  # non-blank lines in the collection files (None for .gz input)
    files: int
    unindexable: int = 0
    empty: int = 0
    skipped: int = 0
    errors: int = 0
    seconds: float = 0.0
    anserini_seconds: float = 0.0
    index_bytes: int = 0
    threads: int = BM25_THREADS
    heap: str = BM25_HEAP
    memory_buffer_mb: int = 0
    anserini_version: str = ""
    java_version: str = ""
    command: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unpinned_diagnostics: dict[str, dict[str, str]] = field(default_factory=dict)  # what Lucene wrote

    @property
    def documents_per_second(self) -> float:
        return self.documents_indexed / self.seconds if self.seconds else 0.0

    def metadata(self) -> dict[str, Any]:
        """What the ``bm25_index`` asset shows in the Dagster UI (plain values; paths as ``Path``)."""
        return {
            "index_path": Path(self.index_dir),
            "documents": self.documents_indexed,
            "language": self.language,
            "requested_language": self.requested_language,
            "analysis": self.analysis,
            "anserini_counters": {k: getattr(self, k) for k in ("unindexable", "empty", "skipped", "errors")},
            "index_bytes": self.index_bytes,
            "threads": self.threads,
            "heap": self.heap,
            "seconds": float(self.seconds),
            "documents_per_second": float(self.documents_per_second),
            "anserini": self.anserini_version,
            "java": self.java_version,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "documents_per_second": self.documents_per_second}


def collection_files(collection_dir: Path) -> list[Path]:
    """The JsonCollection's document files (hidden files ignored)."""
    return sorted(
        p
        for p in collection_dir.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name.endswith(COLLECTION_SUFFIXES)
    )


def _count_documents(files: Sequence[Path]) -> int | None:
    """Non-blank lines over the (uncompressed) files; None when any file is gzipped."""
    if any(p.name.endswith(".gz") for p in files):
        return None
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    total += 1
    return total


def _collection_is_empty(files: Sequence[Path]) -> bool:
    for path in files:
        with open_compressed(path, 1) as handle:
            for line in handle:
                if line.strip():
                    return False
    return True


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def lucene_buffer_mb(heap: str) -> int:
    """Lucene's RAM buffer: a quarter of the heap, 64..2048 MB (Anserini's default, 4 GB, ignores -Xmx)."""
    return max(64, min(2048, java.heap_bytes(heap) // 4 // (1 << 20)))


def index_collection_args(
    collection_dir: Path,
    index_dir: Path,
    *,
    threads: int,
    language: str,
    memory_buffer_mb: int,
    pretokenized: bool = False,
) -> list[str]:
    """The ``IndexCollection`` arguments ``build_bm25_index`` uses (also run directly by the benchmark);
    ``pretokenized``: the documents are words separated by spaces (Lucene's whitespace analyzer)."""
    if pretokenized:
        return [
            *index_collection_args(
                collection_dir, index_dir, threads=threads, language="en", memory_buffer_mb=memory_buffer_mb
            ),
            "-pretokenized",
        ]
    return [
        "-collection", "JsonCollection",
        "-input", str(collection_dir),
        "-index", str(index_dir),
        "-generator", "DefaultLuceneDocumentGenerator",
        "-threads", str(threads),
        "-language", language,
        "-memoryBuffer", str(memory_buffer_mb),
        "-storePositions", "-storeDocvectors", "-storeRaw",
    ]  # fmt: skip


def write_analysed_collection(
    files: Sequence[Path], out_dir: Path, analysis: TextAnalysis, max_line_bytes: int | None = None
) -> None:
    """The collection's documents with ``contents`` as ``analysis`` makes it and the text kept in
    :data:`ORIGINAL_FIELD`, one JSONL file per input file, in ``out_dir`` (created), streamed; a line over
    ``max_line_bytes`` (default: ``limits.input``'s) is an error naming the file and line."""
    max_line_bytes = max_line_bytes or InputLimits().max_line_bytes
    out_dir.mkdir(parents=True)
    for number, path in enumerate(files):
        with open(out_dir / f"part-{number:05d}.jsonl", "w", encoding="utf-8") as sink:
            for _, line in strict_lines(path, max_line_bytes):
                if not line.strip():
                    continue
                document = json.loads(line)
                contents = document.get("contents") or ""
                document[ORIGINAL_FIELD] = contents
                document["contents"] = analysis.apply(contents)
                sink.write(json.dumps(document, ensure_ascii=False) + "\n")


def parse_index_log(lines: Iterable[str]) -> dict[str, int]:
    """Anserini's final counters (``indexed``, ``unindexable``, ``empty``, ``skipped``, ``errors``) and
    ``total`` (from "Total N documents indexed")."""
    counts: dict[str, int] = {}
    for line in lines:
        match = _COUNTER_RE.search(line)
        if match:
            counts[match[1]] = int(match[2].replace(",", ""))
            continue
        match = _TOTAL_RE.search(line)
        if match:
            counts["total"] = int(match[1].replace(",", ""))
    return counts


def _collection_to_index(collection_dir: Path) -> list[Path]:
    """The files of a passage collection that can be indexed; an error naming the folder otherwise."""
    if not collection_dir.exists():
        raise FileNotFoundError(f"BM25 index: passage collection directory {collection_dir} does not exist")
    if not collection_dir.is_dir():
        raise NotADirectoryError(f"BM25 index: passage collection {collection_dir} is not a directory")
    files = collection_files(collection_dir)
    if not files:
        raise ValueError(
            f"BM25 index: no collection files ({', '.join(COLLECTION_SUFFIXES)}) in {collection_dir}"
        )
    if _collection_is_empty(files):
        raise ValueError(f"BM25 index: the passage collection in {collection_dir} is empty (0 documents)")
    return files


def _count_indexed(run: Any, report: Bm25IndexReport, index_dir: Path, *, strict: bool, skip: int) -> None:
    """Anserini's counters of ``run`` into ``report`` (its warnings too); :class:`Bm25IndexError` when
    documents were lost (with ``strict``) or none was indexed. ``skip``: warnings already logged."""
    warnings, expected = report.warnings, report.collection_documents
    if run.returncode != 0:
        raise java.AnseriniError(
            f"BM25 index: Anserini IndexCollection exited with code {run.returncode} "
            f"(log: {index_dir}.failed.log); last lines:\n" + "\n".join(run.lines[-25:]),
            run,
        )
    counts = parse_index_log(run.lines)
    if "indexed" not in counts and "total" not in counts:
        raise java.AnseriniError(
            "BM25 index: Anserini's log has no final counters (did IndexCollection finish?); "
            "last lines:\n" + "\n".join(run.lines[-25:]),
            run,
        )
    report.documents_indexed = counts.get("indexed", counts.get("total", 0))
    report.unindexable = counts.get("unindexable", 0)
    report.empty = counts.get("empty", 0)
    report.skipped = counts.get("skipped", 0)
    report.errors = counts.get("errors", 0)
    for name in ("unindexable", "empty", "skipped", "errors"):
        value = getattr(report, name)
        if value:
            warnings.append(f"Anserini reported {value:,} {name} document(s)")
    # Anserini stops reading a file at an unparsable line or a document without "id", logs
    # "Unexpected Exception" and counts nothing: the rest of that file is silently lost.
    errors = [line for line in run.lines if " ERROR " in line]
    if errors:
        warnings.append(f"{len(errors)} ERROR line(s) in Anserini's log, first: {errors[0][:300]}")
    lost = expected is not None and report.documents_indexed != expected
    if lost:
        warnings.append(
            f"{report.documents_indexed:,} documents indexed but the collection has {expected:,} "
            f"(missing {expected - report.documents_indexed:,})"
        )
    if report.documents_indexed == 0 or (strict and (lost or errors)):
        raise Bm25IndexError(
            f"BM25 index: {report.documents_indexed:,} of "
            f"{expected if expected is not None else '?'} documents indexed from {report.collection_dir}: "
            + "; ".join(warnings[skip:] or ["no document indexed"])
            + f" (Anserini log: {index_dir}.failed.log)",
            report,
        )
    for message in warnings[skip:]:
        log.warning("BM25 index: %s", message)


def _publish_index(work: Path, index_dir: Path, run: Any, report: Bm25IndexReport, started: float) -> None:
    """The index Anserini wrote in ``work`` made byte-reproducible, described and published."""
    (work / "write.lock").unlink(missing_ok=True)
    try:
        report.unpinned_diagnostics = lucene_files.pin_segment_diagnostics(work)
    except lucene_files.LuceneFileError as error:  # a Lucene upgrade: still a valid index
        report.warnings.append(f"index is valid but not byte-reproducible: {error}")
        log.warning("BM25 index: %s", report.warnings[-1])
    (work / LOG_FILE).write_text(run.text + "\n", encoding="utf-8")
    report.index_bytes = _dir_bytes(work) - (work / LOG_FILE).stat().st_size
    report.seconds = time.perf_counter() - started
    meta = {
        "format": INDEX_FORMAT,
        "kind": "bm25-anserini",
        "language": report.language,
        "analysis": report.analysis,
        "documents": report.documents_indexed,
        "report": report.to_dict(),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_report_json(work / META_FILE, meta)
    publish(work, index_dir)


def _index_collection(args: list[str], heap: str, files: list[Path], work: Path, bar: Any) -> Any:
    """Anserini's ``IndexCollection`` run into ``work`` (Lucene's segment ids seeded by the collection);
    ``work`` is removed when Java cannot start or the run is interrupted."""
    try:
        return java.run_anserini(
            "io.anserini.index.IndexCollection",
            args,
            heap=heap,
            properties={"tests.seed": lucene_files.segment_id_seed(files)},  # Lucene's segment ids
            on_line=bar,
            check=False,
        )
    except BaseException:  # java could not start, or interrupted: no half-written index left behind
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        bar.close()


def build_bm25_index(
    collection_dir: Path,
    index_dir: Path,
    *,
    threads: int = BM25_THREADS,
    heap: str = BM25_HEAP,
    language: str = "en",
    progress: bool = True,
    strict: bool = True,
    analysis: str | None = None,
) -> Bm25IndexReport:
    """Index a passages JsonCollection with Anserini ``IndexCollection`` (BM25-ready Lucene index).

    Docids are the passage ids; positions, document vectors and the raw JSON are stored. The index
    is written to a temp sibling of ``index_dir`` and renamed into place; a failed run leaves any
    previous index untouched and its log at ``<index_dir>.failed.log``.

    Anserini's counters (unindexable, empty, skipped, errors) are in the report and logged as
    warnings. With ``strict`` (the default) a run that lost documents (fewer indexed than lines in
    the collection, or an ERROR in Anserini's log) raises :class:`Bm25IndexError` and publishes
    nothing; otherwise it is published with warnings. An unknown ``language`` falls back to
    English with a logged warning. ``analysis``: what documents go through before Anserini
    (:data:`~assets.indexes.bm25.text_analysis.ANALYSES`; None: the language's own).
    """
    started = time.perf_counter()
    collection_dir, index_dir = Path(collection_dir), Path(index_dir)
    if int(threads) < 1:
        raise ValueError(f"BM25 index: threads must be >= 1, got {threads}")
    threads = int(threads)
    java.heap_option(heap)  # validates before anything starts
    files = _collection_to_index(collection_dir)
    analyzer_language, fallback = resolve_language(language)
    if analysis is not None and analysis not in ANALYSES:
        raise ValueError(f"BM25 index: unknown analysis {analysis!r}; choose one of {', '.join(ANALYSES)}")
    chosen = text_analysis(language) if analysis is None else ANALYSES[analysis]
    if chosen.pretokenized:
        analyzer_language = WHITESPACE_ANALYZER
    elif analyzer_language == WHITESPACE_ANALYZER:  # a segmented language, here left to Anserini's analyzer
        analyzer_language = anserini_analyzer(language)
    warnings: list[str] = []
    if fallback:
        log.warning("BM25 index: %s", fallback)
        warnings.append(fallback)
    expected = _count_documents(files)
    runtime = java.java_runtime()
    memory_buffer = lucene_buffer_mb(heap)

    work = temp_sibling(index_dir)
    analysed = temp_sibling(index_dir.parent / f"{index_dir.name}-analysed") if chosen.rewrites else None
    try:
        if analysed is not None:
            write_analysed_collection(files, analysed, chosen)
        args = index_collection_args(
            analysed or collection_dir,
            work,
            threads=threads,
            language=analyzer_language,
            memory_buffer_mb=memory_buffer,
            pretokenized=chosen.pretokenized,
        )
        run = _index_collection(args, heap, files, work, _progress_bar(progress, expected))
    finally:
        if analysed is not None:
            shutil.rmtree(analysed, ignore_errors=True)
    report = Bm25IndexReport(
        index_dir=str(index_dir),
        collection_dir=str(collection_dir),
        language=analyzer_language,
        requested_language=str(language),
        analysis=chosen.name,
        documents_indexed=0,
        collection_documents=expected,
        files=len(files),
        threads=threads,
        heap=heap,
        memory_buffer_mb=memory_buffer,
        anserini_version=java.anserini_version(),
        java_version=".".join(map(str, runtime.version)),
        command=run.command,
        anserini_seconds=run.seconds,
        warnings=warnings,
    )
    try:
        _count_indexed(run, report, index_dir, strict=strict, skip=1 if fallback else 0)
        _publish_index(work, index_dir, run, report, started)
        (index_dir.parent / f"{index_dir.name}.failed.log").unlink(missing_ok=True)
    except BaseException:
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        failed = index_dir.parent / f"{index_dir.name}.failed.log"
        failed.write_text(run.text + "\n", encoding="utf-8")
        shutil.rmtree(work, ignore_errors=True)
        raise
    return report


class _progress_bar:  # used like a function
    """A tqdm bar over documents fed by Anserini's log lines (or a no-op)."""

    def __init__(self, enabled: bool, total: int | None) -> None:
        self._bar = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc="bm25 index", unit="doc", file=sys.stderr)

    def __call__(self, line: str) -> None:
        if " WARN " in line or " ERROR " in line:
            log.debug("anserini: %s", line)
        if self._bar is None:
            return
        match = _PROGRESS_RE.search(line)
        if match and ("%" in line or "Total" in line or "Complete" in line):
            done = int(match[1].replace(",", ""))
            self._bar.update(max(0, done - self._bar.n))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def read_index_metadata(index_dir: Path) -> dict[str, Any]:
    """The ``kilt_bm25.json`` written by :func:`build_bm25_index` (``{}`` for a foreign index)."""
    path = Path(index_dir) / META_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def snapshot_language(paths: SnapshotPaths) -> str:
    """The dump's language code from the knowledge-source manifest (siteinfo), ``en`` when unknown."""
    if paths.manifest_file.is_file():
        return json.loads(paths.manifest_file.read_text()).get("language") or "en"
    return "en"


def build_bm25_over(
    paths: SnapshotPaths, settings: Any, *, progress: bool = False, reuse_from: SnapshotPaths | None = None
) -> BuiltIndex:
    """The ``bm25`` index type's build over a collection's passages (its ``SearcherType.build``;
    ``settings``: the :class:`~assets.indexes.settings.IndexSettings`; nothing is reused)."""
    del reuse_from
    return BuiltIndex(build_bm25(paths, settings.bm25, progress=progress).documents_indexed)


def build_bm25(paths: SnapshotPaths, settings: Bm25Settings, *, progress: bool = False) -> Bm25IndexReport:
    """The snapshot's Lucene index over its passage collection (:func:`build_bm25_index`)."""
    return build_bm25_index(
        paths.passages_collection,
        paths.bm25_index,
        threads=settings.threads,
        heap=settings.heap,
        language=settings.language or snapshot_language(paths),
        progress=progress,
    )
