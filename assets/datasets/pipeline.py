"""Map dataset files onto a snapshot, and remap a snapshot's datasets onto a newer snapshot."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from assets.compressed import strict_lines
from assets.datasets.mapping import DatasetMapper, MappingReport, PageResolver
from assets.datasets.outputs import WrittenSplit, build_datasets_db, write_split
from assets.datasets.readers import DatasetRecord, ReadOptions, detect_format, read_dataset, read_fever_qrels
from assets.datasets.records import Provenance
from assets.files import write_json_atomic
from assets.languages import MKQA_LANGUAGES, mkqa_codes_for
from assets.limits import input_line_bytes
from assets.names import InvalidName, check_name
from assets.params import BLEU_THRESHOLD
from assets.provenance_store import ProvenanceStore
from assets.storage import SnapshotPaths
from assets.wikipedia.passages import SPAN_COLUMNS


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """One dataset file to map (``qrels`` for the FEVER topics/qrels pair)."""

    path: str
    format: str | None = None
    dataset: str | None = None
    split: str | None = None
    qrels: str | None = None
    language: str | list[str] | None = None  # MKQA: its codes, "all"; default: the snapshot's language

    def __post_init__(self) -> None:  # names become file names: checked before anything is read
        if self.dataset is not None:
            check_name(self.dataset, what="dataset name")
        if self.split is not None:
            check_name(self.split, what="split name", example="dev")


def embedded_specs() -> list[DatasetSpec]:
    """The real records shipped with the project whose provenance lies inside the embedded excerpt."""
    fixtures = resources.files("assets.datasets") / "fixtures"
    return [
        DatasetSpec(str(fixtures / "hotpotqa-dev-excerpt-kilt.jsonl"), "kilt", "hotpotqa", "dev"),
        DatasetSpec(
            str(fixtures / "fever-dev-excerpt.topics.tsv"),
            "fever_qrels",
            "fever",
            "dev",
            qrels=str(fixtures / "fever-dev-excerpt.qrels.txt"),
        ),
        DatasetSpec(str(fixtures / "NQ-open.dev.jsonl"), "nq_open", "nq_open", "dev"),
    ]


def built_from_embedded_excerpt(paths: SnapshotPaths) -> bool:
    """Whether the snapshot's knowledge source was built from the embedded default excerpt."""
    from assets.wikipedia.dump import EMBEDDED_FILE_NAME

    if not paths.manifest_file.is_file():
        return False
    return json.loads(paths.manifest_file.read_text()).get("dump_files") == [EMBEDDED_FILE_NAME]


def configured_specs(
    files: list[dict[str, Any]] | None, paths: SnapshotPaths
) -> tuple[list[DatasetSpec], str]:
    """The dataset files to map onto a snapshot, and where they come from.

    ``files`` (``datasets.files``) as given, ``[]`` meaning none; when it is None, the real records shipped
    with the project for the embedded default excerpt, whose pages they cite, and none for any other
    snapshot (another wiki, language or date has its own datasets to configure).
    """
    if files is not None:
        return [DatasetSpec(**spec) for spec in files], f"datasets.files ({len(files)} files)"
    if built_from_embedded_excerpt(paths):
        return embedded_specs(), "the real records shipped for the embedded default excerpt"
    return (
        [],
        "none: datasets.files is not set, and the shipped records belong to the embedded default excerpt",
    )


def _dataset_language(spec: DatasetSpec, paths: SnapshotPaths) -> str | list[str]:
    """The languages to read of a multilingual file (MKQA): as the spec says, else those the snapshot's
    Wikipedia answers (``zhwiki`` -> ``zh_cn``, ``zh_hk``, ``zh_tw``); an error when MKQA has none."""
    if spec.language is not None:
        return spec.language
    fmt = spec.format or detect_format(spec.path)[0]
    if fmt != "mkqa":
        return "en"
    manifest = json.loads(paths.manifest_file.read_text()) if paths.manifest_file.is_file() else {}
    language = manifest.get("language") or "en"
    codes = mkqa_codes_for(language)
    if not codes:
        raise ValueError(
            f"{spec.path}: MKQA has no questions in language {language!r} (snapshot {paths.snapshot_id}); "
            f"its languages: {', '.join(item.code for item in MKQA_LANGUAGES)}. Name them with `language` "
            "in the datasets.files entry to map them onto this snapshot anyway"
        )
    return codes


@dataclass(slots=True)
class MappedSplit:
    report: MappingReport
    written: WrittenSplit
    read_problems: list[tuple[int, str]]
    """The reader's first problems, ``(line, message)``; all are counted (``report.read_problems``)."""
    read_counts: dict[str, int]


def map_dataset(
    spec: DatasetSpec,
    target: ProvenanceStore,
    reports_dir: Path,
    *,
    source: ProvenanceStore | None = None,
    bleu_threshold: float = BLEU_THRESHOLD,
    strict: bool = False,
    max_line_bytes: int | None = None,
) -> MappedSplit:
    """Read one dataset file (each line within ``max_line_bytes``, ``limits.input``'s), map it onto
    ``target`` and write its outputs and report."""
    if spec.format == "fever_qrels" or spec.qrels:
        result = read_fever_qrels(
            spec.path,
            spec.qrels or "",
            strict=strict,
            split=spec.split,
            lazy=True,
            max_line_bytes=max_line_bytes,
        )
    else:
        options = ReadOptions(
            dataset=spec.dataset,
            split=spec.split,
            strict=strict,
            lazy=True,
            language=_dataset_language(spec, target.paths),
            max_line_bytes=max_line_bytes,
        )
        result = read_dataset(spec.path, options, format=spec.format)
    dataset = spec.dataset or result.dataset or Path(spec.path).stem
    split = spec.split or result.split or "unknown"
    try:  # names taken from the file (its name or its records) are checked like given ones
        check_name(dataset, what=f"dataset name taken from {spec.path}")
        check_name(split, what=f"split name taken from {spec.path}", example="dev")
    except InvalidName as error:
        raise InvalidName(
            f"{error}; name it with --dataset/--split (or dataset/split in datasets.files)"
        ) from None
    mapper = DatasetMapper(target, dataset=dataset, split=split, source=source, bleu_threshold=bleu_threshold)

    def records_then_problems() -> Iterator[DatasetRecord]:
        """The records; once read, the reader's skips and problems go into the report it writes."""
        yield from result.records
        mapper.report.malformed_skipped = result.counts["skipped"]
        mapper.report.read_problems = result.n_problems
        mapper.report.read_problem_examples = [f"line {line}: {problem}" for line, problem in result.problems]

    written = write_split(
        target.paths, reports_dir, mapper.map_records(records_then_problems()), mapper.report
    )
    return MappedSplit(mapper.report, written, list(result.problems), dict(result.counts))


def map_datasets(
    specs: list[DatasetSpec],
    target: ProvenanceStore,
    reports_dir: Path,
    *,
    source: ProvenanceStore | None = None,
    bleu_threshold: float = BLEU_THRESHOLD,
    strict: bool = False,
    on_mapped: Callable[[DatasetSpec, MappedSplit], None] | None = None,
    max_line_bytes: int | None = None,
) -> tuple[list[MappedSplit], dict[str, int]]:
    """Map dataset files onto the snapshot of the ``target`` store (a build's staging folder, opened by
    :meth:`assets.reading.Snapshot.building`), then rebuild its ``datasets.duckdb``: what the
    ``remapped_datasets`` asset and ``kiltpipe map`` both run. ``source``: the store of the snapshot whose
    text is the evidence for records with KILT coordinates (only read). ``on_mapped(spec, mapped)`` is
    called after each file; ``max_line_bytes``: a line's bound (``limits.input``). Returns the mapped splits
    and the table counts of the rebuilt ``datasets.duckdb``."""
    mapped_splits: list[MappedSplit] = []
    for spec in specs:
        mapped = map_dataset(
            spec,
            target,
            reports_dir,
            source=source,
            bleu_threshold=bleu_threshold,
            strict=strict,
            max_line_bytes=max_line_bytes,
        )
        mapped_splits.append(mapped)
        if on_mapped is not None:
            on_mapped(spec, mapped)
    return mapped_splits, build_datasets_db(target.paths)


# ------------------------------------------------------------------------------- snapshot to snapshot
@dataclass(slots=True)
class RemapReport:
    """What changed for the provenance of datasets mapped on A when remapped onto B."""

    from_snapshot: str
    to_snapshot: str
    provenance: int = 0
    outcomes: Counter = field(default_factory=Counter)
    pages: dict[str, list[str]] = field(default_factory=dict)
    splits: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from_snapshot": self.from_snapshot,
            "to_snapshot": self.to_snapshot,
            "provenance": self.provenance,
            "outcomes": dict(self.outcomes),
            "pages": {k: sorted(v) for k, v in self.pages.items()},
            "splits": self.splits,
        }


def _mapped_files(paths: SnapshotPaths) -> list[Path]:
    return sorted(paths.datasets.glob("*-kilt.jsonl"))


def _records(path: Path, max_line_bytes: int | None) -> Iterator[DatasetRecord]:
    for number, line in strict_lines(path, input_line_bytes(max_line_bytes)):
        if line.strip():
            yield DatasetRecord.from_kilt(json.loads(line), number)


def remap_snapshot(
    source: ProvenanceStore,
    target: ProvenanceStore,
    reports_dir: Path,
    *,
    bleu_threshold: float = BLEU_THRESHOLD,
    max_line_bytes: int | None = None,
) -> RemapReport:
    """Remap every dataset mapped on ``source`` (snapshot A) onto ``target`` (snapshot B), using A's
    span text as the evidence, and classify each provenance: unchanged, moved (same page, other
    coordinates), renamed (reached by title or redirect under another title), edited (page text
    changed), deleted (page gone), lost (dropped below the threshold)."""
    report = RemapReport(source.paths.snapshot_id, target.paths.snapshot_id)
    for path in _mapped_files(source.paths):
        dataset, _, split = path.name.removesuffix("-kilt.jsonl").partition("-")
        before = {r.id: r for r in _records(path, max_line_bytes)}
        mapper = DatasetMapper(
            target, dataset=dataset, split=split, source=source, bleu_threshold=bleu_threshold
        )
        after: dict[str, DatasetRecord] = {}
        records = _collect(mapper.map_records(before.values()), after)
        write_split(target.paths, reports_dir, records, mapper.report)
        _classify(report, before, after, source, target)
        report.splits.append(mapper.report.to_dict())
    write_json_atomic(
        reports_dir / target.paths.snapshot_id / "remap" / f"from-{source.paths.snapshot_id}.json",
        report.to_dict(),
    )
    build_datasets_db(target.paths)
    return report


def _collect(records: Iterator[DatasetRecord], sink: dict[str, DatasetRecord]) -> Iterator[DatasetRecord]:
    for record in records:
        sink[record.id] = record
        yield record


def _page_hash(store: ProvenanceStore, wikipedia_id: str) -> str | None:
    row = store.con.execute("SELECT text_sha1 FROM pages WHERE wikipedia_id = ?", [wikipedia_id]).fetchone()
    return row[0] if row else None


def _classify(
    report: RemapReport,
    before: dict[str, DatasetRecord],
    after: dict[str, DatasetRecord],
    source: ProvenanceStore,
    target: ProvenanceStore,
) -> None:
    resolver = PageResolver(target)
    for record_id, old in before.items():
        new = after.get(record_id)
        for output_index, output in enumerate(old.output):
            new_output = new.output[output_index] if new and output_index < len(new.output) else None
            for prov in output.entries:
                report.provenance += 1
                outcome = _outcome(prov, new_output.entries if new_output else [], resolver, source, target)
                report.outcomes[outcome] += 1
                if outcome in ("deleted", "renamed", "edited", "edited_same_span"):
                    name = prov.title or str(prov.wikipedia_id)
                    report.pages.setdefault(outcome, []).append(name)


def _outcome(
    prov: Provenance,
    candidates: list[Provenance],
    resolver: PageResolver,
    source: ProvenanceStore,
    target: ProvenanceStore,
) -> str:
    page, _ = resolver.resolve(prov)
    if page is None:
        return "deleted"
    new = next((p for p in candidates if p.wikipedia_id == page.wikipedia_id), None)
    if new is None:
        return "lost"
    if page.title != prov.title:
        return "renamed"
    edited = _page_hash(source, str(prov.wikipedia_id)) != _page_hash(target, page.wikipedia_id)
    if all(getattr(new, k) == getattr(prov, k) for k in SPAN_COLUMNS):
        return "edited_same_span" if edited else "unchanged"
    return "edited" if edited else "moved"
