"""Write remapped datasets (KILT JSONL, Parquet, reports) and the dataset tables of the store."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from assets import charts
from assets.datasets.mapping import MappingReport
from assets.datasets.records import DatasetRecord
from assets.files import atomic_path
from assets.names import check_name
from assets.provenance_store import covered_fraction_sql
from assets.storage import SnapshotPaths, sql_list, sql_literal, write_report_json
from assets.wikipedia.passages import SPAN_COLUMNS

RECORDS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("split", pa.string()),
        ("id", pa.string()),
        ("input", pa.string()),
        ("outputs", pa.int32()),
        ("kilt_json", pa.string()),
    ]
)
OUTPUTS_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("split", pa.string()),
        ("record_id", pa.string()),
        ("output_index", pa.int32()),
        ("answer", pa.string()),
    ]
)
PROVENANCE_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("split", pa.string()),
        ("record_id", pa.string()),
        ("output_index", pa.int32()),
        ("provenance_index", pa.int32()),
        ("wikipedia_id", pa.string()),
        ("title", pa.string()),
        ("section", pa.string()),
        *[(column, pa.int32()) for column in SPAN_COLUMNS],
        ("bleu_score", pa.float64()),
    ]
)
TABLES = {"records": RECORDS_SCHEMA, "outputs": OUTPUTS_SCHEMA, "provenance": PROVENANCE_SCHEMA}


@dataclass(slots=True)
class WrittenSplit:
    jsonl: Path
    records: int
    report_json: Path
    report_md: Path
    histogram_png: Path


def _rows(dataset: str, split: str, record: DatasetRecord) -> dict[str, list[dict[str, Any]]]:
    kilt = record.to_kilt()
    rows: dict[str, list[dict[str, Any]]] = {
        "records": [
            {
                "dataset": dataset,
                "split": split,
                "id": record.id,
                "input": record.input,
                "outputs": len(record.output),
                "kilt_json": json.dumps(kilt, ensure_ascii=False),
            }
        ],
        "outputs": [],
        "provenance": [],
    }
    for output_index, output in enumerate(record.output):
        answer = output.answer
        rows["outputs"].append(
            {
                "dataset": dataset,
                "split": split,
                "record_id": record.id,
                "output_index": output_index,
                "answer": answer if isinstance(answer, str) else None,
            }
        )
        for provenance_index, prov in enumerate(output.entries):
            rows["provenance"].append(
                {
                    "dataset": dataset,
                    "split": split,
                    "record_id": record.id,
                    "output_index": output_index,
                    "provenance_index": provenance_index,
                    "wikipedia_id": prov.wikipedia_id,
                    "title": prov.title,
                    "section": prov.section,
                    **{k: getattr(prov, k) for k in (*SPAN_COLUMNS, "bleu_score")},
                }
            )
    return rows


def write_split(
    paths: SnapshotPaths, reports_dir: Path, records: Iterable[DatasetRecord], report: MappingReport
) -> WrittenSplit:
    """Stream mapped records to ``<dataset>-<split>-kilt.jsonl`` and Parquet, then write the report."""
    name = f"{check_name(report.dataset, what='dataset name')}-{check_name(report.split, what='split name')}"
    jsonl = paths.datasets / f"{name}-kilt.jsonl"
    parquet_dir = paths.datasets / "parquet"
    count = 0
    with atomic_path(jsonl) as temp_jsonl:
        writers: dict[str, pq.ParquetWriter] = {}
        temps: dict[str, Path] = {}
        try:
            for table, schema in TABLES.items():
                final = parquet_dir / table / f"{name}.parquet"
                final.parent.mkdir(parents=True, exist_ok=True)
                temps[table] = final.with_name(f".tmp-{final.name}")
                writers[table] = pq.ParquetWriter(temps[table], schema)
            buffer: dict[str, list[dict[str, Any]]] = {table: [] for table in TABLES}
            with open(temp_jsonl, "w", encoding="utf-8") as handle:
                for record in records:
                    handle.write(json.dumps(record.to_kilt(), ensure_ascii=False) + "\n")
                    count += 1
                    for table, rows in _rows(report.dataset, report.split, record).items():
                        buffer[table].extend(rows)
                    if len(buffer["records"]) >= 5000:
                        _flush(writers, buffer)
            _flush(writers, buffer)
        finally:
            for writer in writers.values():
                writer.close()
        for table, temp in temps.items():
            temp.replace(parquet_dir / table / f"{name}.parquet")
    out_dir = reports_dir / paths.snapshot_id / "mapping"
    summary = report.to_dict()
    write_report_json(out_dir / f"{name}.json", summary)
    png = charts.bar_chart_png(
        summary["bleu_histogram"], title=f"BLEU of mapped spans: {name}", xlabel="BLEU", ylabel="spans"
    )
    charts.save_png(png, out_dir / f"{name}-bleu.png")
    (out_dir / f"{name}.md").write_text(mapping_markdown(summary, f"{name}-bleu.png"))
    return WrittenSplit(
        jsonl, count, out_dir / f"{name}.json", out_dir / f"{name}.md", out_dir / f"{name}-bleu.png"
    )


def _flush(writers: dict[str, pq.ParquetWriter], buffer: dict[str, list[dict[str, Any]]]) -> None:
    for table, rows in buffer.items():
        if rows:
            writers[table].write_table(pa.Table.from_pylist(rows, schema=TABLES[table]))
            rows.clear()


def mapping_markdown(summary: dict[str, Any], image: str | None = None) -> str:
    """The mapping report as Markdown (records in/out, drops by reason, methods, BLEU histogram)."""
    lines = [
        f"# Mapping report: {summary['dataset']} {summary['split']} -> {summary['target_snapshot']}",
        "",
        f"source snapshot: {summary['source_snapshot'] or '(none)'}; "
        f"BLEU threshold {summary['bleu_threshold']}",
        "",
        charts.markdown_table(
            [
                {
                    "records in": summary["records_in"],
                    "records out": summary["records_out"],
                    "mapped": f"{summary['mapped_fraction']:.1%}",
                    "outputs in": summary["outputs_in"],
                    "outputs out": summary["outputs_out"],
                    "provenance in": summary["provenance_in"],
                    "provenance out": summary["provenance_out"],
                }
            ]
        ),
        "",
        f"Malformed input lines skipped: {summary.get('malformed_skipped', 0)}"
        + "".join(f"\n- {example}" for example in summary.get("read_problem_examples", [])),
        "",
        "## Dropped, by reason",
        "",
        charts.markdown_table([{"reason": k, "count": v} for k, v in summary["dropped"].items()]),
        "",
        "## Page resolution and evidence",
        "",
        charts.markdown_table(
            [{"step": "page", "method": k, "count": v} for k, v in summary["page_resolution"].items()]
            + [{"step": "evidence", "method": k, "count": v} for k, v in summary["evidence"].items()]
        ),
        "",
        "## BLEU of mapped spans",
        "",
        charts.markdown_table([{"BLEU": k, "spans": v} for k, v in summary["bleu_histogram"].items()]),
    ]
    if answer_paths := summary.get("answer_paths"):
        names = sorted({name for paths in answer_paths.values() for name in paths})
        lines += [
            "",
            "## Answers without provenance, by language",
            "",
            "qid_span / qid_page: mapped to the page with the answer's Wikidata id (with / without a span)",
            "",
            charts.markdown_table(
                [
                    {"language": lang, **{n: paths.get(n, 0) for n in names}}
                    for lang, paths in answer_paths.items()
                ]
            ),
        ]
    if image:
        lines += ["", f"![BLEU histogram]({image})"]
    return "\n".join(lines) + "\n"


def build_datasets_db(paths: SnapshotPaths) -> dict[str, int]:
    """(Re)build ``datasets.duckdb`` from the Parquet of every mapped split, with for each span the
    passages covering it and the covered fraction (computed against the provenance store)."""
    parquet_dir = paths.datasets / "parquet"
    with atomic_path(paths.datasets_db) as temp:
        con = duckdb.connect(str(temp))
        con.execute(f"ATTACH {sql_literal(paths.provenance_store)} AS store (READ_ONLY)")
        for table, schema in TABLES.items():
            files = sorted((parquet_dir / table).glob("*.parquet"))
            if files:
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet({sql_list(files)})")
            else:
                columns = ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in schema)
                con.execute(f"CREATE TABLE {table} ({columns})")
        fraction = covered_fraction_sql("g.page_start", "g.page_end", "spans.span_start", "spans.span_end")
        con.execute(
            f"""
            CREATE TABLE provenance_passages AS
            WITH spans AS (
                SELECT p.*, s.page_offset + p.start_character AS span_start,
                       e.page_offset + p.end_character AS span_end
                FROM provenance p
                JOIN store.paragraphs s
                  ON s.wikipedia_id = p.wikipedia_id AND s.paragraph_id = p.start_paragraph_id
                JOIN store.paragraphs e
                  ON e.wikipedia_id = p.wikipedia_id AND e.paragraph_id = p.end_paragraph_id)
            SELECT spans.dataset, spans.split, spans.record_id, spans.output_index, spans.provenance_index,
                   g.passage_id, {fraction} AS covered_fraction
            FROM spans JOIN store.passages g
              ON g.wikipedia_id = spans.wikipedia_id AND g.page_end > spans.span_start
             AND g.page_start < greatest(spans.span_end, spans.span_start + 1)
            """
        )
        con.execute("CREATE INDEX records_id ON records (id)")
        con.execute("CREATE INDEX provenance_record ON provenance (record_id)")
        con.execute("CREATE INDEX provenance_page ON provenance (wikipedia_id)")
        con.execute("CREATE INDEX outputs_record ON outputs (record_id)")
        con.execute("CREATE INDEX provenance_passages_record ON provenance_passages (record_id)")
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in (*TABLES, "provenance_passages")
        }
        con.execute("DETACH store")
        con.execute("CHECKPOINT")
        con.close()
    return counts


def _duck_type(arrow_type: pa.DataType) -> str:
    return {pa.string(): "VARCHAR", pa.int32(): "INTEGER", pa.float64(): "DOUBLE"}[arrow_type]
