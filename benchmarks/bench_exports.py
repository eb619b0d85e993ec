"""Exports at Wikipedia scale (issue 27): ``kiltpipe export-hf`` and ``export-beir`` on enwiki-shaped builds.

For each size: the generated dump (``gen_wiki_dump.py``) is built through the knowledge source, passages,
store and the mapping of the 100k-record dataset drawn from it (``gen_scale_dataset.py``), as
``bench_scale.py`` builds them; then, each in a measured process of its own:

- ``kiltpipe export-hf`` (wall, CPU, peak RSS of the tree, bytes, files, the largest Parquet file against
  the 500 MB limit), and the repository read back with ``datasets.load_dataset`` for every config
  (rows equal to the snapshot's);
- ``kiltpipe export-beir`` of the drawn NQ-shaped dataset, read back with BEIR's ``GenericDataLoader``.

The peer is the snapshot's own Parquet: the export's bytes and time against reading every source file
once (``pyarrow`` scan of the same rows), printed as a ratio. Figures go to
``benchmarks/results/exports.json``; steps resume.

    .venv/bin/python benchmarks/bench_exports.py --articles 10000 100000
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import format_table, machine_info, run_measured_json
from benchmarks.scale_build import KILTPIPE, build_env, dump_file_name, measure_stages, snapshot_of
from support.generator.dump import default_out, generate
from support.generator.scale_runs import RECORDS, bench_params, ensure_dataset
from support.workspace import RESULTS_DIR, log

BUILD = ["knowledge_source", "passages", "provenance_store", "remapped_datasets"]
RESULTS = RESULTS_DIR / "exports.json"
LIMIT_MB = 500


HF_READ_BACK = """
import json, sys, datasets
out, cache = sys.argv[1], sys.argv[2]
card = open(out + "/README.md").read().split("---")[1]
import yaml
rows = {}
for config in yaml.safe_load(card)["configs"]:
    for entry in config["data_files"]:
        data = datasets.load_dataset(out, config["config_name"], split=entry["split"], cache_dir=cache)
        rows[config["config_name"] + "/" + entry["split"]] = data.num_rows
print(json.dumps({"rows": rows}))
"""

BEIR_READ_BACK = """
import json, sys
from beir.datasets.data_loader import GenericDataLoader
corpus, queries, qrels = GenericDataLoader(sys.argv[1]).load(split="dev")
print(json.dumps({"corpus": len(corpus), "queries": len(queries), "qrels": sum(map(len, qrels.values()))}))
"""

SCAN_PEER = """
import json, sys, time, glob, pyarrow.parquet as pq
started, rows = time.perf_counter(), 0
for pattern in sys.argv[1:]:
    for path in sorted(glob.glob(pattern)):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=20000):
            rows += batch.num_rows
print(json.dumps({"rows": rows, "scan_seconds": round(time.perf_counter() - started, 2)}))
"""


def _built(
    articles: int, paths: Any, dump_file: Path, dataset_dir: Path, env: Any, records: int
) -> dict[str, Any]:
    """The snapshot built (the stages an earlier run measured are kept), with its drawn dataset."""
    earlier = json.loads(RESULTS.read_text())["runs"].get(str(articles), {}) if RESULTS.is_file() else {}
    built: dict[str, Any] = dict(earlier.get("build", {})) if paths.passages_parquet.is_dir() else {}

    def draw(stage: str) -> None:
        if stage == "remapped_datasets":
            ensure_dataset(paths, dataset_dir, records=records)

    measure_stages(BUILD, built, paths=paths, dump_file=dump_file, env=env, save=lambda _: None, before=draw)
    return built


def bench_size(articles: int, seed: int, records: int = RECORDS) -> dict[str, Any]:
    from assets.storage import SnapshotPaths

    root = default_out(articles, seed)
    dump = generate(articles, root, seed=seed, parts=0)
    snapshot = snapshot_of(dump)
    data_dir, dataset_dir = root / "data", root / "dataset"
    paths = SnapshotPaths(data_dir, snapshot)
    env = build_env(root, bench_params(data_dir, snapshot, dataset_dir, dense=False))
    built = _built(articles, paths, root / dump_file_name(dump), dataset_dir, env, records)
    out = root / "exports"
    hf_dir, beir_dir = out / "hf", out / "beir-nq"
    hf, hf_run = run_measured_json(
        [
            str(KILTPIPE),
            "export-hf",
            "--data-dir",
            str(data_dir),
            "--snapshot",
            snapshot,
            "--out",
            str(hf_dir),
        ],
        env=env,
    )
    largest = max(p.stat().st_size for p in hf_dir.rglob("*.parquet"))
    log(f"export-hf: {hf_run['wall_s']:.0f} s, {hf['bytes'] / 1e6:,.0f} MB in {hf['files']} files")
    beir, beir_run = run_measured_json(
        [str(KILTPIPE), "export-beir", "--data-dir", str(data_dir), "--snapshot", snapshot, "--dataset", "nq",
         "--out", str(beir_dir)],
        env=env,
    )  # fmt: skip
    log(f"export-beir: {beir_run['wall_s']:.0f} s, {beir['corpus']:,} passages, {beir['queries']:,} queries")
    source_globs = [str(paths.passages_parquet / "*.parquet"), str(paths.pages_dir / "*.parquet")]
    source_globs += [str(paths.redirects_file), str(paths.datasets / "parquet" / "records" / "*.parquet")]
    scan, scan_run = run_measured_json([sys.executable, "-c", SCAN_PEER, *source_globs], env=env)
    hf_back, hf_back_run = run_measured_json(
        [sys.executable, "-c", HF_READ_BACK, str(hf_dir), str(out / "hf-cache")], env=env
    )
    beir_back, beir_back_run = run_measured_json(
        [sys.executable, "-c", BEIR_READ_BACK, str(beir_dir)], env=env
    )
    expected = {f"{name}/{split}": n for name, c in hf["configs"].items() for split, n in c["rows"].items()}
    return {
        "articles": articles,
        "snapshot_id": snapshot,
        "build": {
            stage: {k: row[k] for k in ("wall_seconds", "peak_rss_tree")} for stage, row in built.items()
        },
        "export_hf": {
            **hf_run,
            "bytes": hf["bytes"],
            "files": hf["files"],
            "largest_file_bytes": largest,
            "limit_bytes": LIMIT_MB * 10**6,
            "rows": expected,
        },
        "export_beir": {
            **beir_run,
            "corpus": beir["corpus"],
            "queries": beir["queries"],
            "splits": beir["splits"],
        },
        "peer_scan_of_the_sources": {**scan_run, **scan},
        "ratio_export_hf_to_scan": round(hf_run["wall_s"] / scan_run["wall_s"], 2),
        "read_back": {
            "datasets_load_dataset": {**hf_back_run, "rows_equal": hf_back["rows"] == expected},
            "beir_generic_data_loader": {**beir_back_run, **beir_back},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--records", type=int, default=RECORDS, help="records of the dataset drawn from each snapshot"
    )
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results["machine"] = machine_info()
    results.setdefault("runs", {})
    for articles in args.articles:
        log(f"exports at {articles:,} articles")
        results["runs"][str(articles)] = bench_size(articles, args.seed, args.records)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    rows = []
    for articles, run in sorted(results["runs"].items(), key=lambda kv: int(kv[0])):
        hf, beir = run["export_hf"], run["export_beir"]
        rows.append([
            f"{int(articles):,}", f"{hf['wall_s']:.0f} s", f"{hf['peak_rss_bytes'] / 2**20:,.0f} MiB",
            f"{hf['bytes'] / 1e6:,.0f} MB / {hf['files']}", f"{hf['largest_file_bytes'] / 1e6:,.0f} MB",
            f"{run['ratio_export_hf_to_scan']:.2f}x", f"{beir['wall_s']:.0f} s",
            f"{beir['peak_rss_bytes'] / 2**20:,.0f} MiB",
            str(run["read_back"]["datasets_load_dataset"]["rows_equal"]),
        ])  # fmt: skip
    print(format_table(
        ["articles", "export-hf", "RSS", "bytes / files", "largest file", "vs scan", "export-beir", "RSS",
         "load_dataset rows equal"],
        rows,
    ))  # fmt: skip
    log(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
