"""Capacity plan for full English Wikipedia, extrapolated from the measured benchmark results.

Reads ``benchmarks/results/{knowledge_source,passages_store,bm25,dense}.json`` (plus, when still present,
the x40 benchmark's passage report and Lucene index under ``benchmarks/work/``), scales each stage to the
target corpus with an explicit per-stage model and writes ``benchmarks/results/capacity_plan.json``.
Nothing is run at scale: every figure is an extrapolation from a shared 2-core machine.

    .venv/bin/python benchmarks/capacity_plan.py [--passages 22e6] [--workers 2 16 64] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS_DIR, format_table, log, write_results

# ------------------------------------------------------------------------------ target (CLI options)
ARTICLES = 6_500_000  # enwiki main-namespace articles without redirects (Special:Statistics, rounded)
PASSAGES = 22_000_000  # 100-word passages; DPR's psgs_w100 (2018 dump) has 21,015,324
DUMP_BZ2_BYTES = 24e9  # enwiki-<date>-pages-articles-multistream.xml.bz2, the single-file dump
DUMP_XML_BYTES = 100e9  # its decompressed XML (~4.2x the bz2)
WORKERS = (2, 16, 64)  # cores (worker processes / threads) to plan for, besides 1
IVF_NLIST = 65_536  # IVF lists at ~22M vectors (~14 sqrt(N)); the benchmark used 1,024 for 206,880
IVF_NLIST_ALTERNATIVE = 16_384  # also costed: fewer lists train ~16x faster
RECALL_TARGET = 0.95  # operating point: fastest measured setting at or above this recall@10

# ------------------------------------------------------------------------------ not in the results files
BZ2_XML_MB_PER_CORE_SECOND = 24.0  # Python bz2 on the real excerpt here: 6.1 MB XML in 0.25 CPU-s (ad hoc)
FRAGMENT_BYTES = 4_000_000  # build_knowledge_source(fragment_bytes=...): compressed bytes per parse task
PART_BYTES = 128_000_000  # params.yaml knowledge_source.part_bytes: bz2 bytes per parse step (multistream)
DUMP_PART_FILES = 27  # enwiki pages-articles{1..27}: one parse step each (taken as equal in size)
PASSAGE_BUILD_WORKERS = 2  # bench_passages_store.py: build_passages(workers=2) (its CPU is not recorded)
TRAIN_VECTORS_PER_LIST = 40  # assets.indexes.dense.default_train_sample
PQ_TRAIN_CAP = 256 * 256  # FAISS k-means subsamples to 256 points per centroid: 65,536 for 8-bit PQ
EMBEDDING_SHARD = 50_000  # params.yaml indexes.dense.shard_size: the unit of encoding work
PASSAGE_ID_BYTES = 12  # "<page id>-<n>\n" with page ids of up to 8 digits
ARROW_OFFSET_BYTES = 4  # per id in the searcher's in-memory docids array
# pyserini 1.6.0 prebuilt_index_info.py, "wikipedia-dpr-100w": documents, tar.gz bytes full / slim (no text)
PYSERINI_DPR_INDEX = (21_015_324, 9_177_917_732, 1_810_337_190)
LUCENE_STORED = ("fdt", "fdx", "fdm")  # stored raw JSON (-storeRaw)
LUCENE_DOCVECTORS = ("tvd", "tvx", "tvm")  # term vectors (-storeDocvectors)


# ------------------------------------------------------------------------------------------- model
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


# ------------------------------------------------------------------------------------------- inputs
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


# ------------------------------------------------------------------------------------------- formatting
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


# ------------------------------------------------------------------------------------------- plan
def plan_knowledge_source(results: Path, target: Target, facts: dict[str, Any]) -> list[Stage]:
    """Parse (steps over a multistream file / over part files) and resolve, scaled by XML bytes."""
    doc = load(results, "knowledge_source")
    label = "ours_4x" if "ours_4x" in doc else "ours_1x"
    run = doc[label]
    proc, report = run["process"], run["report"]
    xml_mb = run["input"]["xml_bytes"] / 1e6
    workers = doc["workers"]
    worker_cpu = proc["cpu_seconds_descendants"] / xml_mb  # decompress + parse + convert, per XML MB
    main_cpu = max(0.0, proc["cpu_seconds_main"] - report["resolve_seconds"]) / xml_mb  # sink (estimate)
    resolve = report["resolve_seconds"] / xml_mb
    main_rss = proc["peak_rss_main_stage1"]
    worker_rss = (proc["peak_rss_tree_stage1"] - proc["peak_rss_main_stage1"]) / workers
    capped = optional_json(results / "knowledge_source_rss_512mb.json")
    resolve_rss = capped[label]["process"]["peak_rss_main_stage2"] if capped else proc["peak_rss_main_stage2"]
    facts["knowledge_source"] = {
        "run": label,
        "xml_mb": round(xml_mb, 1),
        "worker_cpu_seconds_per_xml_mb": round(worker_cpu, 4),
        "main_cpu_seconds_per_xml_mb_estimate": round(main_cpu, 4),
        "resolve_seconds_per_xml_mb": round(resolve, 4),
        "parquet_bytes_per_xml_byte": round(report["parquet_bytes"] / run["input"]["xml_bytes"], 4),
        "shards_per_xml_mb": report["shards"] / xml_mb,
        "main_rss_stage1": main_rss,
        "worker_rss": round(worker_rss),
        "resolve_rss": resolve_rss,
        "articles": report["articles"],
        "anchors_per_xml_mb": round(report["anchors"] / xml_mb),
    }
    mb = target.xml_mb
    tasks = int(target.bz2_bytes // FRAGMENT_BYTES)
    ram = f"{size(main_rss)} + {size(worker_rss)}/worker"
    decompress = mb / target.bz2_mb_per_core_second
    total_cpu = (worker_cpu + main_cpu) * mb
    steps = max(1, int(target.bz2_bytes // PART_BYTES))
    step_sink = main_cpu * mb / steps  # each parse step sinks its own part
    multistream = Stage(
        name="knowledge source: parse (multistream file)",
        basis=f"{1 / worker_cpu:.1f} MB XML per worker CPU-s; sink {main_cpu * 1000:.1f} ms/MB",
        parallel_cpu=total_cpu - step_sink,
        floor=step_sink,
        max_workers=tasks,
        ram=ram + " per parse step",
        model=f"CPU-bound; {steps} executor steps of {PART_BYTES / 1e6:.0f} MB of bz2 streams, each with its "
        "own sink writing its stage-1 Parquet (sink CPU estimated as main CPU minus resolve time); a step's "
        f"workers decompress, parse and convert {FRAGMENT_BYTES / 1e6:.0f} MB groups of its streams",
        limit=f"{steps} steps with a sink each: not limiting below ~{steps * worker_cpu / main_cpu:,.0f} "
        "workers"
        if main_cpu
        else "",
    )
    part_chain = (decompress + main_cpu * mb) / target.part_files
    in_parts = Stage(
        name="knowledge source: parse (dump in parts)",
        basis=f"bz2 {target.bz2_mb_per_core_second:.0f} MB XML/s per core (ad hoc) + the above",
        parallel_cpu=total_cpu - part_chain,
        floor=part_chain,
        max_workers=tasks,
        ram=ram + " per parse step",
        model=f"one executor step per part file ({target.part_files}, taken as equal in size): in a step one "
        "reader decompresses and splits the XML and sinks while its workers convert batches (lower bound: "
        "the reader's XML splitting is not counted)",
        limit=f"the reader and sink of one part: >= {duration(part_chain)}; the largest part file sets it",
    )
    resolve_stage = Stage(
        name="knowledge source: resolve (DuckDB)",
        basis=f"{resolve * 1000:.1f} ms wall per MB XML (2 cores)",
        serial=resolve * mb,
        ram=f"{size(resolve_rss)} (DuckDB capped at 512 MB, spills)",
        model="redirect chains and anchors joined in one DuckDB process, shard by shard; taken as not "
        "scaling with workers",
        limit="one process; joins over all titles and redirects under a 512 MB cap spill (not measured)",
    )
    return [multistream, in_parts, resolve_stage]


def plan_passages_and_store(results: Path, target: Target, facts: dict[str, Any]) -> list[Stage]:
    """Passages (per passage, parallel over knowledge-source shards) and the single-writer store."""
    doc = load(results, "passages_store")
    kilt, dpr, store = doc["passages"]["kilt"], doc["passages"]["dpr"], doc["store"]
    cpu = kilt["seconds"] * PASSAGE_BUILD_WORKERS / kilt["passages"]
    store_seconds = store["seconds"] / store["passages"]
    shards = round(facts["knowledge_source"]["shards_per_xml_mb"] * target.xml_mb)
    facts["passages"] = {
        "cpu_seconds_per_passage_upper_bound": cpu,
        "kilt_over_dpr_passages": round(kilt["passages"] / dpr["passages"], 3),
        "passages_per_article_measured": round(kilt["passages"] / doc["input"]["articles"], 1),
        "passages_per_xml_mb_measured": round(kilt["passages"] / doc["input"]["xml_mb"], 1),
        "store_seconds_per_passage": store_seconds,
        "store_bytes_per_passage": round(store["bytes"] / store["passages"], 1),
        "knowledge_source_shards_at_target": shards,
    }
    n = target.passages
    return [
        Stage(
            name="passages (kilt mode, 3 formats)",
            basis=f"{cpu * 1e6:.0f} µs CPU/passage (2 x wall: CPU not recorded)",
            parallel_cpu=cpu * n,
            max_workers=shards,
            model="CPU-bound; one knowledge-source shard per worker process",
            limit=f"{shards:,} shards (16 MB each): not limiting",
        ),
        Stage(
            name="provenance store (DuckDB)",
            basis=f"{store_seconds * 1e6:.0f} µs wall/passage (2 cores)",
            serial=store_seconds * n,
            ram="<= 4 GB (memory_limit) + spill",
            model="one DuckDB writer builds the tables and ART indexes; taken as not scaling",
            limit="single writer; index build at 22M+ keys under 4 GB not measured",
        ),
    ]


def plan_bm25(results: Path, target: Target, facts: dict[str, Any]) -> tuple[Stage, dict[str, Any]]:
    """Anserini indexing from measured CPU-seconds per passage; threads up to the number of files."""
    doc = load(results, "bm25")
    idx = doc["indexing"]
    runs = idx["runs"]["wrapper"]
    n = idx["passages"]
    cpu = statistics.median(r["cpu_seconds"] for r in runs) / n
    wall = statistics.median(r["wall_seconds"] for r in runs)
    index_bytes = statistics.median(r["index_bytes"] for r in runs) / n
    rss = max(r["peak_rss_tree_bytes"] for r in runs)
    report = idx["wrapper_report"]
    breakdown = lucene_breakdown(Path(report["index_dir"]))
    collection = Path(report["collection_dir"]).parent / "report.json"
    info = {
        "cpu_seconds_per_passage": cpu,
        "busy_cores_measured": round(cpu * n / wall, 2),
        "threads": idx["threads"],
        "index_bytes_per_passage": round(index_bytes, 1),
        "collection_bytes_per_passage": round(doc["input"]["collection_bytes"] / doc["input"]["passages"], 1),
        "peak_rss_bytes": rss,
        "heap": idx["heap"],
        "lucene_breakdown_bytes_per_passage": (
            {k: round(v / n, 1) for k, v in breakdown.items()} if breakdown else None
        ),
        "passage_report": optional_json(collection),
    }
    facts["bm25"] = {k: v for k, v in info.items() if k != "passage_report"}
    files = facts["passages"]["knowledge_source_shards_at_target"]
    stage = Stage(
        name="BM25 index (Anserini)",
        basis=f"{cpu * 1e6:.0f} µs CPU/passage",
        parallel_cpu=cpu * target.passages,
        max_workers=files,
        ram=f"{size(rss)} measured (-Xmx{idx['heap']}, {idx['threads']} threads)",
        model="CPU-bound; Anserini runs one thread per collection file (one JSONL per shard)",
        limit=f"measured {info['busy_cores_measured']:.2f} busy cores on {idx['threads']} threads "
        "(shared machine); grow -Xmx with threads",
    )
    return stage, info


def plan_encoding(dense: dict[str, Any], target: Target, facts: dict[str, Any]) -> list[Stage]:
    """Encoding per backend from measured passages per CPU-second."""
    backends = dense["encoding"]["backends"]
    facts["encoding"] = {
        name: {
            "passages_per_cpu_second": b["passages_per_cpu_second"],
            "passages_per_second": b["passages_per_second"],
            "top10_overlap_vs_fp32": b["top10_overlap_vs_fp32"],
        }
        for name, b in backends.items()
    }
    shards = math.ceil(target.passages / EMBEDDING_SHARD)
    stages = []
    for name, b in sorted(backends.items(), key=lambda kv: -kv[1]["passages_per_cpu_second"]):
        stages.append(
            Stage(
                name=f"dense encode: {name}",
                basis=f"{b['passages_per_cpu_second']:.1f} passages/CPU-s",
                parallel_cpu=target.passages / b["passages_per_cpu_second"],
                max_workers=shards,
                model="CPU-bound; one executor step per "
                f"{EMBEDDING_SHARD:,}-passage shard, each an encoder process on its threads",
                limit="no GPU measured; at most one step per shard",
            )
        )
    return stages


def _operating_point(runs: list[dict[str, Any]], recall: float) -> dict[str, Any]:
    """Fastest measured setting reaching ``recall`` on the NQ queries, else the most accurate one."""
    good = [r for r in runs if r["recall_at_10"] >= recall]
    if good:
        return max(good, key=lambda r: r["queries_per_second"])
    return max(runs, key=lambda r: (r["recall_at_10"], r["queries_per_second"]))


def plan_faiss(dense: dict[str, Any], target: Target) -> list[FaissPlan]:
    """Every measured factory scaled to the target: sizes split into per-vector and fixed parts."""
    info = dense["faiss"]
    dim, measured_n, threads = info["dimension"], info["vectors"], info["threads"]
    n = target.passages
    docids = n * (PASSAGE_ID_BYTES + ARROW_OFFSET_BYTES)
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in info["runs"]:
        groups.setdefault(run["factory"], []).append(run)
    reference = {
        int(m[1]): runs[0]
        for factory, runs in groups.items()
        if (m := re.fullmatch(r"IVF(\d+),SQ8", factory))
    }  # IVF,SQ8: training the SQ is a min/max scan, so its train/add times are the coarse quantizer's
    plans = []
    for factory, runs in groups.items():
        run = runs[0]
        point = _operating_point(runs, target.recall)
        build, train, measured_bytes = run["build_seconds"], run["train_seconds"], run["index_bytes"]
        ivf = re.match(r"IVF(\d+),", factory)
        qps_target = None
        note = ""
        if ivf:
            nlist_m = int(ivf[1])
            codebook = 256 * dim * 4 if re.search(r"PQ\d+", factory) else 0
            per_vector = (measured_bytes - nlist_m * dim * 4 - codebook) / measured_n
            fixed = target.nlist * dim * 4 + codebook
            ref = reference.get(nlist_m, run)
            coarse_train = ref["train_seconds"] * threads
            assign = (ref["build_seconds"] - ref["train_seconds"]) * threads
            own_train = max(0.0, train - ref["train_seconds"]) * threads
            own_add = max(0.0, (build - train) - (ref["build_seconds"] - ref["train_seconds"])) * threads
            train_m = run["train_vectors"]
            train_t = min(n, TRAIN_VECTORS_PER_LIST * target.nlist)
            cpu = (
                coarse_train * (train_t * target.nlist) / (train_m * nlist_m)
                + own_train * min(train_t, PQ_TRAIN_CAP) / min(train_m, PQ_TRAIN_CAP)
                + assign * (n * target.nlist) / (measured_n * nlist_m)
                + own_add * n / measured_n
            )
            name = factory.replace(f"IVF{nlist_m}", f"IVF{target.nlist}", 1)
            disk = per_vector * n + fixed
            build_ram = max(train_t * dim * 4 + fixed, disk)
            stage = Stage(
                name=f"FAISS build: {name}",
                basis=f"train {train:.1f} s + add {build - train:.1f} s for {measured_n:,} (2 threads)",
                parallel_cpu=cpu,
                ram=size(build_ram),
                model="k-means ~ train vectors x nlist (40/list); assignment ~ N x nlist (flat coarse "
                "quantizer; the measured add includes writing the index, so this leans high); codes ~ N; "
                "PQ codebooks <= 65,536 training points",
                limit="CPU-bound (BLAS); nlist^2 training dominates",
            )
            note = f"+ {size(fixed)} centroids/codebooks"
        elif factory.startswith("HNSW"):
            per_vector, fixed = measured_bytes / measured_n, 0.0
            disk = per_vector * n
            build_ram = disk
            growth = math.log(n) / math.log(measured_n)
            name = factory
            stage = Stage(
                name=f"FAISS build: {factory}",
                basis=f"{build:.1f} s for {measured_n:,} (2 threads)",
                parallel_cpu=build * threads * n / measured_n * growth,
                ram=size(build_ram),
                model=f"insertions ~ N log N (x{growth:.2f} per vector); links included in the measured "
                "bytes/vector",
                limit="lower bound: random access over the whole graph once it exceeds the caches",
            )
        else:  # Flat: a copy of the vectors
            per_vector, fixed = measured_bytes / measured_n, 0.0
            disk = per_vector * n
            build_ram = disk
            name = factory
            qps_target = point["queries_per_second"] * measured_n / n
            stage = Stage(
                name=f"FAISS build: {factory}",
                basis=f"{measured_bytes / build / 1e6:.0f} MB/s copy+write",
                serial=build / measured_bytes * disk,
                ram=size(build_ram),
                model="copy of the vectors: memory/disk bandwidth, not cores",
                limit="memory-bound: does not scale with workers",
            )
            note = "exact search cost ~ N"
        plans.append(
            FaissPlan(
                factory=name,
                measured_factory=factory,
                per_vector_bytes=round(per_vector, 2),
                fixed_bytes=fixed,
                disk_bytes=disk,
                search_ram_bytes=disk + docids,
                build_ram_bytes=build_ram,
                stage=stage,
                params=point["params"],
                recall_at_10=point["recall_at_10"],
                recall_at_10_in_domain=point["recall_at_10_in_domain"],
                qps_measured=point["queries_per_second"],
                qps_target=qps_target,
                note=note,
            )
        )
    return plans


def recommended_faiss(plans: list[FaissPlan], recall: float) -> FaissPlan:
    """Smallest search RAM among the factories that reach ``recall`` on the NQ queries."""
    good = [p for p in plans if p.recall_at_10 >= recall] or plans
    return min(good, key=lambda p: p.search_ram_bytes)


def build_plan(results: Path, target: Target) -> Plan:
    facts: dict[str, Any] = {}
    stages = plan_knowledge_source(results, target, facts)
    stages += plan_passages_and_store(results, target, facts)
    bm25, bm25_info = plan_bm25(results, target, facts)
    stages.append(bm25)
    dense = load(results, "dense")
    encoding = plan_encoding(dense, target, facts)
    stages += encoding
    faiss = plan_faiss(dense, target)
    stages += [p.stage for p in faiss]
    ks, ps, n = facts["knowledge_source"], facts["passages"], target.passages
    report = bm25_info["passage_report"]
    per_passage: dict[str, float | None] = {
        "parquet": None,
        "collection": bm25_info["collection_bytes_per_passage"],
        "tsv": None,
    }
    if report:
        per_passage = {k: report["bytes"][k] / report["passages"] for k in per_passage}
        facts["passages"]["mean_words"] = round(report["mean_words"], 1)
    dim = dense["faiss"]["dimension"]
    lucene = facts["bm25"]["lucene_breakdown_bytes_per_passage"]
    hot = f"{size(lucene['postings_terms_norms'] * n)} hot postings (page cache)" if lucene else "n/m"

    def passage_artifact(label: str, key: str, note: str) -> Artifact:
        value = per_passage[key]
        return Artifact(
            label, f"{value:.0f} B/passage" if value else "n/m", (value or 0) * n, "streamed", note
        )

    artifacts = [
        Artifact("dump (.xml.bz2, input)", "", target.bz2_bytes, "streamed", f"{size(target.xml_bytes)} XML"),
        Artifact(
            "pages Parquet (+ redirects)",
            f"{ks['parquet_bytes_per_xml_byte']:.3f} B/B XML",
            ks["parquet_bytes_per_xml_byte"] * target.xml_bytes,
            "streamed",
            "zstd",
        ),
        passage_artifact("passages Parquet", "parquet", "zstd"),
        passage_artifact("passages JSONL (Anserini)", "collection", ""),
        passage_artifact("passages TSV (DPR)", "tsv", ""),
        Artifact(
            "provenance.duckdb",
            f"{ps['store_bytes_per_passage']:.0f} B/passage",
            ps["store_bytes_per_passage"] * n,
            "buffer pool (n/m)",
            "pages + paragraphs uncompressed",
        ),
        Artifact(
            "Lucene index",
            f"{facts['bm25']['index_bytes_per_passage']:.0f} B/passage",
            facts["bm25"]["index_bytes_per_passage"] * n,
            f"JVM heap + {hot}",
            "positions + docvectors + raw",
        ),
        Artifact(
            "embeddings (float32 .npy + ids)",
            f"{dim * 4 + PASSAGE_ID_BYTES} B/passage",
            n * (dim * 4 + PASSAGE_ID_BYTES),
            "mmap, streamed",
            f"dim {dim}",
        ),
    ]
    alternative = plan_faiss(dense, replace(target, nlist=IVF_NLIST_ALTERNATIVE))
    facts["ivf_alternative"] = {
        "nlist": IVF_NLIST_ALTERNATIVE,
        "build_core_hours": {
            p.factory: round(p.stage.core_seconds / 3600, 2)
            for p in alternative
            if p.factory.startswith("IVF")
        },
    }
    facts["faiss_dimension"] = dim
    facts["faiss_vectors"] = dense["faiss"]["vectors"]
    facts["faiss_nlist_measured"] = sorted(
        {int(m[1]) for r in dense["faiss"]["runs"] if (m := re.match(r"IVF(\d+),", r["factory"]))}
    )
    facts["measured_at"] = {
        name: load(results, name).get("measured_at")
        for name in ("knowledge_source", "passages_store", "bm25")
    } | {"dense": dense["encoding"].get("measured_at")}
    facts["cross_checks"] = {
        "pyserini_wikipedia_dpr_100w_bytes_per_doc_full_tar_gz": round(
            PYSERINI_DPR_INDEX[1] / PYSERINI_DPR_INDEX[0], 1
        ),
        "pyserini_wikipedia_dpr_100w_bytes_per_doc_slim_tar_gz": round(
            PYSERINI_DPR_INDEX[2] / PYSERINI_DPR_INDEX[0], 1
        ),
        "passages_implied_by_measured_xml_density": round(ps["passages_per_xml_mb_measured"] * target.xml_mb),
        "passages_per_article_target": round(target.passages / target.articles, 2),
        "kilt_mode_passages_if_target_is_dpr_count": round(target.passages * ps["kilt_over_dpr_passages"]),
    }
    return Plan(target, stages, artifacts, faiss, facts)


@dataclass(slots=True)
class Total:
    """Stages run one after the other: core-seconds and wall times add up."""

    name: str
    parts: list[Stage]

    @property
    def core_seconds(self) -> float:
        return sum(p.core_seconds for p in self.parts)

    def wall(self, workers: int) -> float:
        return sum(p.wall(workers) for p in self.parts)


def pipeline_total(plan: Plan) -> Total:
    """Knowledge source (multistream) -> passages -> store -> BM25 -> onnx -> recommended FAISS, in a row."""
    best = recommended_faiss(plan.faiss, plan.target.recall)
    names = {
        "knowledge source: parse (multistream file)",
        "knowledge source: resolve (DuckDB)",
        "passages (kilt mode, 3 formats)",
        "provenance store (DuckDB)",
        "BM25 index (Anserini)",
        "dense encode: onnx",
        best.stage.name,
    }
    parts = [s for s in plan.stages if s.name in names]
    return Total(f"total, one after the other (onnx, {best.factory})", parts)


# ------------------------------------------------------------------------------------------- output
def stage_rows(plan: Plan) -> tuple[list[str], list[list[str]]]:
    workers = plan.target.workers
    headers = ["stage", "measured basis", "1 core", *(f"{n} workers" for n in workers)]
    total = pipeline_total(plan)
    marked = {p.name for p in total.parts}
    rows = [
        [
            s.name + (" *" if s.name in marked else ""),
            s.basis,
            duration(s.wall(1)),
            *(duration(s.wall(n)) for n in workers),
        ]
        for s in plan.stages
    ]
    rows.append([total.name, "sum of the rows marked *", *(duration(total.wall(n)) for n in (1, *workers))])
    return headers, rows


def _group(stage: Stage) -> str:
    """Stages that share a model (encoding backends, IVF variants) are described once."""
    if stage.name.startswith("dense encode"):
        return "dense encode (every backend)"
    if stage.name.startswith("FAISS build: IVF"):
        return "FAISS build: IVF (SQ8, PQ, PQ+refine)"
    return stage.name


def model_rows(plan: Plan) -> tuple[list[str], list[list[str]]]:
    rows, seen = [], set()
    for stage in plan.stages:
        if (key := _group(stage)) not in seen:
            seen.add(key)
            rows.append([key, stage.ram, stage.limit])
    return ["stage", "peak RAM", "limit"], rows


def artifact_rows(plan: Plan) -> tuple[list[str], list[list[str]]]:
    headers = ["artifact", "measured", "disk", "RAM to use", "note"]
    return headers, [[a.name, a.per_unit, size(a.disk_bytes), a.ram, a.note] for a in plan.artifacts]


def faiss_rows(plan: Plan) -> tuple[list[str], list[list[str]]]:
    headers = [
        "index",
        "bytes/vector",
        "disk",
        "RAM to search",
        "RAM to build",
        "build 1 core",
        f"build {plan.target.workers[-1]} cores",
        f"setting ({'/'.join(map(str, plan.facts['faiss_nlist_measured']))} lists)",
        "recall@10 NQ / in-domain",
        "q/s measured",
    ]
    rows = [
        [
            p.factory,
            f"{p.per_vector_bytes:,.0f}",
            size(p.disk_bytes),
            size(p.search_ram_bytes),
            size(p.build_ram_bytes),
            duration(p.stage.wall(1)),
            duration(p.stage.wall(plan.target.workers[-1])),
            p.params or "exact",
            f"{p.recall_at_10:.3f} / {p.recall_at_10_in_domain:.3f}",
            f"{p.qps_measured:,.0f}" + (f" (~{p.qps_target:.0f} at target)" if p.qps_target else ""),
        ]
        for p in plan.faiss
    ]
    return headers, rows


def assumption_rows(plan: Plan, args: argparse.Namespace) -> list[list[str]]:
    t, f = plan.target, plan.facts
    return [
        ["articles", f"{t.articles:,}", "--articles; only the passages-per-article cross-check uses it"],
        ["passages", f"{t.passages:,}", "--passages; scales passages, store, BM25, encoding, FAISS"],
        ["dump bz2 / XML", f"{size(t.bz2_bytes)} / {size(t.xml_bytes)}", "--bz2-bytes / --xml-bytes"],
        ["workers", ", ".join(map(str, t.workers)), "--workers; cores, one process or thread each"],
        ["IVF lists", f"{t.nlist:,}", f"--nlist; {TRAIN_VECTORS_PER_LIST} training vectors per list"],
        [
            "bz2 decompression",
            f"{t.bz2_mb_per_core_second:.0f} MB XML/s/core",
            "--bz2-mb-per-second (ad hoc)",
        ],
        ["recall target", f"{t.recall}", "--recall; picks each index's measured setting"],
        ["measured", ", ".join(f"{k} {(v or 'n/r')[:10]}" for k, v in f["measured_at"].items()), "--results"],
    ]


def render_text(plan: Plan, args: argparse.Namespace) -> str:
    out = ["Assumptions", format_table(["", "value", "how to change"], assumption_rows(plan, args)), ""]
    out += ["Stages (wall time; 1 core = core-hours of all parts)", format_table(*stage_rows(plan)), ""]
    out += ["Stage memory and limits", format_table(*model_rows(plan)), ""]
    out += ["Artifacts", format_table(*artifact_rows(plan)), ""]
    out += ["FAISS", format_table(*faiss_rows(plan)), ""]
    out += [f"- {line}" for line in findings(plan)]
    return "\n".join(out)


def _stage(plan: Plan, name: str) -> Stage:
    return next(s for s in plan.stages if s.name == name)


def findings(plan: Plan) -> list[str]:
    """The numbers a reader should not miss (also the Markdown's notes)."""
    t, f = plan.target, plan.facts
    ks, ps, cc = f["knowledge_source"], f["passages"], f["cross_checks"]
    parse = _stage(plan, "knowledge source: parse (multistream file)")
    onnx = _stage(plan, "dense encode: onnx")
    lines = [
        f"Passages per article: the benchmark excerpt has {ps['passages_per_article_measured']:.0f}, the "
        f"target {cc['passages_per_article_target']:.1f}; scaling passages by XML bytes instead would give "
        f"{cc['passages_implied_by_measured_xml_density'] / 1e6:.0f}M, so the excerpt's long articles are "
        "not typical and the passage count is an input, not a result.",
        f"kilt mode makes {ps['kilt_over_dpr_passages']:.2f}x as many passages as dpr on the same text: if "
        f"{t.passages / 1e6:.0f}M is a DPR-style count, a kilt build is ~"
        f"{cc['kilt_mode_passages_if_target_is_dpr_count'] / 1e6:.0f}M passages (rerun with --passages).",
    ]
    in_parts = _stage(plan, "knowledge source: parse (dump in parts)")
    big = t.workers[-1]
    lines.append(
        f"Knowledge-source parse: one executor step per {PART_BYTES / 1e6:.0f} MB of a multistream file "
        f"or per part file, each with its own sink: {duration(parse.wall(big))} for the multistream file "
        f"and {duration(in_parts.wall(big))} for {t.part_files} part files on {big} workers (the largest "
        f"part's reader sets the latter's floor, {duration(in_parts.floor)}); the DuckDB resolve step adds "
        f"a serial {duration(_stage(plan, 'knowledge source: resolve (DuckDB)').serial)}. Workers need "
        f"{size(ks['worker_rss'])} each, plus {size(ks['main_rss_stage1'])} per concurrent parse step."
    )
    lines.append(
        f"Encoding dominates: onnx int8 needs {onnx.core_seconds / 3600:,.0f} core-hours "
        f"({duration(onnx.wall(big))} on {big} cores)."
    )
    ivf = [p for p in plan.faiss if p.factory.startswith("IVF")]
    hnsw = [p for p in plan.faiss if p.factory.startswith("HNSW")]
    if ivf and hnsw:
        alt = f["ivf_alternative"]
        alt_hours = min(alt["build_core_hours"].values(), default=0.0)
        lines.append(
            f"IVF with {t.nlist:,} lists costs {ivf[0].stage.core_seconds / 3600:.0f} core-hours to build "
            f"(flat coarse quantizer: k-means ~ nlist², assignment ~ N x nlist), "
            f"{ivf[0].stage.core_seconds / hnsw[0].stage.core_seconds:.0f}x {hnsw[0].factory}; with "
            f"{alt['nlist']:,} lists ~{alt_hours:.1f} core-hours."
        )
    flat = _flat(plan)
    lines.append(
        f"Exact search (Flat) at {t.passages / 1e6:.0f}M vectors: ~{flat.qps_target or 0:.0f} q/s on 2 "
        f"threads (measured {flat.qps_measured:,.0f} q/s at {f['faiss_vectors']:,})."
    )
    if hnsw:
        lines.append(
            f"{hnsw[0].factory} reached only {hnsw[0].recall_at_10:.3f} recall@10 on NQ questions "
            f"({hnsw[0].params}; {hnsw[0].recall_at_10_in_domain:.3f} in-domain) over the benchmark's "
            "synthetic near-duplicate vectors."
        )
    if f["bm25"]["lucene_breakdown_bytes_per_passage"]:
        b = f["bm25"]["lucene_breakdown_bytes_per_passage"]
        lines.append(
            f"Lucene bytes/passage: {b['stored']:.0f} raw text + {b['docvectors']:.0f} docvectors + "
            f"{b['postings_terms_norms']:.0f} postings/terms/norms; pyserini's prebuilt wikipedia-dpr-100w "
            f"is {cc['pyserini_wikipedia_dpr_100w_bytes_per_doc_full_tar_gz']:.0f} B/doc compressed "
            f"({cc['pyserini_wikipedia_dpr_100w_bytes_per_doc_slim_tar_gz']:.0f} without text)."
        )
    return lines


def render_markdown(plan: Plan, args: argparse.Namespace) -> str:
    t, f = plan.target, plan.facts
    best = recommended_faiss(plan.faiss, t.recall)
    onnx = _stage(plan, "dense encode: onnx")
    torch = (
        _stage(plan, "dense encode: torch")
        if any(s.name == "dense encode: torch" for s in plan.stages)
        else None
    )
    total = pipeline_total(plan)
    big = t.workers[-1]
    fitting = sorted(plan.faiss, key=lambda p: p.search_ram_bytes)
    parts = [
        "## Capacity plan: full English Wikipedia",
        "",
        "`benchmarks/capacity_plan.py` extrapolates the measured results in `benchmarks/results/*.json` to "
        "full English Wikipedia and writes `benchmarks/results/capacity_plan.json`. **These are "
        "extrapolations, not measurements**: every per-unit figure comes from runs of a few hundred MB on a "
        "shared 2-core machine (load average 2–5), on a replicated excerpt whose articles are long and "
        "whose vocabulary is small. Treat them as order-of-magnitude planning figures, and re-measure a "
        "1–2M-passage slice on the target hardware before buying it. Regenerate with "
        "`.venv/bin/python benchmarks/capacity_plan.py --markdown PATH` (`--help` for the options).",
        "",
        "**Assumptions** (CLI options of the script):",
        "",
        markdown_table(["", "value", "how to change"], assumption_rows(plan, args)),
        "",
        "**Stages** — wall time on 1 core (= core-hours of all parts) and on "
        f"{', '.join(map(str, t.workers))} workers (cores); rows marked * add up to the total:",
        "",
        markdown_table(*stage_rows(plan)),
        "",
        "**Artifacts** (decimal GB):",
        "",
        markdown_table(*artifact_rows(plan)),
        "",
        f"**FAISS** at {t.passages / 1e6:.0f}M vectors (dimension {f['faiss_dimension']}); recall and q/s "
        f"are the measured ones at {f['faiss_vectors']:,} vectors with "
        f"{', '.join(map(str, f['faiss_nlist_measured']))} lists, "
        "not predictions (RAM to search includes the passage ids):",
        "",
        markdown_table(*faiss_rows(plan)),
        "",
        "**Scaling model per stage**",
        "",
    ]
    seen: set[str] = set()
    for stage in plan.stages:
        if (key := _group(stage)) not in seen:
            seen.add(key)
            parts.append(f"- *{key}*: {stage.model}. Limit: {stage.limit}. Peak RAM: {stage.ram}.")
    parts += ["", "**What stands out**", ""]
    parts += [f"- {line}" for line in findings(plan)]
    parts += [
        "",
        "**Recommendation**",
        "",
        f"- Encoding is the bill: onnx int8 takes ~{onnx.core_seconds / 3600:,.0f} core-hours "
        + (f"(torch fp32 ~{torch.core_seconds / 3600:,.0f})" if torch else "")
        + f", i.e. ~{duration(onnx.wall(big))} on {big} cores; int8 kept a top-10 overlap of "
        f"{f['encoding']['onnx']['top10_overlap_vs_fp32']:.2f} with fp32 on our sample. Run it on {big} "
        "cores (or several hosts over disjoint embedding shards) or on a GPU — GPU throughput was not "
        "measured here.",
        f"- On one {big}-core host the chain marked * takes ~{duration(total.wall(big))} "
        f"(~{total.core_seconds / 3600:,.0f} core-hours in all), {duration(onnx.wall(big))} of it encoding; "
        "the rest is set by single-process steps (knowledge-source resolve, the DuckDB store). "
        "The single `pages-articles-multistream.xml.bz2` spreads best (its parse steps are even); part "
        "files are parsed side by side too, but the largest one sets the floor. Give the parse "
        f"~{size(f['knowledge_source']['main_rss_stage1'] + big * f['knowledge_source']['worker_rss'])} "
        f"RAM for {big} conversion workers in one step, plus "
        f"{size(f['knowledge_source']['main_rss_stage1'])} per further step running at the same time.",
        f"- FAISS: `{best.factory}` is the smallest index that reached recall@10 ≥ {t.recall} on the "
        f"NQ queries in our benchmark ({best.params}: {best.recall_at_10:.3f}); it needs "
        f"~{size(best.search_ram_bytes)} RAM to search and ~{size(best.build_ram_bytes)} to build. By RAM: "
        + ", ".join(f"{p.factory} {size(p.search_ram_bytes)}" for p in fitting)
        + f" (PQ48 alone tops out at {_pq_recall(plan):.2f} recall). Exact `Flat` needs "
        f"{size(_flat(plan).search_ram_bytes)} and answers ~"
        f"{_flat(plan).qps_target or 0:.0f} q/s on 2 threads at this size. IVF training with a flat "
        f"coarse quantizer grows with nlist² — consider fewer lists (IVF16384) or an HNSW coarse "
        "quantizer, and re-tune nprobe on a real slice: recall at 1,024 lists does not carry over.",
        f"- Disk: ~{size(sum(a.disk_bytes for a in plan.artifacts) + best.disk_bytes)} for the artifacts "
        f"above plus `{best.factory}`, before scratch (the parse steps' stage-1 Parquet, about the size "
        "of the pages, until the resolve; DuckDB spills).",
    ]
    return "\n".join(parts) + "\n"


def _pq_recall(plan: Plan) -> float:
    return max((p.recall_at_10 for p in plan.faiss if re.fullmatch(r"IVF\d+,PQ\d+", p.factory)), default=0.0)


def _flat(plan: Plan) -> FaissPlan:
    return next(p for p in plan.faiss if p.measured_factory == "Flat")


def to_json(plan: Plan, args: argparse.Namespace) -> dict[str, Any]:
    workers = plan.target.workers
    total = pipeline_total(plan)
    return {
        "benchmark": "capacity_plan",
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "note": "extrapolated from benchmark runs on a shared 2-core machine; not measured at scale",
        "target": asdict(plan.target),
        "constants": {
            "bz2_xml_mb_per_core_second": plan.target.bz2_mb_per_core_second,
            "fragment_bytes": FRAGMENT_BYTES,
            "part_bytes": PART_BYTES,
            "passage_build_workers": PASSAGE_BUILD_WORKERS,
            "train_vectors_per_list": TRAIN_VECTORS_PER_LIST,
            "pq_train_cap": PQ_TRAIN_CAP,
            "embedding_shard": EMBEDDING_SHARD,
            "passage_id_bytes": PASSAGE_ID_BYTES,
            "results_dir": str(args.results),
        },
        "measured": plan.facts,
        "stages": [s.to_dict(workers) for s in plan.stages],
        "total": {
            "stages": [p.name for p in total.parts],
            "core_hours": round(total.core_seconds / 3600, 1),
            "wall_seconds": {str(n): round(total.wall(n)) for n in (1, *workers)},
        },
        "artifacts": [asdict(a) | {"disk_bytes": round(a.disk_bytes)} for a in plan.artifacts],
        "faiss": [
            {k: v for k, v in asdict(p).items() if k != "stage"}
            | {
                "build": p.stage.to_dict(workers),
                "disk_bytes": round(p.disk_bytes),
                "search_ram_bytes": round(p.search_ram_bytes),
                "build_ram_bytes": round(p.build_ram_bytes),
            }
            for p in plan.faiss
        ],
        "recommended_faiss": recommended_faiss(plan.faiss, plan.target.recall).factory,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=float, default=ARTICLES)
    parser.add_argument("--passages", type=float, default=PASSAGES)
    parser.add_argument("--xml-bytes", type=float, default=DUMP_XML_BYTES)
    parser.add_argument("--bz2-bytes", type=float, default=DUMP_BZ2_BYTES)
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKERS))
    parser.add_argument("--nlist", type=int, default=IVF_NLIST)
    parser.add_argument("--recall", type=float, default=RECALL_TARGET)
    parser.add_argument("--bz2-mb-per-second", type=float, default=BZ2_XML_MB_PER_CORE_SECOND)
    parser.add_argument("--part-files", type=int, default=DUMP_PART_FILES, help="part files of the dump")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="directory of the measured *.json")
    parser.add_argument("--markdown", type=Path, help="also write the README section here")
    parser.add_argument("--no-write", action="store_true", help="do not write capacity_plan.json")
    args = parser.parse_args()
    target = Target(
        articles=int(args.articles),
        passages=int(args.passages),
        xml_bytes=args.xml_bytes,
        bz2_bytes=args.bz2_bytes,
        workers=tuple(sorted(set(args.workers))),
        nlist=args.nlist,
        recall=args.recall,
        bz2_mb_per_core_second=args.bz2_mb_per_second,
        part_files=args.part_files,
    )
    plan = build_plan(args.results, target)
    print(render_text(plan, args))
    if not args.no_write:
        log(f"wrote {write_results('capacity_plan', to_json(plan, args))}")
    if args.markdown:
        args.markdown.write_text(render_markdown(plan, args))
        log(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
