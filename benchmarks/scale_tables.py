"""The tables of ``docs/scale.md`` for parts 3-5 of the scale runs (``bench_scale.py --write-docs``): the
drawn dataset mapped onto its own snapshot and onto a month later (against the truth), the month's build
against the full one, and lookups and serving."""

from __future__ import annotations

from typing import Any

MAPPING_HEADERS = ["articles", "records", "provenance spans", "records/s (mapping)", "records/s (stage)",
                   "peak RSS MiB", "onto N: identical", "evaluation: queries", "evaluation s",
                   "evaluation ms/query", "BM25 R-precision"]  # fmt: skip
MONTH_HEADERS = ["articles", "untouched spans identical", "kept paragraphs, same text",
                 "edited spans: kept / dropped (BLEU)", "on deleted or emptied pages", "as expected",
                 "report drops = truth's", "records/s",
                 "month build s (KS→mapping)", "full build of N s", "ratio"]  # fmt: skip
LOOKUP_HEADERS = ["articles", "page by id p50 / p99 ms", "page by title", "passage", "span",
                  "pyserini doc() p50 / p99 (peer)", "passage p50 / peer", "serve BM25 1 client p50 / p99 ms",
                  "targets"]  # fmt: skip


def month_against_full(run: dict[str, Any]) -> tuple[float, float]:
    """Wall seconds of the month's build of N+1 (its stages) and of the same stages' full build of N."""
    month = run["month"]["stages"]
    incremental = sum(row["wall_seconds"] for row in month.values())
    return incremental, sum(run["stages"][stage]["wall_seconds"] for stage in month if stage in run["stages"])


def _evaluation(run: dict[str, Any]) -> tuple[str, str, str, str]:
    asset = run["stages"].get("retrieval_evaluation")
    if not asset:
        return "-", "-", "-", "-"
    results = asset["asset"].get("results", {})
    splits = results.get("splits", [])
    queries = sum(s["queries"] for s in splits)
    rprec = ", ".join(
        f"{s['dataset']} {s['indexes']['bm25']['Rprec']:.2f}" for s in splits if "bm25" in s["indexes"]
    )
    seconds = asset["wall_seconds"]
    return f"{queries:,}", f"{seconds:,.0f}", f"{seconds * 1000 / max(1, queries):.1f}", rprec or "-"


def mapping_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for run in runs:
        mapping, stage = run.get("mapping"), run["stages"].get("remapped_datasets")
        if not mapping or not stage:
            continue
        onto = mapping["onto_source"]
        rows.append([
            f"{run['articles']:,}", f"{mapping['records']:,}", f"{onto['provenance']:,}",
            f"{mapping['records_per_second']:,.0f}", f"{mapping['stage_records_per_second']:,.0f}",
            f"{stage['peak_rss_tree'] / 2**20:,.0f}", f"{onto['identical_fraction']:.2%}", *_evaluation(run),
        ])  # fmt: skip
    return rows


def month_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for run in runs:
        month = run.get("month") or {}
        truth = month.get("against_truth")
        if not truth:
            continue
        classes = truth["classes"]
        untouched = sum(classes.get(k, 0) for k in ("span_unchanged", "span_renamed", "page_unchanged",
                                                    "page_renamed", "page_edited"))  # fmt: skip
        gone = classes.get("provenance_on_deleted_page", 0) + classes.get("provenance_on_emptied_page", 0)
        incremental, full = month_against_full(run)
        kept, dropped = (
            classes.get("span_changed_bleu_kept", 0),
            classes.get("span_changed_bleu_below_threshold", 0),
        )
        rows.append([
            f"{run['articles']:,}", f"{untouched:,}",
            f"{classes.get('span_on_edited_page_paragraph_kept', 0):,}",
            f"{kept:,} / {dropped:,}", f"{gone:,}", f"{truth['as_expected_fraction']:.2%}",
            "yes" if truth["report_counts_equal_truth"] else "**no**",
            f"{month['mapping']['records_per_second']:,.0f}", f"{incremental:,.0f}", f"{full:,.0f}",
            f"{incremental / full:.2f}" if full else "-",
        ])  # fmt: skip
    return rows


def _latency(measured: dict[str, Any]) -> str:
    return f"{measured['p50_ms']:.2f} / {measured['p99_ms']:.2f}"


def lookup_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for run in runs:
        lookups, serve = run.get("lookups"), run.get("serve_bm25_one_client")
        if not lookups or not serve:
            continue
        met = all(lookups[k]["targets_met"] for k in ("page_by_id", "page_by_title", "passage", "span"))
        rows.append([
            f"{run['articles']:,}", *(_latency(lookups[kind]) for kind in ("page_by_id", "page_by_title",
            "passage", "span", "peer_pyserini_doc")), f"{lookups['passage_p50_ratio_to_pyserini']:.1f}x",
            f"{serve['p50_ms']:.1f} / {serve['p99_ms']:.1f}",
            "met" if met and serve["target_met"] else "**missed**",
        ])  # fmt: skip
    return rows
