"""The capacity plan's model: the target corpus, the constants not in the results files, the plan's
types, reading the measured results, and formatting (``benchmarks/capacity_plan.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ARTICLES = 6_500_000  # enwiki main-namespace articles without redirects (Special:Statistics, rounded)


PASSAGES = 22_000_000  # 100-word passages; DPR's psgs_w100 (2018 dump) has 21,015,324


DUMP_BZ2_BYTES = 24e9  # enwiki-<date>-pages-articles-multistream.xml.bz2, the single-file dump


DUMP_XML_BYTES = 100e9  # its decompressed XML (~4.2x the bz2)
HTML_PER_XML_BYTE = 2.12
"""Bytes of an Enterprise HTML dump (``.json.tar.gz``) per byte of wikitext: the three real records'
gzip'd JSON lines (93,870 bytes) over their wikitext (44,234 bytes). An estimate for enwiki's HTML dump
(``--html-bytes`` sets the real size)."""


WORKERS = (2, 16, 64)  # cores (worker processes / threads) to plan for, besides 1


IVF_NLIST = 65_536  # IVF lists at ~22M vectors (~14 sqrt(N)); the benchmark used 1,024 for 206,880


IVF_NLIST_ALTERNATIVE = 16_384  # also costed: fewer lists train ~16x faster


RECALL_TARGET = 0.95  # operating point: fastest measured setting at or above this recall@10


BZ2_XML_MB_PER_CORE_SECOND = 24.0  # Python bz2 on the real excerpt here: 6.1 MB XML in 0.25 CPU-s (ad hoc)


FRAGMENT_BYTES = 4_000_000  # build_knowledge_source(fragment_bytes=...): compressed bytes per parse task


PART_BYTES = 128_000_000  # params.yaml knowledge_source.part_bytes: bz2 bytes per parse step (multistream)


DUMP_PART_FILES = 27  # enwiki pages-articles{1..27}: one parse step each (taken as equal in size)


PASSAGE_BUILD_WORKERS = 2  # bench_passages_store.py: build_passages(workers=2) (its CPU is not recorded)


TRAIN_VECTORS_PER_LIST = 40  # assets.indexes.dense.faiss_index.default_train_sample


PQ_TRAIN_CAP = 256 * 256  # FAISS k-means subsamples to 256 points per centroid: 65,536 for 8-bit PQ


EMBEDDING_SHARD = 50_000  # params.yaml indexes.dense.shard_size: the unit of encoding work


PASSAGE_ID_BYTES = 12  # "<page id>-<n>\n" with page ids of up to 8 digits


ARROW_OFFSET_BYTES = 4  # per id in the searcher's in-memory docids array


# pyserini 1.6.0 prebuilt_index_info.py, "wikipedia-dpr-100w": documents, tar.gz bytes full / slim (no text)
PYSERINI_DPR_INDEX = (21_015_324, 9_177_917_732, 1_810_337_190)


LUCENE_STORED = ("fdt", "fdx", "fdm")  # stored raw JSON (-storeRaw)


LUCENE_DOCVECTORS = ("tvd", "tvx", "tvm")  # term vectors (-storeDocvectors)


@dataclass(slots=True)
class Stage:
    """One stage's work at target scale and how it spreads over workers.

    ``wall(1)`` is every part on one core (= core-seconds); ``wall(n)`` is
    ``serial + max(parallel_cpu / min(n, max_workers), floor)``: the parallel part splits over ``n`` cores,
    a pipelined single process (reader, sink) runs alongside on its own core, a serial step runs alone.
    """

    name: str
    basis: str  # the measured per-unit figure that is scaled
    parallel_cpu: float = 0.0  # core-seconds that split over workers
    floor: float = 0.0  # seconds of one pipelined process that runs alongside and does not split
    serial: float = 0.0  # seconds of a step that runs alone and does not split
    max_workers: int | None = None  # work units: more workers than this sit idle
    ram: str = "n/m"
    model: str = ""
    limit: str = ""

    @property
    def core_seconds(self) -> float:
        return self.parallel_cpu + self.floor + self.serial

    def wall(self, workers: int) -> float:
        if workers <= 1:
            return self.core_seconds
        useful = min(workers, self.max_workers or workers)
        return self.serial + max(self.parallel_cpu / useful, self.floor)

    def saturation(self) -> float | None:
        """Workers beyond which the pipelined floor, not the parallel part, sets the wall time."""
        return self.parallel_cpu / self.floor if self.floor else None

    def to_dict(self, workers: Sequence[int]) -> dict[str, Any]:
        payload = asdict(self)
        payload["core_hours"] = round(self.core_seconds / 3600, 2)
        payload["wall_seconds"] = {str(n): round(self.wall(n)) for n in (1, *workers)}
        payload["saturates_at_workers"] = round(s, 1) if (s := self.saturation()) else None
        return payload


@dataclass(slots=True)
class Artifact:
    """Disk at target scale, and RAM to use it."""

    name: str
    per_unit: str
    disk_bytes: float
    ram: str
    note: str = ""


@dataclass(slots=True)
class FaissPlan:
    """One FAISS factory at target scale: sizes, build cost, measured operating point."""

    factory: str  # at target scale
    measured_factory: str
    per_vector_bytes: float  # codes + ids (+ links, + refine vectors): grows with N
    fixed_bytes: float  # centroids + codebooks at target scale
    disk_bytes: float
    search_ram_bytes: float  # index + docids
    build_ram_bytes: float
    stage: Stage
    params: str
    recall_at_10: float
    recall_at_10_in_domain: float
    qps_measured: float  # at the benchmark's size, 2 threads
    qps_target: float | None  # extrapolated where the cost model is exact (Flat)
    note: str = ""


@dataclass(slots=True)
class Target:
    """What is planned for (the CLI options)."""

    articles: int
    passages: int
    xml_bytes: float
    bz2_bytes: float
    workers: tuple[int, ...]
    nlist: int
    recall: float
    bz2_mb_per_core_second: float
    part_files: int = DUMP_PART_FILES
    html_bytes: float = 0.0
    """The Enterprise HTML dump's bytes (0: :data:`HTML_PER_XML_BYTE` times the XML's)."""

    @property
    def html_dump_bytes(self) -> float:
        return self.html_bytes or HTML_PER_XML_BYTE * self.xml_bytes

    @property
    def xml_mb(self) -> float:
        return self.xml_bytes / 1e6


@dataclass(slots=True)
class Plan:
    target: Target
    stages: list[Stage]
    artifacts: list[Artifact]
    faiss: list[FaissPlan]
    facts: dict[str, Any] = field(default_factory=dict)  # measured per-unit figures and cross-checks


def load(results_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((results_dir / f"{name}.json").read_text())


def optional_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def lucene_breakdown(index_dir: Path) -> dict[str, int] | None:
    """Bytes of a Lucene index by role: stored raw text, docvectors, the rest (postings, terms, norms)."""
    if not index_dir.is_dir():
        return None
    parts = {"stored": 0, "docvectors": 0, "postings_terms_norms": 0}
    for path in index_dir.iterdir():
        if not path.is_file() or path.suffix in (".json", ".log"):
            continue
        ext = path.suffix.lstrip(".")
        key = "stored" if ext in LUCENE_STORED else "docvectors" if ext in LUCENE_DOCVECTORS else None
        parts[key or "postings_terms_norms"] += path.stat().st_size
    return parts if sum(parts.values()) else None


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def size(value: float) -> str:
    """Decimal units (the dump sizes are quoted that way)."""
    if value >= 1e9:
        return f"{value / 1e9:,.0f} GB" if value >= 100e9 else f"{value / 1e9:.1f} GB"
    return f"{value / 1e6:,.0f} MB"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
