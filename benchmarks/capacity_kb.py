"""The capacity plan's rows for the knowledge bases beside a snapshot, full Wikidata and a PAQ-sized QA-pair
KB (``capacity_plan.py`` prints and writes them), extrapolated from the measured benchmarks:
``benchmarks/results/wikidata_reader.json`` (the reader at 1M generated entities: its JSON bytes per second
and CPU, lbzip2's CPU for decompression alone) and ``kb_paths.json`` (the KB graph's bytes per statement and
its search latency at 1M entities). Nothing runs at scale; every figure says what it is scaled from.

The model: reading is decompression (parallel inside the file: scales with cores) plus parsing (one core,
the reader's main thread): the wall time on ``c`` cores is ``max(decode CPU / c, parse CPU)`` per pass,
where decode CPU is lbzip2's and parse CPU is the rest of the reader's CPU, both per byte of JSON. The
``sitelinked`` scope reads the dump twice (the second pass decodes only labels, counted as a whole pass).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.capacity_model import duration, markdown_table, size

WIKIDATA = {
    "entities": 115_000_000,
    "json_bytes": 1.5e12,
    "bz2_bytes": 1.0e11,
    "item_statements": 8.5e8,
}
"""Full Wikidata (2025-26): ~115M entities; ``wikidata-*-all.json.bz2`` ~100 GB, ~1.5 TB of JSON; item-valued
statements ~0.85 G (the generator draws ~7.3 per entity, Wikidata's items ~7.4): the assumptions scaled to."""
ENWIKI_SITELINKED = 7_000_000
"""Items with an enwiki sitelink: the subjects of the default scope for an enwiki snapshot."""


def wikidata_plan(results: Path, cores: list[int] | tuple[int, ...]) -> dict | None:
    """The plan from ``results`` (None when the reader and paths benchmarks have not run)."""
    if not ((results / "wikidata_reader.json").is_file() and (results / "kb_paths.json").is_file()):
        return None
    reader = json.loads((results / "wikidata_reader.json").read_text())
    paths = json.loads((results / "kb_paths.json").read_text())
    row = max(reader["rows"], key=lambda r: r["entities"])
    gb = row["json_bytes"] / 1e9
    decode_cpu = row["lbzip2"]["cpu_s"] / gb  # core-seconds per GB of JSON
    parse_cpu = max(row["ours"]["cpu_s"] - row["lbzip2"]["cpu_s"], 0.0) / gb
    full_gb = WIKIDATA["json_bytes"] / 1e9
    passes = 2  # sitelinked: entities and statements, then the labels of what they name
    read = {c: passes * full_gb * max(decode_cpu / c, parse_cpu) for c in cores}
    bytes_per_statement = paths["graph_bytes"] / paths["statements"]
    sitelinked_share = ENWIKI_SITELINKED / WIKIDATA["entities"]
    graph = {
        "all": WIKIDATA["item_statements"] * bytes_per_statement,
        "sitelinked (enwiki)": WIKIDATA["item_statements"] * sitelinked_share * bytes_per_statement,
    }
    return {
        "scaled_from": {"reader_entities": row["entities"], "paths_entities": paths["entities"]},
        "assumptions": WIKIDATA,
        "decode_core_s_per_gb": round(decode_cpu, 2),
        "parse_core_s_per_gb": round(parse_cpu, 2),
        "read_seconds_by_cores": {str(c): round(s) for c, s in read.items()},
        "graph_bytes_per_statement": round(bytes_per_statement, 1),
        "graph_bytes": {k: round(v) for k, v in graph.items()},
        "graph_build_peak_bytes": round(WIKIDATA["item_statements"] * sitelinked_share * 2 * 28),
        "path_p50_ms_at_1m": paths["ours"]["p50_ms"],
        "path_p99_ms_at_1m": paths["ours"]["p99_ms"],
    }


def wikidata_rows(result: dict) -> list[list[str]]:
    """The plan as table rows: what, estimate, note."""
    return [
        *(
            [
                f"read the entity dump twice, {c} cores",
                duration(s),
                "parse on one core bounds it" if int(c) > 2 else "",
            ]
            for c, s in result["read_seconds_by_cores"].items()
        ),
        ["KB graph, every item statement", size(result["graph_bytes"]["all"]), "memory-mapped"],
        ["KB graph, enwiki-sitelinked subjects", size(result["graph_bytes"]["sitelinked (enwiki)"]), ""],
        ["its build, peak", size(result["graph_build_peak_bytes"]), "both directions sorted"],
    ]


def wikidata_markdown(result: dict) -> str:
    """The capacity plan's section on Wikidata."""
    return "\n".join(
        [
            "## Wikidata beside the snapshot",
            "",
            "Full Wikidata (~115M entities, ~100 GB bz2, ~1.5 TB of JSON), scaled from the reader measured "
            f"at {result['scaled_from']['reader_entities']:,} generated entities "
            f"({result['decode_core_s_per_gb']} core-s per GB of JSON to decompress, "
            f"{result['parse_core_s_per_gb']} to parse) and the KB graph at "
            f"{result['scaled_from']['paths_entities']:,} entities "
            f"({result['graph_bytes_per_statement']} bytes per statement; 3-hop paths p50 "
            f"{result['path_p50_ms_at_1m']} ms, p99 {result['path_p99_ms_at_1m']} ms there). The default "
            "scope reads the dump twice (statements, then the labels of what they name).",
            "",
            markdown_table(["full Wikidata", "estimate", "note"], wikidata_rows(result)),
            "",
        ]
    )


PAQ = 65_000_000
"""PAQ's QA pairs: the QA-pair KB the plan is scaled to."""


def qa_plan(results: Path) -> dict | None:
    """The QA-pair KB at PAQ's size from ``qa.json``'s largest scale row (None before it ran)."""
    path = results / "qa.json"
    rows = json.loads(path.read_text()).get("scale", []) if path.is_file() else []
    if not rows:
        return None
    row = max(rows, key=lambda r: r["pairs"])
    per_pair = PAQ / row["pairs"]  # reading and grouping scale with the lines read
    per_question = PAQ / row["questions"]  # the indices with the questions kept (PAQ's are distinct)
    compressed = row["paq_65m"]["factory"]
    measured = row["factories"].get(compressed, {})
    return {
        "scaled_from_pairs": row["pairs"],
        "pairs": PAQ,
        "build_seconds": round(row["build_s"] * per_pair),
        "bm25_seconds": round(row["index_s_per_kind"]["bm25"] * per_question),
        "dense_seconds": round(row["index_s_per_kind"]["dense"] * per_question),
        "factory": compressed,
        "index_bytes": row["paq_65m"]["index_bytes"],
        "bytes_per_pair_measured": measured.get("bytes_per_pair"),
        "duplicate_at_1_index_alone": measured.get("duplicate_at_1_index_alone"),
        "duplicate_at_1_answerer": row.get("duplicate_at_1_answerer"),
        "questions_per_s_measured": row["questions_per_s"],
        "lookup_bytes": round(row["lookup_bytes_per_pair"] * row["pairs"] * per_question)
        if row.get("lookup_bytes_per_pair")
        else None,
    }


def qa_rows(result: dict) -> list[list[str]]:
    """The QA-pair plan as table rows: what, estimate, note."""
    return [
        ["group and place 65M pairs (BM25 provenance)", duration(result["build_seconds"]), "one process"],
        ["BM25 over the questions", duration(result["bm25_seconds"]), ""],
        ["dense: encode the questions (int8 ONNX)", duration(result["dense_seconds"]), "2 cores; scales"],
        [
            f"dense index ({result['factory']}, qa.index_memory 500MB)",
            size(result["index_bytes"]),
            f"{result['bytes_per_pair_measured']} bytes/question at {result['scaled_from_pairs']:,} pairs "
            f"(codebooks included), duplicate@1 {result['duplicate_at_1_index_alone']} by the index alone",
        ],
        [
            "lookup file (qa_pairs.sqlite, on disk)",
            size(result["lookup_bytes"]) if result["lookup_bytes"] else "-",
            f"every stored question's row, and its id by its text (asked-before questions: duplicate@1 "
            f"{result['duplicate_at_1_answerer']}); PAQ's questions are distinct: scaled per question",
        ],
    ]


def qa_markdown(result: dict) -> str:
    """The capacity plan's section on the QA-pair KB."""
    return "\n".join(
        [
            "## The QA-pair KB at PAQ's size",
            "",
            f"65M QA pairs, scaled linearly from the KB of {result['scaled_from_pairs']:,} pairs derived "
            "from real questions (`benchmarks/bench_qa.py`), on 2 cores; questions answered there at "
            f"{result['questions_per_s_measured']:,}/s.",
            "",
            markdown_table(["65M QA pairs", "estimate", "note"], qa_rows(result)),
            "",
        ]
    )
