"""Every figure of the README, declared once: the script and arguments that measure it, the results files it
is read from, its peer and its target (pyserini's reproduction matrix is the model).

``benchmarks/run_figures.py`` runs the declared measurements (``--run``) and writes the README's table from
the results files (``benchmarks/results/*.json``), so a figure in the README is the one its script last
wrote, never a number copied by hand; ``--check`` says whether the README's table is what the results
give (``make test`` runs it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.workspace import RESULTS_DIR

__all__ = ["FIGURES", "Figure", "Results", "render_table"]


class Results:
    """The results files of a folder, read once each: ``results("bm25", "search.x40.ours.qps")``."""

    def __init__(self, folder: Path = RESULTS_DIR) -> None:
        self.folder = folder
        self._read: dict[str, Any] = {}

    def __call__(self, name: str, path: str = "") -> Any:
        if name not in self._read:
            file = self.folder / f"{name}.json"
            if not file.is_file():
                raise FileNotFoundError(
                    f"{file}: no results; run its figure (benchmarks/run_figures.py --run)"
                )
            self._read[name] = json.loads(file.read_text())
        value = self._read[name]
        for key in filter(None, path.split(".")) if path else ():
            key, _, index = key.partition("[")
            value = value[key] if key else value
            if index:
                value = value[int(index.rstrip("]"))]
        return value


def _not_met(met: bool) -> str:
    return "" if met else " (not met)"


@dataclass(frozen=True)
class Figure:
    """One row of the README's table: ``what`` it measures, the ``text`` of the figure read from the
    results files, its ``target`` (and peer), and the commands (``benchmarks/<script> <arguments>``) that
    measure it, in order."""

    what: str
    text: Callable[[Results], str]
    target: str
    commands: Sequence[str]
    results: Sequence[str]
    machine: str = "this 2-core machine"

    def row(self, results: Results) -> str:
        return f"| {self.what} | {self.text(results)} | {self.target} |"


def _kilt(r: Results) -> str:
    checked, different = r("kilt_fixtures", "checked"), r("kilt_fixtures", "different")
    return f"KILT's fixtures: **{checked - different}/{checked} values equal**"


def _converter(r: Results, prefix: str) -> float:
    return next(v["f1"] for k, v in r("text_fidelity", "converters").items() if k.startswith(prefix))


def _text_styles(r: Results) -> str:
    ours, peer = _converter(r, "ours (clean)"), _converter(r, "mwparserfromhell")
    return f"clean: parser tests F1 **{ours:.3f}**, mwparserfromhell {peer:.3f}"


def _html_fidelity(r: Results) -> str:
    html, wikitext = r("html_fidelity", "summary.html route"), r("html_fidelity", "summary.wikitext route")
    wikis = len(html) - 1
    return (
        f"{html['all']['pages']} Parsoid pages, {wikis} wikis, vs the reader's view: F1 "
        f"**{html['all']['f1']:.3f}**; wikitext route {wikitext['all']['f1']:.3f}"
    )


def _html_speed(r: Results) -> str:
    big, small = r("html_route", "sizes.100000"), r("html_route", "sizes.10000")
    speed = big["routes"]["html route"]["articles_per_second"]
    growth = small["routes"]["html route"]["articles_per_second"] / speed
    ratio, peer = big["ratio_to_wikitext_route"], big["ratio_to_mwparserfromhtml"]
    return (
        f"100k: {speed:,.0f}/s, **{ratio:.2f}x** the wikitext route{_not_met(ratio >= 1)}; **{peer:.1f}x** "
        f"mwparserfromhtml; time per article 10k→100k {growth:.2f}x"
    )


def _structured(r: Results) -> str:
    big = r("structured_scale", "sizes.1000000")
    nq = r("structured_questions", "nq.retrieval_page_questions")
    return (
        f"1M: **{big['per_article_ratio_to_smallest']:.3f}x** 10k's time per article, "
        f"{big['peak_rss_bytes'] / 2**20:,.0f} MiB; recall@5 with them, NQ dense "
        f"{nq['dense']['answer_recall@5']:.2f} → **{nq['dense@both']['answer_recall@5']:.2f}**"
    )


def _knowledge_source(r: Results) -> str:
    ratio = r("knowledge_source", "ratio_ours_over_wikiextractor")
    speed = r("knowledge_source", "ours_1x.throughput.xml_mb_per_second")
    return f"{speed:.1f} MB XML/s, **{ratio:.2f}x** wikiextractor 3.1.0{_not_met(ratio >= 2)}"


def _passages_store(r: Results) -> str:
    ratio, p50 = (
        r("passages_store", "passages.kilt.ratio_to_knowledge_source"),
        r("passages_store", "lookups.page.p50_ms"),
    )
    return f"passages **{ratio:.2f}x** the knowledge source's time; `page` p50 {p50:.2f} ms"


def _span_search(r: Results) -> str:
    window = r("span_search", "sets.window")
    same = f"{window['pairs']}/{window['pairs']} identical" if window["identical"] else "results differ"
    return f"**{window['speedup_cold']:.1f}x** the exhaustive search, {same}"


def _bm25(r: Results) -> str:
    search = r("bm25", "search.x40")
    return (
        f"indexing **{r('bm25', 'indexing.ratio_wrapper_over_direct'):.3f}x** Anserini `IndexCollection`; "
        f"search {search['ours']['qps_ids_scores']:.0f} q/s vs bm25s {search['bm25s']['qps']:.0f} q/s"
    )


def _dense_cpu(r: Results) -> str:
    onnx = r("dense", "encoding.backends.onnx")
    cosine = onnx["mean_cosine_vs_fp32"]
    return f"fused int8 ONNX **{onnx['speedup_wall']:.2f}x** fp32 sentence-transformers, cosine {cosine:.4f}"


def _dense_gpu(r: Results) -> str:
    runs = r("dense_devices_gpu", "runs")
    speedups = [run["speedup_vs_peer"] for run in runs]
    bert = next(run for run in runs if run["model"].startswith("BERT-base") and run["precision"] == "fp16")
    device = r("dense_devices_gpu", "device_name").removeprefix("NVIDIA ")
    return (
        f"{device}: **{min(speedups):.2f}–{max(speedups):.2f}x** `encode`, BERT-base fp16 "
        f"**{bert['passages_per_second']:,.0f}/s**"
    )


def _serve(r: Results) -> str:
    ours = r("serve", "ours")
    dense8 = next(run for run in ours["runs"] if run["index"] == "dense" and run["clients"] == 8)
    quotes = r("serve_quotes", "servers[0].others_with_hostile.p99_ms")
    answers = ours["answers"]
    return (
        f"8 clients: **{dense8['qps_ratio']:.1f}x** the old server's q/s; {ours['burst']['clients']} at "
        f"once: **{ours['burst']['errors']}** resets; 1 MB of `\\\"`: others' p99 **{quotes:.1f} ms**; "
        "`/answer` "
        f"×{answers['clients']}: **{answers['vs_answerer_alone']:.2f}x** the answerer alone, p99 "
        f"{answers['p99_ms']:.0f} ms"
    )


TO_BM25 = ("knowledge_source", "knowledge_source_jsonl", "passages", "passage_collection", "passage_tsv",
           "provenance_store", "bm25_index")  # fmt: skip
"""The stages from a dump to its BM25 index (and the store, the exports beside them)."""


def _scale(r: Results) -> str:
    stages = r("scale_n1000000", "stages")
    minutes = sum(stages[s]["wall_seconds"] for s in TO_BM25) / 60
    rss = max(stages[s]["peak_rss_tree"] for s in TO_BM25) / 2**30
    passages = stages["passages"]["asset"]["passages"] / 1e6
    mapped = r("scale_n1000000", "mapping.records_per_second")
    return (
        f"**1M articles** ({passages:.2f}M passages) to BM25 in {minutes:.0f} min, RSS ≤ {rss:.1f} GiB; "
        f"100k records mapped at **{mapped:,.0f}/s**"
    )


def _wikidata(r: Results) -> str:
    row = next(row for row in r("wikidata_reader", "rows") if row["entities"] >= 1_000_000)
    lbzip2 = row["ours_vs_lbzip2"]
    return (
        f"{row['entities'] / 1e6:.0f}M entities: **{row['ours_vs_qwikidata']:.1f}x** qwikidata; "
        f"**{lbzip2:.2f}x** `lbzip2 -dc`{_not_met(lbzip2 >= 0.8)}"
    )


def _kb_paths(r: Results) -> str:
    ours = r("kb_paths", "ours")
    return (
        f"3 hops p50 **{ours['p50_ms']:.2f} ms**, p99 **{ours['p99_ms']:.1f} ms**; "
        f"**{r('kb_paths', 'vs_igraph'):.0f}x** igraph, same paths"
    )


def _qa(r: Results) -> str:
    big = next(row for row in r("qa", "scale") if row["pairs"] == 1_000_000)
    qps = big["questions_per_s_k1"]
    em = r("qa", "real.nq_open_dev.indexes.dense.em")
    return (
        f"1M pairs: p50 **{big['single_p50_ms']:.1f} ms**; {qps:,.0f} q/s{_not_met(qps >= 1000)}; dup@1 "
        f"**{big['duplicate_at_1_answerer']:.1f}**; NQ-open EM {em:.3f}"
    )


def _lookups(r: Results) -> str:
    return f"by id **{r('lookups', 'point_vs_peer_throughput'):.1f}x** pyserini `doc()`"


def _exports(r: Results) -> str:
    run = r("exports", "runs.1000000")
    equal = run["read_back"]["datasets_load_dataset"]["rows_equal"]
    return (
        f"1M articles: `export-hf` {run['export_hf']['wall_s']:.0f} s, files ≤ "
        f"{run['export_hf']['largest_file_bytes'] / 1e6:.0f} MB; "
        f"read back {'equal' if equal else 'different'}"
    )


def _fetch(r: Results) -> str:
    cuts = len(r("fetch", "cuts"))
    return (
        f"{r('fetch', 'size_bytes') / 2**30:.0f} GiB cut {cuts} times: "
        f"**{r('fetch', 'worst_bytes_ratio'):.4f}x** its size sent; "
        f"**{r('fetch', 'throughput_ratio'):.2f}x** curl"
    )


def _incremental(r: Results) -> str:
    big = r("incremental_n100000")
    equal = big["checks"]["embedding_ids_identical"] and big["checks"]["passage_files_byte_identical"]
    small = r("incremental", "ratio_incremental_over_full")
    return (
        f"**{small:.3f}x** a full build (excerpt); int8 dense, 100k: "
        f"**{big['ratio_incremental_over_full']:.3f}x**, "
        f"{'every vector equal' if equal else 'vectors differ'}"
    )


def _unspaced(r: Results) -> str:
    lengths = "/".join(
        f"{r('unspaced_scripts', f'lengths.{s}.median_vs_reference'):.2f}" for s in ("ja", "zh", "th")
    )
    bm25 = f"{r('unspaced_scripts', 'bm25.th.ours.in_top5'):.2f}/{r('unspaced_scripts', 'bm25.ja.first'):.2f}"
    variants = r("unspaced_scripts", "bm25.zh.ours.mkqa_overlap")
    english = r("unspaced_scripts", "passages.ja_vs_en")
    speed = min(r("unspaced_scripts", f"speed.{s}.ours_mb_per_s") for s in ("ja", "zh"))
    return (
        f"passages **{lengths}x** 100 words; **{speed:.1f} MB/s**; BM25 **{bm25}**; MKQA zh_cn/zh_tw "
        f"**{variants:.2f}**{_not_met(variants >= 0.8)}; **{english:.1f}x** English{_not_met(english <= 1.5)}"
    )


def _suite(r: Results) -> str:
    """``make test`` from the latest run of it: a later ``suite_time.py --steps installs "make test"``
    (``suite_time_installs_test``, which a full run deletes) over the full run's."""
    full = r("suite_time")
    later = r("suite_time_installs_test") if (r.folder / "suite_time_installs_test.json").is_file() else full
    test, fast = later["seconds"]["make test"] / 60, full["seconds"]["make test-fast"] / 60
    counts = dict((word, int(n)) for n, word in re.findall(r"(\d+) (passed|failed|skipped)", later["tests"]))
    tests = f"{counts.get('passed', 0):,} passed" + "".join(
        f", {counts[word]} {word}" for word in ("failed", "skipped") if counts.get(word)
    )
    fresh = f"**{test:.1f} min** fresh clone{_not_met(test <= 15)}"
    return f"{tests}: {fresh} / **{fast:.1f} min**{_not_met(fast <= 3)}"


FIGURES: tuple[Figure, ...] = (
    Figure("KILT metrics", _kilt, "KILT's scripts", ["check_kilt_fixtures.py"], ["kilt_fixtures"]),
    Figure("text styles", _text_styles, "≥ peer", ["bench_text_fidelity.py"], ["text_fidelity"]),
    Figure(
        "[HTML route](docs/stages/knowledge-source.md)",
        _html_fidelity,
        "≥ 0.97",
        ["bench_html_fidelity.py"],
        ["html_fidelity"],
    ),
    Figure(
        "HTML route speed",
        _html_speed,
        "≥ 1x; ≥ 3x; ≤ 1.25x",
        ["bench_html_route.py --articles 2000 10000 100000"],
        ["html_route"],
    ),
    Figure(
        "tables, infoboxes",
        _structured,
        "≤ 1.25x, ≤ 4 GiB",
        ["bench_structured.py --articles 10000 100000 1000000", "structured_questions.py"],
        ["structured_scale", "structured_questions"],
    ),
    Figure(
        "dump → knowledge source",
        _knowledge_source,
        "≥ 2x",
        ["bench_knowledge_source.py"],
        ["knowledge_source"],
    ),
    Figure(
        "passages + store", _passages_store, "≤ 0.3x; ≤ 2 ms", ["bench_passages_store.py"], ["passages_store"]
    ),
    Figure("span search", _span_search, "≥ 20x", ["bench_span_search.py"], ["span_search"]),
    Figure("BM25", _bm25, "≤ 1.2x", ["bench_bm25.py"], ["bm25"]),
    Figure("dense encoding (CPU)", _dense_cpu, "≥ 2x, ≥ 0.99", ["bench_dense.py --device cpu"], ["dense"]),
    Figure(
        "our torch encoding loop",
        _dense_gpu,
        "≥ 1.5x; ≥ 5,000/s",
        ["bench_dense.py --device cuda"],
        ["dense_devices_gpu"],
        machine="a GPU (make bench-gpu)",
    ),
    Figure(
        "`kiltpipe serve`",
        _serve,
        "≥ 3x; 0; < 50 ms; ≥ 0.3x, ≤ 1 s",
        ["bench_serve.py", "bench_serve_quotes.py"],
        ["serve", "serve_quotes"],
    ),
    Figure(
        "[Wikipedia scale](docs/scale.md)",
        _scale,
        "≤ 1.25x; ≥ 1,000/s",
        ["bench_scale.py --articles 1000000"],
        ["scale_n1000000"],
    ),
    Figure(
        "Wikidata reader",
        _wikidata,
        "≥ 2x; ≥ 0.8x",
        ["bench_wikidata_reader.py --entities 100000 1000000"],
        ["wikidata_reader"],
    ),
    Figure("KB paths, 1M entities", _kb_paths, "≤ 10 / 100 ms", ["bench_kb_paths.py"], ["kb_paths"]),
    Figure(
        "QA-pair KB (RePAQ)",
        _qa,
        "≤ 20 ms; ≥ 1,000 q/s; ≥ 0.95",
        ["bench_qa.py --pairs 10000 100000 1000000"],
        ["qa"],
    ),
    Figure("passage lookups", _lookups, "≥ 1x", ["bench_lookups.py"], ["lookups"]),
    Figure(
        "exports (HF, BEIR)",
        _exports,
        "≤ 500 MB/file",
        ["bench_exports.py --articles 10000 100000 1000000"],
        ["exports"],
    ),
    Figure("fetch", _fetch, "≤ 1.01x; ≥ 0.8x", ["bench_fetch.py"], ["fetch"]),
    Figure(
        "incremental rebuild",
        _incremental,
        "≤ 0.25x; ≤ 0.15x",
        ["bench_incremental.py", "bench_incremental.py --articles 100000 --backend onnx"],
        ["incremental", "incremental_n100000"],
    ),
    Figure(
        "[ja, zh, th](docs/languages.md)",
        _unspaced,
        "±40 %; ≥ 1 MB/s; ≥ 0.9; ≥ 0.8; ≤ 1.5x",
        ["bench_unspaced_scripts.py"],
        ["unspaced_scripts"],
    ),
    Figure("`make test` / `test-fast`", _suite, "≤ 15 min / ≤ 3 min", ["suite_time.py"], ["suite_time"]),
)
"""The README's figures, in its order."""


def render_table(results: Results) -> str:
    """The README's table of figures, every row read from the results files."""
    rows = ["| what | figure | peer / target |", "|---|---|---|"]
    return "\n".join(rows + [figure.row(results) for figure in FIGURES])
