"""Full builds of a generated Wikipedia (``gen_wiki_dump.py``) at a given size, stage by stage, through the
Dagster definitions (``kiltpipe build --select``), measured: wall time, CPU time, peak RSS of the whole
process tree, and the disk of each stage's artifact.

Each stage is one ``kiltpipe build`` of that asset (its checks included) over the snapshot the earlier
stages published, in a process of its own, so that its peak RSS is its own. Results go to
``benchmarks/results/scale_n{N}.json`` stage by stage: an interrupted run resumes at the first stage not
measured (``--again`` measures the chosen stages anew). With results of several sizes present, the summary
prints each stage's cost per article against the smallest size's (the issue's linearity target: at most
1.25x), its peak RSS against the previous size's, and writes the log-log chart ``docs/img/scale.png``.

    make bench-scale SIZE=10000            # = .venv/bin/python benchmarks/bench_scale.py --articles 10000
    .venv/bin/python benchmarks/bench_scale.py --articles 100000 --stages knowledge_source passages
    .venv/bin/python benchmarks/bench_scale.py --summary   # the table and chart of every size measured
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import format_table, machine_info, run_measured
from benchmarks.scale_build import (
    STAGES,
    build_env,
    dump_file_name,
    measure_stages,
    snapshot_of,
)
from benchmarks.scale_sensor import landing_files, sensor_build, sensor_outcome, sensor_summary
from benchmarks.scale_tables import (
    LOOKUP_HEADERS,
    MAPPING_HEADERS,
    MONTH_HEADERS,
    lookup_rows,
    mapping_rows,
    month_against_full,
    month_rows,
)
from support.generator.dump import default_out, generate
from support.generator.scale_runs import (
    EVALUATION_QUERIES,
    RECORDS,
    bench_params,
    ensure_dataset,
    mapped_onto_source,
    mapping_rate,
    remapped_against_truth,
)
from support.workspace import REPO_ROOT, RESULTS_DIR, log

DATASET_STAGES = ("remapped_datasets", "retrieval_evaluation")  # on the dataset drawn from the snapshot
DENSE_UP_TO = 100_000  # the full dense stage on CPU up to this many articles (the issue: GPU at 1M)
GROWTH_TARGET = 1.25  # cost per article against the smallest size's
RSS_GROWTH_TARGET = 1.5  # peak RSS at 1M against the previous size's (100k)
RSS_GROWTH_AT = 1_000_000
RSS_CAP = 4 * 2**30  # peak RSS of any stage
SENSOR_TIMEOUT = 4 * 3600.0  # seconds from landing to the sensor's run finished


def results_path(articles: int) -> Path:
    return RESULTS_DIR / f"scale_n{articles}.json"


def measure(
    articles: int, stages: list[str], *, seed: int, again: bool, parts: int, records: int = RECORDS
) -> dict[str, Any]:
    from assets.storage import SnapshotPaths

    root = default_out(articles, seed)
    dump = generate(articles, root, seed=seed, parts=parts)
    snapshot = snapshot_of(dump)
    data_dir = root / "data"
    path = results_path(articles)
    results = json.loads(path.read_text()) if path.is_file() else {}
    if results.get("dump", {}).get("arguments") != dump["arguments"]:
        results = {}
    results.update(articles=articles, dump=dump, machine=machine_info())
    results.setdefault("stages", {})
    if again:
        for stage in stages:
            results["stages"].pop(stage, None)
    if not results["stages"]:
        shutil.rmtree(data_dir, ignore_errors=True)
    dataset_dir = root / "dataset"
    paths = SnapshotPaths(data_dir, snapshot)
    dense = "dense_index" in stages or paths.dense_index.exists()  # evaluated when built
    env = build_env(root, bench_params(data_dir, snapshot, dataset_dir, dense=dense))

    def draw(stage: str) -> None:
        if stage in DATASET_STAGES:
            results["dataset"] = ensure_dataset(paths, dataset_dir, records=records)

    def save(stage: str) -> None:
        if stage == "remapped_datasets":
            results["mapping"] = {
                **mapping_rate(paths, results["stages"][stage]["wall_seconds"]),
                "onto_source": mapped_onto_source(dataset_dir, paths),
            }
            log(f"mapping: {json.dumps(results['mapping'])[:400]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2) + "\n")

    measure_stages(
        stages,
        results["stages"],
        paths=paths,
        dump_file=root / dump_file_name(dump),
        env=env,
        save=save,
        before=draw,
    )
    rebuilt = again and LOOKUP_NEEDS & set(stages)
    if set(results["stages"]) >= LOOKUP_NEEDS and (rebuilt or "lookups" not in results):
        results.update(measure_lookups(paths, dataset_dir, env))
        save("lookups")
    return results


LOOKUP_NEEDS = {"provenance_store", "bm25_index", "remapped_datasets"}


def measure_lookups(paths: Any, dataset_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """Part 5: page/passage/span lookups and ``kiltpipe serve`` BM25 (``scale_lookups.py``, its own
    process)."""
    script = REPO_ROOT / "benchmarks" / "scale_lookups.py"
    command = [sys.executable, str(script), "--data-dir", str(paths.data_dir), "--snapshot",
               paths.snapshot_id, "--dataset", str(dataset_dir)]  # fmt: skip
    log("lookups and serve: " + " ".join(command[1:]))
    run = run_measured(command, env=env, interval=0.5)
    if run.returncode != 0:
        raise SystemExit(f"lookups failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return {**json.loads(run.stdout), "lookups_peak_rss_tree": run.peak_rss_tree}


MONTH_STAGES = ["knowledge_source", "passages", "provenance_store", "bm25_index", "remapped_datasets"]


PEER_STAGES = ("knowledge_source", "passages")  # N+1 built from scratch: the byte-reproducible stages
# (the DuckDB store and Lucene's segment files carry random ids: compared by content in the tests)
VOLATILE_OUTPUTS = {"report.json", "report.run.json", "manifest.json", "manifest.run.json"}


def artifact_files(paths: Any, stage: str) -> dict[str, Path]:
    """The files of a stage's artifacts but its reports and manifests (timings, build times, reuse)."""
    files: dict[str, Path] = {}
    for name in STAGES[stage][1]:
        root = getattr(paths, name)
        for path in sorted(root.rglob("*")) if root.is_dir() else [root] if root.is_file() else []:
            if path.is_file() and path.name not in VOLATILE_OUTPUTS:
                files[f"{name}/{path.relative_to(root)}"] = path
    return files


def same_outputs(paths: Any, peer: Any, stage: str) -> dict[str, Any]:
    """Whether the month's build of ``stage`` wrote the full build's files byte for byte."""
    ours, theirs = artifact_files(paths, stage), artifact_files(peer, stage)
    both = ours.keys() & theirs.keys()
    differing = sorted(name for name in both if not filecmp.cmp(ours[name], theirs[name], shallow=False))
    only = sorted(ours.keys() ^ theirs.keys())
    return {
        "files": len(theirs),
        "bytes": sum(p.stat().st_size for p in theirs.values()),
        "equal": not differing and not only,
        "differing": differing[:10],
        "only_one_side": only[:10],
    }


def measure_month(
    articles: int, month: int, stages: list[str], *, seed: int, again: bool, peer: bool = False
) -> dict[str, Any]:
    """Snapshot N+1 (``gen_wiki_dump.py --month``) built into N's data dir, so that the build reuses N's
    unchanged pages (``snapshots.incremental``) and the dataset drawn from N is remapped onto N+1 with N as
    its evidence; then checked against the month's truth (:func:`remapped_against_truth`). ``again``
    measures ``stages`` anew. ``peer``: the same stages (of :data:`PEER_STAGES`) also built from scratch
    (``snapshots.incremental: false``) into a data dir of their own, measured as the peer of the ratio,
    and their files compared with the month's byte for byte."""
    from assets.storage import SnapshotPaths

    path = results_path(articles)
    results = json.loads(path.read_text()) if path.is_file() else {}
    missing = [s for s in ("provenance_store", "remapped_datasets") if s not in results.get("stages", {})]
    if missing:
        raise SystemExit(f"measure snapshot N first (--articles {articles}): {missing} not measured")
    base_root, root = default_out(articles, seed), default_out(articles, seed, month)
    base = SnapshotPaths(base_root / "data", snapshot_of(results["dump"]))
    dump = generate(articles, root, seed=seed, month=month)
    paths = SnapshotPaths(base.data_dir, snapshot_of(dump))
    section = results.get("month") or {}
    if section.get("dump", {}).get("arguments") != dump["arguments"]:
        section = {}
    section.update(dump={k: dump[k] for k in ("arguments", "changes", "articles", "pages")})
    section.setdefault("stages", {})
    for stage in stages if again else ():
        section["stages"].pop(stage, None)
    results["month"] = section
    dataset_dir = base_root / "dataset"
    env = build_env(root, bench_params(base.data_dir, base.snapshot_id, dataset_dir, dense=False))
    bleu_threshold = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())["datasets"]["bleu_threshold"]

    def save(stage: str) -> None:
        if stage == "remapped_datasets":
            section["mapping"] = mapping_rate(paths, section["stages"][stage]["wall_seconds"])
            section["against_truth"] = remapped_against_truth(
                dataset_dir, base, paths, root / "truth.jsonl", bleu_threshold=bleu_threshold
            )
            log(f"remap onto N+1: {json.dumps(section['against_truth'])[:600]}")
        path.write_text(json.dumps(results, indent=2) + "\n")

    measure_stages(
        [stage for stage in MONTH_STAGES if stage in stages],
        section["stages"],
        paths=paths,
        dump_file=root / dump_file_name(dump),
        env=env,
        save=save,
    )
    if peer:
        peer_paths = SnapshotPaths(root / "full-data", paths.snapshot_id)
        params = bench_params(peer_paths.data_dir, base.snapshot_id, dataset_dir, dense=False)
        values = yaml.safe_load(params.read_text())
        values["snapshots"]["incremental"] = False
        params.write_text(yaml.safe_dump(values, sort_keys=False))
        section.setdefault("full_peer", {})
        section.setdefault("equal_to_full", {})
        for stage in stages if again else ():
            section["full_peer"].pop(stage, None)

        def compare(stage: str) -> None:
            section["equal_to_full"][stage] = same_outputs(paths, peer_paths, stage)
            log(f"{stage}: month build equal to the full build: {section['equal_to_full'][stage]}")
            path.write_text(json.dumps(results, indent=2) + "\n")

        measure_stages(
            [stage for stage in PEER_STAGES if stage in stages and stage in section["stages"]],
            section["full_peer"],
            paths=peer_paths,
            dump_file=root / dump_file_name(dump),
            env=build_env(root, params),
            save=compare,
        )
    return results


def measure_sensor(articles: int, month: int, *, seed: int, timeout: float) -> dict[str, Any]:
    """Snapshot N+1 built by the landing sensor of a running daemon (:mod:`benchmarks.scale_sensor`) into
    N's data dir, incremental from N, then remapped against the month's truth."""
    from assets.storage import SnapshotPaths

    path = results_path(articles)
    results = json.loads(path.read_text()) if path.is_file() else {}
    if "remapped_datasets" not in results.get("stages", {}):
        raise SystemExit(f"measure snapshot N first (--articles {articles})")
    base_root, root = default_out(articles, seed), default_out(articles, seed, month)
    base = SnapshotPaths(base_root / "data", snapshot_of(results["dump"]))
    dump = generate(articles, root, seed=seed, month=month)
    paths = SnapshotPaths(base.data_dir, snapshot_of(dump))
    if paths.root.exists():
        raise SystemExit(
            f"{paths.root} is built already (the sensor builds a snapshot once): remove it first"
        )
    dataset_dir = base_root / "dataset"
    env = build_env(root, bench_params(base.data_dir, base.snapshot_id, dataset_dir, dense=False))
    env.update(DAGSTER_HOME=str(root / "sensor_home"), KILT_LANDING_DIR=str(root / "landing"))
    files = landing_files(root, paths.snapshot_id)
    log_file = root / "sensor-daemon.log"
    sensor = sensor_build(env, root / "landing", files, paths.snapshot_id, timeout=timeout, log_file=log_file)
    walls = {stage: row["wall_seconds"] for stage, row in results["stages"].items() if stage != "dense_index"}
    bleu_threshold = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())["datasets"]["bleu_threshold"]
    sensor.update(
        sensor_outcome(sensor, base, paths, walls, dataset_dir, root / "truth.jsonl", bleu_threshold)
    )
    sensor.update(measured_at=time.strftime("%Y-%m-%dT%H:%M:%S"), machine=machine_info())
    results.setdefault("month", {})["sensor"] = sensor
    path.write_text(json.dumps(results, indent=2) + "\n")
    return sensor


def _runs() -> list[dict[str, Any]]:
    return sorted(
        (json.loads(p.read_text()) for p in RESULTS_DIR.glob("scale_n*.json")), key=lambda r: r["articles"]
    )


HEADERS = ["stage", "articles", "wall s", "CPU s", "ms/article", "x smallest", "x previous", "peak RSS MiB",
           "RSS x previous", "disk MB", "targets"]  # fmt: skip


def summary_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """Per stage and size: time, CPU, cost per article against the smallest and the previous size, peak RSS
    (and its growth from the previous size), disk."""
    rows = []
    for stage in STAGES:
        measured = [(r["articles"], r["stages"][stage]) for r in runs if stage in r["stages"]]
        for index, (articles, row) in enumerate(measured):
            per_article = row["wall_seconds"] / articles
            first_n, first = measured[0]
            previous_n, previous = measured[max(0, index - 1)]
            rss = row["peak_rss_tree"] / 2**20
            growth = per_article / (first["wall_seconds"] / first_n)
            rss_growth = row["peak_rss_tree"] / previous["peak_rss_tree"]
            within = growth <= GROWTH_TARGET and row["peak_rss_tree"] <= RSS_CAP
            if articles >= RSS_GROWTH_AT:  # the rule: 1M against 100k
                within = within and rss_growth <= RSS_GROWTH_TARGET
            rows.append([
                stage, f"{articles:,}", f"{row['wall_seconds']:,.0f}", f"{row['cpu_seconds']:,.0f}",
                f"{per_article * 1000:.2f}", f"{growth:.2f}",
                f"{per_article / (previous['wall_seconds'] / previous_n):.2f}", f"{rss:,.0f}",
                f"{rss_growth:.2f}", f"{row['disk_bytes'] / 1e6:,.0f}", "met" if within else "**missed**",
            ])  # fmt: skip
    return rows


def dump_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """The generated dumps' statistics beside enwiki's."""
    enwiki = runs[0]["dump"]["enwiki"] if runs else {}
    rows = []
    for run in runs:
        dump = run["dump"]
        passages = run["stages"].get("passages", {}).get("asset", {}).get("passages")
        sizes = dump["article_wikitext_bytes"]
        rows.append([
            f"{run['articles']:,}", f"{dump['redirects_per_article']:.2f}",
            f"{dump['disambiguation_pages']:,}", f"{sum(dump['other_namespace_pages'].values()):,}",
            f"{passages / run['articles']:.2f}" if passages else "-", f"{dump['links_per_article']:.1f}",
            f"{dump['xml_bytes_per_article']:,}", f"{sizes['median']:,} / {sizes['mean']:,}",
            " ".join(f"{v:.2f}" for v in sizes["share_below"].values()), f"{dump['xml_bytes'] / 1e9:.2f}",
        ])  # fmt: skip
    if enwiki:
        rows.append([
            f"enwiki: {enwiki['articles']:,}", f"{enwiki['redirects_per_article']:.2f}", "~5 %",
            "~0.8 per article", f"{enwiki['passages_per_article']:.1f}", "n/a",
            f"~{enwiki['xml_bytes_per_article']:,}", "~3,900 / ~6,600",
            " ".join(f"{float(share):.2f}" for share in enwiki["wikitext_bytes_quantiles"]), "~100",
        ])  # fmt: skip
    return rows


DUMP_HEADERS = ["articles", "redirects / article", "disambiguation", "other namespaces", "passages / article",
                "links / article", "XML bytes / article", "wikitext median / mean B",
                "share < 0.7 / 1.4 / 2.8 / 7 / 14 KB", "XML GB"]  # fmt: skip


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``benchmarks/results/scale.json`` in the issue's shape (every size's stages, the month's incremental
    build against the full one, mapping, lookups, the generated dumps), each run with its machine."""
    out: dict[str, Any] = {"runs": [], "generated": {}, "mapping": {}, "incremental": {}, "lookups": {}}
    for run in runs:
        articles = run["articles"]
        out["runs"].append({
            "articles": articles,
            "machine": run["machine"],
            "stages": {stage: {"wall_s": row["wall_seconds"], "cpu_s": row["cpu_seconds"],
                               "peak_rss_bytes": row["peak_rss_tree"], "disk_bytes": row["disk_bytes"]}
                       for stage, row in run["stages"].items()},
        })  # fmt: skip
        out["generated"][articles] = {k: v for k, v in run["dump"].items() if k not in ("files", "enwiki")}
        if "mapping" in run:
            out["mapping"][articles] = {**run["mapping"], "dataset": run.get("dataset")}
        if "lookups" in run:
            out["lookups"][articles] = {k: run[k] for k in ("lookups", "serve_bm25_one_client") if k in run}
        month = run.get("month") or {}
        if month.get("stages"):
            incremental, full = month_against_full(run)
            out["incremental"][articles] = {
                "stages": list(month["stages"]),
                "incremental_wall_s": round(incremental, 1),
                "full_wall_s_of_n": round(full, 1),
                "ratio_to_full": round(incremental / full, 3) if full else None,
                "changes": month["dump"]["changes"],
                "remap": {"mapping": month.get("mapping"), "against_truth": month.get("against_truth")},
            }
            if month.get("full_peer"):  # N+1 built from scratch in the same run: per stage
                out["incremental"][articles]["against_full_build_of_n_plus_1"] = {
                    stage: {
                        "incremental_wall_s": month["stages"][stage]["wall_seconds"],
                        "full_wall_s": peer["wall_seconds"],
                        "ratio": round(month["stages"][stage]["wall_seconds"] / peer["wall_seconds"], 3),
                        "reused": {k: v for k, v in month["stages"][stage]["asset"].items()
                                   if k in ("pages_reused", "reuse", "reused_pages", "reuse_ratio")},
                        "outputs_equal": month.get("equal_to_full", {}).get(stage),
                    }
                    for stage, peer in month["full_peer"].items() if stage in month["stages"]
                }  # fmt: skip
        if month.get("sensor"):  # N+1 built by the landing sensor of a running daemon (--sensor)
            out["incremental"].setdefault(articles, {})["landing_sensor"] = sensor_summary(month["sensor"])
    dense = RESULTS_DIR / "dense_scale.json"  # FAISS at the 1M build's vector count (bench_dense_scale.py)
    if dense.is_file():
        out["dense_faiss_at_1m_vectors"] = json.loads(dense.read_text())
    return out


def _markdown(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def write_docs(runs: list[dict[str, Any]], page: Path) -> None:
    """Replace the measured part of ``docs/scale.md`` (between its markers) with the latest figures."""
    begin, end = "<!-- bench_scale:begin -->", "<!-- bench_scale:end -->"
    text = page.read_text()
    head, rest = text.split(begin, 1)
    machine = runs[-1]["machine"]
    body = (
        f"\n\nMeasured on {machine['cpu_model']} ({machine['cpu_count']} cores, "
        f"{machine['memory_bytes'] / 2**30:.0f} GiB), `make bench-scale SIZE=N`.\n\n"
        f"**The generated dumps** beside enwiki's figures:\n\n{_markdown(DUMP_HEADERS, dump_rows(runs))}\n\n"
        f"**Each stage** (`kiltpipe build --select` of the stage, its checks included, in a process of its "
        f"own):\n\n{_markdown(HEADERS, summary_rows(runs))}\n\n"
        f"**The drawn dataset mapped onto its own snapshot** (`remapped_datasets`), and the retrieval "
        f"evaluation of its first {EVALUATION_QUERIES:,} records per split:\n\n"
        f"{_markdown(MAPPING_HEADERS, mapping_rows(runs))}\n\n"
        f"**Remapped onto a month later** (snapshot N+1 built into N's data dir, N as the evidence), against "
        f"the generator's truth:\n\n{_markdown(MONTH_HEADERS, month_rows(runs))}\n\n"
        f"**Lookups** (10,000 random ones of each kind, `ProvenanceStore`; peer: pyserini's "
        f"`LuceneSearcher.doc`) **and `kiltpipe serve`** (NQ dev questions, k=10, one client; targets "
        f"p50 <= 2 ms and p99 <= 20 ms, serve p50 <= 20 ms):\n\n"
        f"{_markdown(LOOKUP_HEADERS, lookup_rows(runs))}\n\n"
    )
    page.write_text(head + begin + body + end + rest.split(end, 1)[1])


def _chart(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for stage in STAGES:
        points = [(r["articles"], r["stages"][stage]["wall_seconds"]) for r in runs if stage in r["stages"]]
        if len(points) > 1:
            axes.plot(*zip(*points, strict=True), marker="o", label=stage)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("articles")
    axes.set_ylabel("wall seconds (2 cores)")
    axes.set_title("kiltpipe build per stage against dump size")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", type=int, default=0)
    parser.add_argument(
        "--records", type=int, default=RECORDS, help="records of the dataset drawn from the snapshot"
    )
    parser.add_argument("--stages", nargs="+", choices=list(STAGES))
    parser.add_argument("--month", type=int, help="then snapshot N+1 of this month seed, remapped (part 3/4)")
    parser.add_argument(
        "--full-peer",
        action="store_true",
        help="with --month: also build N+1 from scratch (the ratio's peer, outputs compared)",
    )
    parser.add_argument("--month-only", action="store_true", help="with --month: N as measured already")
    parser.add_argument(
        "--sensor",
        action="store_true",
        help="with --month: N+1 lands in the folder of a running daemon, whose landing sensor builds it",
    )
    parser.add_argument("--again", action="store_true", help="measure the stages anew (default: every one)")
    parser.add_argument("--summary", action="store_true", help="only print the table of every size measured")
    parser.add_argument("--write-docs", action="store_true", help="put the tables into docs/scale.md")
    args = parser.parse_args()
    if not args.summary:
        if args.articles is None:
            parser.error("--articles is required (or --summary)")
        stages = args.stages or [s for s in STAGES if s != "dense_index" or args.articles <= DENSE_UP_TO]
        if not args.month_only:
            measure(
                args.articles,
                stages,
                seed=args.seed,
                again=args.again,
                parts=args.parts,
                records=args.records,
            )
        if args.month is not None and args.sensor:
            measure_sensor(args.articles, args.month, seed=args.seed, timeout=SENSOR_TIMEOUT)
        elif args.month is not None:
            month_stages = [s for s in (args.stages or MONTH_STAGES) if s in MONTH_STAGES]
            measure_month(
                args.articles, args.month, month_stages, seed=args.seed, again=args.again, peer=args.full_peer
            )
    runs = _runs()
    (RESULTS_DIR / "scale.json").write_text(json.dumps(combined(runs), indent=2) + "\n")
    print(format_table(DUMP_HEADERS, dump_rows(runs)))
    print(format_table(HEADERS, summary_rows(runs)))
    if len(runs) > 1:
        _chart(runs, REPO_ROOT / "docs" / "img" / "scale.png")
    if args.write_docs:
        write_docs(runs, REPO_ROOT / "docs" / "scale.md")


if __name__ == "__main__":
    main()
