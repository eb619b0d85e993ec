"""Capacity plan for full English Wikipedia, extrapolated from the measured benchmark results.

Reads ``benchmarks/results/{knowledge_source,passages_store,bm25,dense}.json`` (plus, when still present,
the x40 benchmark's passage report and Lucene index under ``benchmarks/work/``), scales each stage to the
target corpus with an explicit per-stage model and writes ``benchmarks/results/capacity_plan.json``; full
Wikidata's rows come from ``wikidata_reader.json`` and ``kb_paths.json``, the QA-pair KB's from ``qa.json``
(:mod:`benchmarks.capacity_kb`).
Nothing is run at scale: every figure is an extrapolation from a shared 2-core machine.

    .venv/bin/python benchmarks/capacity_plan.py [--passages 22e6] [--workers 2 16 64] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.capacity_kb import (
    qa_markdown,
    qa_plan,
    qa_rows,
    wikidata_markdown,
    wikidata_plan,
    wikidata_rows,
)
from benchmarks.capacity_model import (
    ARTICLES,
    BZ2_XML_MB_PER_CORE_SECOND,
    DUMP_BZ2_BYTES,
    DUMP_PART_FILES,
    DUMP_XML_BYTES,
    EMBEDDING_SHARD,
    FRAGMENT_BYTES,
    IVF_NLIST,
    PART_BYTES,
    PASSAGE_BUILD_WORKERS,
    PASSAGE_ID_BYTES,
    PASSAGES,
    PQ_TRAIN_CAP,
    RECALL_TARGET,
    TRAIN_VECTORS_PER_LIST,
    WORKERS,
    FaissPlan,
    Plan,
    Stage,
    Target,
    duration,
    markdown_table,
    size,
)
from benchmarks.capacity_scale import faiss_finding
from benchmarks.capacity_stages import build_plan, pipeline_total, recommended_faiss
from benchmarks.common import format_table, write_results
from support.workspace import RESULTS_DIR, log


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
        [
            "Enterprise HTML dump",
            size(t.html_dump_bytes) + ("" if t.html_bytes else " (estimated)"),
            "--html-bytes",
        ],
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
    scale = f.get("scale", {}).get("stages", {}).get("passages (kilt mode, 3 formats)")
    per_article = (
        f"the 1M-article enwiki-shaped build has {scale['units']['1000000'] / 1e6:.2f} per article "
        "(enwiki ~4.3); "
        if scale
        else ""
    )
    lines = [
        f"Passages per article: {per_article}the excerpt has {ps['passages_per_article_measured']:.0f}, the "
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
    if line := faiss_finding(f):
        lines.append(line)
    if f["bm25"]["lucene_breakdown_bytes_per_passage"]:
        b = f["bm25"]["lucene_breakdown_bytes_per_passage"]
        lines.append(
            f"Lucene bytes/passage: {b['stored']:.0f} raw text + {b['docvectors']:.0f} docvectors + "
            f"{b['postings_terms_norms']:.0f} postings/terms/norms; pyserini's prebuilt wikipedia-dpr-100w "
            f"is {cc['pyserini_wikipedia_dpr_100w_bytes_per_doc_full_tar_gz']:.0f} B/doc compressed "
            f"({cc['pyserini_wikipedia_dpr_100w_bytes_per_doc_slim_tar_gz']:.0f} without text)."
        )
    return lines


def recommendation(plan: Plan) -> list[str]:
    """The plan's closing recommendation: encoding, the chain on one host, FAISS, disk."""
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
    return [
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


def render_markdown(plan: Plan, args: argparse.Namespace) -> str:
    """docs/capacity-plan.md: the assumptions, stages, artifacts, FAISS table, models and findings."""
    t, f = plan.target, plan.facts
    parts = [
        "## Capacity plan: full English Wikipedia",
        "",
        "`benchmarks/capacity_plan.py` extrapolates the measured results in `benchmarks/results/*.json` to "
        "full English Wikipedia and writes `benchmarks/results/capacity_plan.json`. **These are "
        "extrapolations, not measurements**, from a shared 2-core machine. "
        + (
            "The knowledge source, passages, store and BM25 are scaled from the measured "
            "[1M-article build](scale.md) (8.7 GB of enwiki-shaped XML, 4.06M passages; 6.5x short of "
            "enwiki's articles, 11.5x of its XML), each along its own slope measured between the 100k and "
            "1M builds (never below linear; `benchmarks/capacity_scale.py`); onnx encoding from the full "
            "dense build at 100k articles. The other encoders and the FAISS builds still come from runs on "
            "the excerpt (206,880 vectors). "
            if "scale" in f
            else "Every per-unit figure comes from runs of a few hundred MB on a replicated excerpt whose "
            "articles are long and whose vocabulary is small. "
        )
        + "Treat them as planning figures and re-measure a slice on the target hardware before buying it. "
        "Regenerate with `.venv/bin/python benchmarks/capacity_plan.py --markdown PATH` (`--help` for the "
        "options).",
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
    parts += recommendation(plan)
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
    parser.add_argument(
        "--html-bytes", type=float, default=0.0, help="the Enterprise HTML dump's bytes (0: estimated)"
    )
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
        html_bytes=args.html_bytes,
    )
    plan = build_plan(args.results, target)
    wikidata = wikidata_plan(args.results, target.workers)
    qa = qa_plan(args.results)
    print(render_text(plan, args))
    if wikidata:
        print(format_table(["full Wikidata", "estimate", "note"], wikidata_rows(wikidata)))
    if qa:
        print(format_table(["65M QA pairs", "estimate", "note"], qa_rows(qa)))
    if not args.no_write:
        log(f"wrote {write_results('capacity_plan', to_json(plan, args))}")
        if wikidata:
            log(f"wrote {write_results('capacity_wikidata', wikidata)}")
        if qa:
            log(f"wrote {write_results('capacity_qa', qa)}")
    if args.markdown:
        args.markdown.write_text(
            render_markdown(plan, args)
            + ("\n" + wikidata_markdown(wikidata) if wikidata else "")
            + ("\n" + qa_markdown(qa) if qa else "")
        )
        log(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
