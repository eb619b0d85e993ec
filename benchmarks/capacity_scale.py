"""The capacity plan's stages re-based on the measured Wikipedia-scale builds (``bench_scale.py``).

Where ``benchmarks/results/scale_n{100000,1000000}.json`` exist, the knowledge source, passages, store and
BM25 stages are scaled from the **1M-article build** (8.7 GB of enwiki-shaped XML, 4.06M passages) instead
of the excerpt's few hundred MB, and each stage's growth beyond it follows its **measured slope** between
the 100k and 1M builds: cost(target) = cost(1M) x (units(target) / units(1M)) ^ e, with
e = ln(cost(1M) / cost(100k)) / ln(units(1M) / units(100k)), never below 1 (a stage measured sublinear
is extrapolated linearly: its fixed costs are already paid at 1M). Units: XML bytes for the knowledge
source, passages for the rest. The onnx encoder's rate comes from the full dense build at 100k articles.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.capacity_model import Stage, Target, size

SIZES = (100_000, 1_000_000)
# (plan stage, scale-run stage, unit, cost measured: cpu = parallel CPU-seconds, wall = a serial step)
REBASED = (
    ("knowledge source: parse (multistream file)", "knowledge_source", "xml", "cpu"),
    ("knowledge source: resolve (DuckDB)", "knowledge_source", "xml", "resolve"),
    ("passages (kilt mode, 3 formats)", "passages", "passages", "cpu"),
    ("provenance store (DuckDB)", "provenance_store", "passages", "wall"),
    ("BM25 index (Anserini)", "bm25_index", "passages", "cpu"),
)


def scale_runs(results: Path) -> dict[int, dict[str, Any]] | None:
    """The measured 100k and 1M builds, or None when either is missing."""
    files = {n: results / f"scale_n{n}.json" for n in SIZES}
    if not all(f.is_file() for f in files.values()):
        return None
    return {n: json.loads(f.read_text()) for n, f in files.items()}


def _units(run: dict[str, Any], unit: str) -> float:
    return run["dump"]["xml_bytes"] if unit == "xml" else run["stages"]["passages"]["asset"]["passages"]


def _cost(run: dict[str, Any], stage: str, kind: str) -> float:
    measured = run["stages"][stage]
    resolve = measured["asset"]["resolve_seconds"] if stage == "knowledge_source" else 0.0
    if kind == "resolve":
        return resolve
    return measured["cpu_seconds"] - resolve if kind == "cpu" else measured["wall_seconds"]


def rebase_on_scale(stages: list[Stage], results: Path, target: Target, facts: dict[str, Any]) -> list[Stage]:
    """``stages`` with the :data:`REBASED` ones scaled from the 1M build by their measured slopes (the
    others as they are); ``facts["scale"]`` records every per-unit figure and exponent."""
    runs = scale_runs(results)
    if runs is None:
        return stages
    small, large = runs[SIZES[0]], runs[SIZES[1]]
    target_units = {"xml": target.xml_bytes, "passages": float(target.passages)}
    rebased: dict[str, Stage] = {}
    facts["scale"] = {"basis": f"{SIZES[1]:,}-article build, slopes from {SIZES[0]:,}", "stages": {}}
    for name, stage, unit, kind in REBASED:
        cost_small, cost_large = _cost(small, stage, kind), _cost(large, stage, kind)
        units_small, units_large = _units(small, unit), _units(large, unit)
        slope = math.log(cost_large / cost_small) / math.log(units_large / units_small)
        exponent = max(1.0, slope)
        scaled = cost_large * (target_units[unit] / units_large) ** exponent
        per_unit = cost_large / (units_large / 1e6 if unit == "xml" else units_large)
        unit_label = "MB XML" if unit == "xml" else "passage"
        what = "CPU" if kind == "cpu" else "wall"
        figure = f"{per_unit:.3f} s" if unit == "xml" else f"{per_unit * 1e6:.0f} µs"
        original = next(s for s in stages if s.name == name)
        basis = f"1M build: {figure} {what}/{unit_label}; slope 100k→1M {slope:.2f}"
        rss = large["stages"][stage]["peak_rss_tree"]
        before = size(small["stages"][stage]["peak_rss_tree"])
        ram = f"{size(rss)} peak RSS of the stage's process tree at 1M ({before} at 100k)"
        rebased[name] = (
            replace(original, basis=basis, parallel_cpu=scaled, ram=ram)
            if kind == "cpu"
            else replace(original, basis=basis, serial=scaled, ram=ram)
        )
        facts["scale"]["stages"][name] = {
            "measured_stage": stage,
            "cost": kind,
            "cost_seconds": {str(SIZES[0]): round(cost_small, 2), str(SIZES[1]): round(cost_large, 2)},
            "units": {str(SIZES[0]): units_small, str(SIZES[1]): units_large},
            "slope": round(slope, 3),
            "exponent_used": round(exponent, 3),
            "seconds_at_target": round(scaled),
        }
    dense = small["stages"].get("dense_index")
    if dense:
        rate = _units(small, "passages") / dense["cpu_seconds"]
        facts["scale"]["onnx_passages_per_cpu_second_100k_build"] = round(rate, 1)
        onnx = next((s for s in stages if s.name == "dense encode: onnx"), None)
        if onnx is not None:
            rebased[onnx.name] = replace(
                onnx,
                basis=f"100k build: {rate:.0f} passages/CPU-s (encode + FAISS)",
                parallel_cpu=target.passages / rate,
            )
    dense_scale = results / "dense_scale.json"
    if dense_scale.is_file():
        measured = json.loads(dense_scale.read_text())
        facts["scale"]["faiss_at_1m_vectors"] = {
            "vectors": measured["vectors"]["vectors"],
            "what": measured["what"],
            "factories": {
                name: {
                    "build_wall_s": entry["build"].get("wall_s"),
                    "build_peak_rss_bytes": entry["build"].get("peak_rss_bytes"),
                    "index_bytes": entry["report"]["bytes"],
                    "train_seconds": entry["report"]["train_seconds"],
                    "add_seconds": entry["report"]["add_seconds"],
                    "search": entry["search_in_memory"]["settings"],
                }
                for name, entry in measured["factories"].items()
            },
        }
    return [rebased.get(s.name, s) for s in stages]


def disk_per_passage_at_scale(results: Path) -> dict[str, float] | None:
    """Bytes per passage of each artifact of the 1M build (passages Parquet, JsonCollection, TSV, DuckDB
    store, Lucene index), or None when it did not run."""
    runs = scale_runs(results)
    if runs is None:
        return None
    large = runs[SIZES[1]]
    passages = _units(large, "passages")
    stages = {"parquet": "passages", "collection": "passage_collection", "tsv": "passage_tsv"}
    stages |= {"store": "provenance_store", "lucene": "bm25_index"}
    return {key: large["stages"][stage]["disk_bytes"] / passages for key, stage in stages.items()}


def faiss_finding(facts: dict[str, Any]) -> str | None:
    """The capacity plan's line on FAISS measured at the 1M build's vector count, when it was."""
    measured = facts.get("scale", {}).get("faiss_at_1m_vectors")
    if not measured:
        return None
    parts = []
    for name, f in measured["factories"].items():
        best = f["search"][0]
        parts.append(
            f"`{name}` built in {f['build_wall_s']:.0f} s at {size(f['build_peak_rss_bytes'])} peak, "
            f"{size(f['index_bytes'])}, {best['queries_per_second_batch']:,.0f} q/s at recall@10 "
            f"{best['recall_at_10']:.3f}" + (f" ({best['params']})" if best["params"] else "")
        )
    return (
        f"FAISS measured at the 1M build's {measured['vectors']:,} vectors (tiled real encodings, 2 cores): "
        + "; ".join(parts)
        + ". Flat's build peak is about twice its index; an IVF-SQ8 index is the one that fits 4 GiB there."
    )
