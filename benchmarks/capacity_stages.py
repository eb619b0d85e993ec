"""The capacity plan's per-stage models: each stage of the pipeline scaled from its measured benchmark to
the target corpus (``benchmarks/capacity_plan.py``)."""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.capacity_model import (
    ARROW_OFFSET_BYTES,
    EMBEDDING_SHARD,
    FRAGMENT_BYTES,
    HTML_PER_XML_BYTE,
    IVF_NLIST_ALTERNATIVE,
    PART_BYTES,
    PASSAGE_BUILD_WORKERS,
    PASSAGE_ID_BYTES,
    PQ_TRAIN_CAP,
    PYSERINI_DPR_INDEX,
    TRAIN_VECTORS_PER_LIST,
    Artifact,
    FaissPlan,
    Plan,
    Stage,
    Target,
    duration,
    load,
    lucene_breakdown,
    optional_json,
    size,
)
from benchmarks.capacity_scale import disk_per_passage_at_scale, rebase_on_scale


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


def plan_html_route(results: Path, target: Target, facts: dict[str, Any]) -> list[Stage]:
    """The knowledge source from the Enterprise HTML dump instead (``bench_html_route.py``'s largest run),
    scaled by the dump's compressed bytes; nothing when it was not measured."""
    doc = optional_json(results / "html_route.json")
    if not doc or not doc.get("sizes"):
        return []
    run = max(doc["sizes"].values(), key=lambda r: r["articles"])
    html = run["routes"]["html route"]
    dump_mb = run["dump_bytes"]["enterprise_html"] / 1e6
    cpu_per_mb = html["cpu_s"] / dump_mb
    facts["html_route"] = {
        "articles": run["articles"],
        "dump_mb": round(dump_mb, 1),
        "cpu_seconds_per_dump_mb": round(cpu_per_mb, 4),
        "articles_per_second": html["articles_per_second"],
        "workers": run["workers"],
        "peak_rss": html["peak_rss_bytes"],
        "ratio_to_wikitext_route": run["ratio_to_wikitext_route"],
        "target_dump_bytes": target.html_dump_bytes,
    }
    return [
        Stage(
            name="knowledge source: parse (Enterprise HTML dump)",
            basis=f"{run['articles']:,}-article run: {cpu_per_mb:.2f} CPU-s per MB of .json.tar.gz",
            parallel_cpu=cpu_per_mb * target.html_dump_bytes / 1e6,
            max_workers=max(1, int(target.html_dump_bytes // FRAGMENT_BYTES)),
            ram=f"{size(html['peak_rss_bytes'])} peak RSS ({run['workers']} workers)",
            model="one reader streams the tar's ndjson members (gzip inflated in a thread) to conversion "
            "workers in batches; CPU scaled by the dump's compressed bytes; resolve as the XML route's",
            limit="the one reader (gzip, tar, JSON decoding) feeds every worker: its share was not measured "
            "apart, so the many-worker rows are a lower bound",
        )
    ]


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


def _ivf_plan(
    factory: str, run: dict[str, Any], ref: dict[str, Any], info: dict[str, Any], target: Target
) -> tuple[float, float, float, float, str, Stage, str]:
    """An IVF factory scaled to the target's vectors and lists: bytes per vector, fixed bytes, disk, build
    RAM, name, build stage and note. ``ref``: the IVF,SQ8 run of the same lists (its times are the coarse
    quantizer's)."""
    dim, measured_n, threads = info["dimension"], info["vectors"], info["threads"]
    n = target.passages
    build, train, measured_bytes = run["build_seconds"], run["train_seconds"], run["index_bytes"]
    nlist_m = int(re.match(r"IVF(\d+),", factory)[1])
    codebook = 256 * dim * 4 if re.search(r"PQ\d+", factory) else 0
    per_vector = (measured_bytes - nlist_m * dim * 4 - codebook) / measured_n
    fixed = target.nlist * dim * 4 + codebook
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
    return per_vector, fixed, disk, build_ram, name, stage, note


def plan_faiss(dense: dict[str, Any], target: Target) -> list[FaissPlan]:
    """Every measured factory scaled to the target: sizes split into per-vector and fixed parts."""
    info = dense["faiss"]
    measured_n, threads = info["vectors"], info["threads"]
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
        build, measured_bytes = run["build_seconds"], run["index_bytes"]
        ivf = re.match(r"IVF(\d+),", factory)
        qps_target = None
        note = ""
        if ivf:
            per_vector, fixed, disk, build_ram, name, stage, note = _ivf_plan(
                factory, run, reference.get(int(ivf[1]), run), info, target
            )
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


def _artifacts(
    target: Target, facts: dict[str, Any], per_passage: dict[str, float | None], dim: int
) -> list[Artifact]:
    """The artifacts of a build at the target size: bytes per unit, disk, what they hold in memory."""
    ks, ps, n = facts["knowledge_source"], facts["passages"], target.passages
    lucene = facts["bm25"]["lucene_breakdown_bytes_per_passage"]
    hot = f"{size(lucene['postings_terms_norms'] * n)} hot postings (page cache)" if lucene else "n/m"

    def passage_artifact(label: str, key: str, note: str) -> Artifact:
        value = per_passage[key]
        return Artifact(
            label, f"{value:.0f} B/passage" if value else "n/m", (value or 0) * n, "streamed", note
        )

    return [
        Artifact("dump (.xml.bz2, input)", "", target.bz2_bytes, "streamed", f"{size(target.xml_bytes)} XML"),
        Artifact(
            "Enterprise HTML dump (.json.tar.gz, input of the HTML route)",
            "" if target.html_bytes else f"{HTML_PER_XML_BYTE} B/B XML (3 real records; an estimate)",
            target.html_dump_bytes,
            "streamed",
            "Parsoid HTML and wikitext of every article",
        ),
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


def _more_facts(results: Path, target: Target, facts: dict[str, Any], dense: dict[str, Any]) -> None:
    """The facts the plan also records: the IVF alternative, what FAISS was measured at, when each figure
    was measured, and the cross-checks against pyserini's prebuilt index."""
    ps = facts["passages"]
    dim = dense["faiss"]["dimension"]
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


def build_plan(results: Path, target: Target) -> Plan:
    facts: dict[str, Any] = {}
    stages = plan_knowledge_source(results, target, facts)
    stages += plan_html_route(results, target, facts)
    stages += plan_passages_and_store(results, target, facts)
    bm25, bm25_info = plan_bm25(results, target, facts)
    stages.append(bm25)
    dense = load(results, "dense")
    encoding = plan_encoding(dense, target, facts)
    stages += encoding
    faiss = plan_faiss(dense, target)
    stages += [p.stage for p in faiss]
    stages = rebase_on_scale(stages, results, target, facts)  # the measured 1M build, where it ran
    ps = facts["passages"]
    report = bm25_info["passage_report"]
    per_passage: dict[str, float | None] = {
        "parquet": None,
        "collection": bm25_info["collection_bytes_per_passage"],
        "tsv": None,
    }
    if report:
        per_passage = {k: report["bytes"][k] / report["passages"] for k in per_passage}
        facts["passages"]["mean_words"] = round(report["mean_words"], 1)
    measured_disk = disk_per_passage_at_scale(results)  # the 1M build's artifacts, where it ran
    if measured_disk:
        per_passage.update({k: measured_disk[k] for k in per_passage})
        ps["store_bytes_per_passage"] = round(measured_disk["store"], 1)
        facts["bm25"]["index_bytes_per_passage"] = round(measured_disk["lucene"], 1)
    artifacts = _artifacts(target, facts, per_passage, dense["faiss"]["dimension"])
    _more_facts(results, target, facts, dense)
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
