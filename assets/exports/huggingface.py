"""A snapshot as a Hugging Face dataset repository: Parquet shards and a dataset card.

Layout of an export directory (what ``datasets.load_dataset(DIR, CONFIG)`` reads through the card's
``configs`` block, and what ``huggingface_hub`` uploads as it is)::

    README.md                         dataset card: YAML (configs, licence, ...) + provenance and counts
    kilt_export.json                  what was exported: snapshot, dump, build manifest, counts, shard files
    passages/part-00000.parquet       the passages (split "train"), at most ``max_shard_bytes`` each
    pages/part-*.parquet              the KILT pages (KILT's field names)
    redirects/part-*.parquet          the redirects table
    <table>/part-*.parquet            every other table of passages the provenance store holds, and
                                      the tables beside them (assets.provenance_store.tables, when the
                                      snapshot has them): structured_passages (tables and infoboxes),
                                      kb_passages, kb_entities, kb_statements (the Wikidata KB), ...
    datasets/<dataset>/<split>/part-*.parquet   each remapped dataset split, KILT's record shape

Remapped records keep KILT's nesting (``output[].provenance[]``); every key beyond the fixed columns
(``meta``, evidence fields, ...) is kept as JSON in the ``meta_json`` column of its level, so nothing
is lost. Pure module: no Dagster import; memory holds one record batch, whatever the snapshot's size.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assets.exports.target import EXPORT_MANIFEST, ExportError, check_export_target, publish_export
from assets.files import temp_sibling
from assets.provenance_store import stored_passages
from assets.storage import SnapshotPaths

EXPORT_FORMAT = 1
KIND = "huggingface"
DEFAULT_MAX_SHARD_BYTES = 500 * 10**6
CORPUS_CONFIGS = ("passages", "pages", "redirects")
"""The knowledge source's tables, always exported (then every stored collection's tables it has)."""
BATCH_ROWS = {"passages": 20_000, "pages": 1_000, "redirects": 100_000}
"""Rows per row group of the corpus tables (~10-30 MB)."""
ROW_GROUP_BYTES = 16 * 2**20
"""The uncompressed size a row group of any other table aims at (its rows per group read from its
Parquet's metadata, between :data:`MIN_BATCH_ROWS` and :data:`MAX_BATCH_ROWS`)."""
MIN_BATCH_ROWS, MAX_BATCH_ROWS = 1_000, 100_000
KILT_CITATION = """@inproceedings{petroni-etal-2021-kilt,
    title = "{KILT}: a Benchmark for Knowledge Intensive Language Tasks",
    author = {Petroni, Fabio and Piktus, Aleksandra and Fan, Angela and Lewis, Patrick and
      Yazdani, Majid and De Cao, Nicola and Thorne, James and Jernite, Yacine and Karpukhin, Vladimir and
      Maillard, Jean and Plachouras, Vassilis and Rockt{\\"a}schel, Tim and Riedel, Sebastian},
    booktitle = "Proceedings of the 2021 Conference of the North American Chapter of the Association for
      Computational Linguistics: Human Language Technologies",
    year = "2021",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2021.naacl-main.200",
    pages = "2523--2544",
}"""
PROVENANCE_FIELDS = (
    ("wikipedia_id", pa.string()),
    ("title", pa.string()),
    ("section", pa.string()),
    ("start_paragraph_id", pa.int32()),
    ("start_character", pa.int32()),
    ("end_paragraph_id", pa.int32()),
    ("end_character", pa.int32()),
    ("bleu_score", pa.float64()),
)
PROVENANCE_TYPE = pa.struct([*PROVENANCE_FIELDS, ("meta_json", pa.string())])
OUTPUT_TYPE = pa.struct(
    [("answer", pa.string()), ("provenance", pa.list_(PROVENANCE_TYPE)), ("meta_json", pa.string())]
)
RECORD_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("input", pa.string()),
        ("output", pa.list_(OUTPUT_TYPE)),
        ("meta_json", pa.string()),
    ]
)
RECORD_BATCH = 5_000


@dataclass(slots=True)
class ConfigExport:
    """One config of the repository: its split -> files (relative to the export) and rows."""

    name: str
    splits: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    bytes: int = 0


@dataclass(slots=True)
class HfExportReport:
    snapshot_id: str
    out_dir: str
    configs: dict[str, ConfigExport]
    seconds: float
    max_shard_bytes: int

    def metadata(self) -> dict[str, Any]:
        """Flat figures for Dagster metadata and the CLI summary."""
        return {
            "snapshot_id": self.snapshot_id,
            "out_dir": self.out_dir,
            "configs": len(self.configs),
            **{f"rows_{c.name}": sum(c.rows.values()) for c in self.configs.values()},
            "files": sum(len(files) for c in self.configs.values() for files in c.splits.values()),
            "bytes": sum(c.bytes for c in self.configs.values()),
            "seconds": round(self.seconds, 2),
        }


# ------------------------------------------------------------------------------------- shards
class ShardWriter:
    """Parquet files ``part-00000.parquet``, ... in ``directory``, each closed before the next row group and
    the footer would take it past ``max_bytes`` on disk (judged by the last row group's size and the
    footer bytes per row group), so files stay under the limit, give or take one row group's variation."""

    def __init__(self, directory: Path, schema: pa.Schema, max_bytes: int) -> None:
        self.directory, self.schema, self.max_bytes = directory, schema, max_bytes
        self.files: list[Path] = []
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._last_row_group = 0  # bytes the last write added to the open file
        self._row_groups = 0  # in the open file
        self._footer_per_row_group = 4096  # Parquet metadata a row group adds at close (re-measured)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows == 0:
            return
        footer = (self._row_groups + 1) * self._footer_per_row_group
        if self._writer is not None and self._size() + self._last_row_group + footer > self.max_bytes:
            self._close()
        if self._writer is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.files.append(self.directory / f"part-{len(self.files):05d}.parquet")
            self._writer = pq.ParquetWriter(self.files[-1], self.schema, compression="zstd")
        before = self._size()
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        self._writer.write_table(table.cast(self.schema))
        self.rows += batch.num_rows
        self._row_groups += 1
        self._last_row_group = self._size() - before

    def _size(self) -> int:
        return self.files[-1].stat().st_size

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            footer = pq.ParquetFile(self.files[-1]).metadata.serialized_size
            self._footer_per_row_group = max(self._footer_per_row_group, -(-footer // self._row_groups))
            self._row_groups = 0

    def close(self) -> list[Path]:
        """Close the open file; the files written (an empty input still gets one empty file)."""
        if not self.files:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.files.append(self.directory / "part-00000.parquet")
            pq.write_table(self.schema.empty_table(), self.files[-1], compression="zstd")
        self._close()
        return self.files


def _parquet_batches(files: Iterable[Path], batch_rows: int) -> Iterator[pa.RecordBatch]:
    for path in files:
        try:
            yield from pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
        except (pa.ArrowException, OSError) as exc:
            raise ExportError(f"{path}: cannot be read ({exc}); rebuild the snapshot") from exc


def _parquet_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ExportError(f"{path}: cannot be read ({exc}); rebuild the snapshot") from exc


def _copy_config(
    name: str, sources: list[Path], out: Path, relative: str, max_bytes: int, batch_rows: int
) -> tuple[list[Path], int]:
    """Re-shard Parquet ``sources`` (one schema) into ``out/relative``; (files, rows)."""
    if not sources:
        raise ExportError(f"{name}: no Parquet files to export")
    writer = ShardWriter(out / relative, _parquet_schema(sources[0]), max_bytes)
    for batch in _parquet_batches(sources, batch_rows):
        writer.write(batch)
    return writer.close(), writer.rows


# ------------------------------------------------------------------------------------- records
def _rest_json(entry: dict[str, Any], fixed: Iterable[str]) -> str | None:
    """The keys of ``entry`` no column holds, as JSON; a column's key set to null explicitly goes here
    too (a null column reads back as an absent key)."""
    rest = {k: v for k, v in entry.items() if k not in fixed or v is None}
    return json.dumps(rest, ensure_ascii=False, sort_keys=True) if rest else None


def record_row(kilt: dict[str, Any]) -> dict[str, Any]:
    """One KILT record as a row of :data:`RECORD_SCHEMA` (keys beyond the columns kept as ``meta_json``)."""
    fixed = [name for name, _ in PROVENANCE_FIELDS]
    outputs = []
    for output in kilt.get("output") or []:
        provenance = [
            {**{k: p.get(k) for k in fixed}, "meta_json": _rest_json(p, fixed)}
            for p in output.get("provenance") or []
        ]
        answer = output.get("answer")
        outputs.append(
            {
                "answer": answer if isinstance(answer, str) else None,
                "provenance": provenance,
                "meta_json": _rest_json(
                    output, ("provenance", "answer") if isinstance(answer, str) else ("provenance",)
                ),
            }
        )
    return {
        "id": str(kilt["id"]),
        "input": kilt.get("input"),
        "output": outputs,
        "meta_json": _rest_json(kilt, ("id", "input", "output")),
    }


def kilt_record(row: dict[str, Any]) -> dict[str, Any]:
    """The KILT record a :func:`record_row` row came from (the inverse; tests and users check it)."""

    def merged(base: dict[str, Any], rest: str | None) -> dict[str, Any]:
        return {**base, **(json.loads(rest) if rest else {})}

    fixed = [name for name, _ in PROVENANCE_FIELDS]
    record: dict[str, Any] = {"id": row["id"]}
    if row["input"] is not None:
        record["input"] = row["input"]
    outputs = []
    for output in row["output"] or []:
        entry: dict[str, Any] = {} if output["answer"] is None else {"answer": output["answer"]}
        provenance = [
            merged({k: p[k] for k in fixed if p[k] is not None}, p["meta_json"]) for p in output["provenance"]
        ]
        if provenance:
            entry["provenance"] = provenance
        outputs.append(merged(entry, output["meta_json"]))
    if outputs:
        record["output"] = outputs
    return merged(record, row["meta_json"])


def mapped_splits(paths: SnapshotPaths) -> list[tuple[str, str, Path]]:
    """``(dataset, split, records Parquet)`` of every remapped split of the snapshot, sorted."""
    found = []
    for path in sorted((paths.datasets / "parquet" / "records").glob("*.parquet")):
        file = pq.ParquetFile(path)
        if file.metadata.num_rows == 0:
            continue  # a split whose every record was dropped: nothing to export (its report says why)
        head = file.read_row_group(0, columns=["dataset", "split"])
        found.append((head["dataset"][0].as_py(), head["split"][0].as_py(), path))
    return found


def _export_records(records: Path, out_dir: Path, max_bytes: int) -> tuple[list[Path], int]:
    writer = ShardWriter(out_dir, RECORD_SCHEMA, max_bytes)
    for batch in pq.ParquetFile(records).iter_batches(batch_size=RECORD_BATCH, columns=["kilt_json"]):
        rows = [record_row(json.loads(text)) for text in batch.column("kilt_json").to_pylist()]
        writer.write(pa.Table.from_pylist(rows, schema=RECORD_SCHEMA))
    return writer.close(), writer.rows


# ------------------------------------------------------------------------------------- export
def export_huggingface(
    paths: SnapshotPaths,
    out_dir: str | os.PathLike[str],
    *,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    batch_rows: int | None = None,
    include_datasets: bool = True,
) -> HfExportReport:
    """Write the snapshot's passages, pages, redirects and remapped dataset splits into ``out_dir`` as a
    Hugging Face dataset repository with its card (see the module docstring).

    Row groups hold ``batch_rows`` rows (default :data:`BATCH_ROWS` per corpus table, about
    :data:`ROW_GROUP_BYTES` for any other), the unit of memory and
    of the shard size check. The repository is assembled beside ``out_dir`` and swapped in whole.
    ``out_dir`` may be an earlier export (it is replaced) holding nothing else; anything its manifest does
    not list is refused before a byte is written (:mod:`assets.exports.target`), so no user file is lost.
    """
    started = time.perf_counter()
    out = Path(out_dir)
    check_export_target(out, KIND)
    require_built(paths, paths.passages_parquet, paths.pages_dir, paths.redirects_file, paths.manifest_file)
    work = temp_sibling(out)
    work.mkdir()
    try:
        configs: dict[str, ConfigExport] = {}
        for name, files, required in _table_sources(paths):
            sized = batch_rows or BATCH_ROWS.get(name)
            # the metadata, read once, says whether an optional table has rows and sizes an unsized table
            metadata = [] if required and sized else [pq.ParquetFile(f).metadata for f in files]
            if not required and not sum(m.num_rows for m in metadata):
                continue  # a collection's table the snapshot does not have (or has empty)
            rows_per_batch = sized or _rows_per_batch(metadata)
            copied, rows = _copy_config(name, files, work, name, max_shard_bytes, rows_per_batch)
            configs[name] = _config(name, {"train": copied}, {"train": rows}, work)
        tables = set(configs)
        for dataset, split, records in mapped_splits(paths) if include_datasets else []:
            if dataset in tables:
                raise ExportError(
                    f"dataset {dataset!r} ({records}) has the name of a corpus config; rename it"
                )
            files, rows = _export_records(records, work / "datasets" / dataset / split, max_shard_bytes)
            config = configs.setdefault(dataset, ConfigExport(dataset))
            config.splits[split] = [f.relative_to(work).as_posix() for f in files]
            config.rows[split] = rows
            config.bytes += sum(f.stat().st_size for f in files)
        manifest = _manifest(paths, configs, max_shard_bytes)
        (work / "README.md").write_text(dataset_card(manifest), encoding="utf-8")
        publish_export(work, out, manifest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return HfExportReport(
        paths.snapshot_id, str(out), configs, time.perf_counter() - started, max_shard_bytes
    )


def _table_sources(paths: SnapshotPaths) -> Iterator[tuple[str, list[Path], bool]]:
    """``(config, Parquet files, always exported)`` of every table of the snapshot: the corpus tables, then
    each stored collection's tables (:func:`~assets.provenance_store.stored_passages`)."""
    text, *others = stored_passages()
    yield "passages", text.files(paths, text.table), True
    yield "pages", sorted(paths.pages_dir.glob("*.parquet")), True
    yield "redirects", [paths.redirects_file], True
    for stored in others:
        for table in stored.sources:
            yield table, stored.files(paths, table), False


def _rows_per_batch(metadata: list[pq.FileMetaData]) -> int:
    """Rows per row group so that one holds about :data:`ROW_GROUP_BYTES` of a table's rows (from the
    ``metadata`` of its Parquet files, read once)."""
    rows = sum(m.num_rows for m in metadata)
    size = sum(m.row_group(i).total_byte_size for m in metadata for i in range(m.num_row_groups))
    return max(MIN_BATCH_ROWS, min(MAX_BATCH_ROWS, ROW_GROUP_BYTES * rows // max(size, 1)))


def require_built(paths: SnapshotPaths, *required: Path) -> None:
    """An :class:`ExportError` naming the first of ``required`` the snapshot lacks."""
    for path in required:
        if not path.exists():
            raise ExportError(f"{paths.snapshot_id}: {path} is missing (build the snapshot first)")


def _config(name: str, splits: dict[str, list[Path]], rows: dict[str, int], root: Path) -> ConfigExport:
    return ConfigExport(
        name,
        {split: [f.relative_to(root).as_posix() for f in files] for split, files in splits.items()},
        rows,
        sum(f.stat().st_size for files in splits.values() for f in files),
    )


def _manifest(paths: SnapshotPaths, configs: dict[str, ConfigExport], max_shard_bytes: int) -> dict[str, Any]:
    build = json.loads(paths.manifest_file.read_text())
    passages = json.loads(paths.passages_report.read_text()) if paths.passages_report.is_file() else {}
    return {
        "format": EXPORT_FORMAT,
        "kind": KIND,
        "snapshot_id": paths.snapshot_id,
        "language": build.get("language") or "en",
        "build_manifest": build,
        "passage_rules": {k: passages.get(k) for k in ("max_words", "mode", "chunker_version")},
        "max_shard_bytes": max_shard_bytes,
        "configs": {name: asdict(config) for name, config in configs.items()},
    }


def licence_of(snapshot_id: str) -> str:
    """Wikipedia's text licence for a dump date: CC BY-SA 4.0 from 2023-06-29 (the terms of use change),
    CC BY-SA 3.0 before; a snapshot without a date gets 4.0."""
    date = snapshot_id.rsplit("-", 1)[-1]
    return "cc-by-sa-3.0" if date.isdigit() and len(date) == 8 and date < "20230629" else "cc-by-sa-4.0"


def _card_front_matter(manifest: dict[str, Any]) -> list[str]:
    """The card's YAML front matter: licence, language, tags and each config's files."""
    snapshot, configs = manifest["snapshot_id"], manifest["configs"]
    yaml = ["---", f"license: {licence_of(snapshot)}", "language:", f"- {manifest['language']}"]
    yaml += [f"pretty_name: KILT knowledge source {snapshot}", "task_categories:", "- text-retrieval"]
    yaml += ["- question-answering", "tags:", "- kilt", "- wikipedia", "- kilt-pipeline", "configs:"]
    for name, config in configs.items():
        yaml.append(f"- config_name: {name}")
        if name == "passages":
            yaml.append("  default: true")
        yaml.append("  data_files:")
        for split in config["splits"]:
            files = config["splits"][split]
            folder = files[0].rsplit("/", 1)[0] if files else f"datasets/{name}/{split}"
            yaml += [f"  - split: {split}", f"    path: {folder}/*.parquet"]
    yaml.append("---")
    return yaml


def _described(configs: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(config, what it holds)`` of every exported table of a stored collection beyond the text."""
    for stored in stored_passages()[1:]:
        for table in stored.sources:
            if table in configs:
                yield table, stored.descriptions.get(table, "a table of the snapshot")


def dataset_card(manifest: dict[str, Any]) -> str:
    """README.md of the repository: YAML front matter (``configs`` so ``load_dataset(DIR, name)`` finds
    each config's files, licence, language) and the snapshot's provenance, counts and rules."""
    snapshot, configs = manifest["snapshot_id"], manifest["configs"]
    yaml = _card_front_matter(manifest)
    build = manifest["build_manifest"]
    rules = manifest["passage_rules"]
    rows = [
        f"| `{name}` | {', '.join(f'{s} ({n:,})' for s, n in c['rows'].items())} | {c['bytes'] / 1e6:,.1f} MB"
        " |"
        for name, c in configs.items()
    ]
    body = f"""
# KILT knowledge source: {snapshot}

Wikipedia snapshot `{snapshot}` in KILT's format, built by kilt-pipeline
(`kiltpipe export-hf`): the pages as KILT's `kilt_wikipedia`
lays them out, the {rules.get("max_words")}-word passages every index of the snapshot holds (mode
`{rules.get("mode")}`, chunker version {rules.get("chunker_version")}), the redirects table, and the
task datasets remapped onto this snapshot (provenance spans point at its paragraphs){
        "".join(f"; `{name}`: {text}" for name, text in _described(configs))
    }.

```python
from datasets import load_dataset
passages = load_dataset("THIS_REPO", "passages", split="train")
```

| config | splits (rows) | Parquet |
|---|---|---|
{chr(10).join(rows)}

Remapped records keep KILT's shape (`id`, `input`, `output[].answer`, `output[].provenance[]` with
`wikipedia_id`, `title`, `section`, `start/end_paragraph_id`, `start/end_character`, `bleu_score`);
any other key of a record, output or provenance entry is kept as JSON in that level's `meta_json`.

## Source

- dump: {", ".join(f"`{f}`" for f in _dump_files(build)) or "see the build manifest"}
- build manifest: `kilt_export.json` (`build_manifest`) holds the whole of `knowledge_source/manifest.json`

## Licence

The text is Wikipedia's, under {licence_of(snapshot).upper().replace("CC-BY-SA-", "CC BY-SA ")}
(and the GFDL); reuse must credit Wikipedia's authors and share alike. The remapped task datasets keep
the licences of their own sources (see each dataset's release).

## Citation

If you use this knowledge source with KILT's tasks, cite KILT:

```bibtex
{KILT_CITATION}
```
"""
    return "\n".join(yaml) + "\n" + body


def _dump_files(build: dict[str, Any]) -> list[str]:
    """The dump file names the knowledge source was built from (its manifest's ``dump_files``)."""
    return [Path(str(name)).name for name in build.get("dump_files") or []]


def push_to_hub(
    export_dir: str | os.PathLike[str], repo_id: str, *, private: bool = False, token: str | None = None
) -> str:
    """Upload an export to the Hub as dataset ``repo_id`` (created when missing; Parquet files of an
    earlier upload that this export no longer has are deleted in the same commit). The token comes from
    ``token``, else huggingface_hub's usual places (``HF_TOKEN``, ``hf auth login``). Returns the commit
    URL."""
    from huggingface_hub import HfApi

    folder = Path(export_dir)
    manifest = json.loads((folder / EXPORT_MANIFEST).read_text())
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        repo_type="dataset",
        commit_message=f"kilt-pipeline export of {manifest['snapshot_id']}",
        delete_patterns=["*.parquet", "**/*.parquet"],
    )
    return str(getattr(commit, "commit_url", commit))
