"""KILT's mapping procedure (paper section 2), offline: point every provenance at spans of a snapshot.

For each provenance entry of each output:
1. resolve the page in the target snapshot: same ``wikipedia_id`` with a matching title; else the
   title (normalized, FEVER escapes decoded) directly or through the redirects table; else missing;
2. take the evidence: text carried by the record (``evidence_text``, original formats); else the
   text at the record's coordinates in a source snapshot (any snapshot built or imported here,
   e.g. KILT's 2019 knowledge source); else the answer string (not for label-valued datasets such
   as FEVER); else, and always for entity linking, the provenance is the whole page;
3. find the span of the target page with the highest KILT BLEU (:mod:`assets.datasets.span_search`);
4. write KILT provenance (``wikipedia_id``, ``title``, ``section``, paragraph/character span,
   ``bleu_score``) and ``meta.mapping`` (methods, snapshots, missing pages);
5. dev/test: drop an output if any of its spans scores below the BLEU threshold; train keeps
   everything. Provenance on pages missing from the snapshot is dropped; an output left without
   provenance is dropped; a record left without outputs is dropped. Every drop is counted by reason.

Answers that name a Wikidata entity and carry no provenance (MKQA) map through the QID instead: the
page with that QID in the target snapshot (``wikidata_info``, from the wiki's page_props table) is the
provenance, with the best span of the answer string on it when its BLEU reaches the threshold (else the
whole page). Answers without a QID (numbers, dates, yes/no) stay answer strings. The report counts each
path per language (``answer_paths``).
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from assets.datasets.records import DatasetRecord, Output, Provenance
from assets.datasets.span_search import PreparedPage, find_best_span, prepare_page
from assets.iterables import batched
from assets.params import BLEU_THRESHOLD
from assets.provenance_store import ProvenanceStore
from assets.wikipedia.dump import QID_RE
from assets.wikipedia.passages import ABSTRACT_SECTION, SECTION_PREFIX, SPAN_COLUMNS
from assets.wikipedia.wikitext import normalize_title

LABEL_DATASETS = frozenset({"fever"})  # answers are class labels, never evidence text
PAGE_LEVEL_DATASETS = frozenset({"aidayago2", "wned", "cweb"})  # entity linking: provenance is a page
KEEP_ALL_SPLITS = frozenset({"train"})
HISTOGRAM_BINS = 10
MAP_BATCH = 500  # records whose pages and source paragraphs are fetched together


@dataclass(slots=True)
class MappingReport:
    """Counts of one dataset split's mapping; saved as JSON/Markdown and shown in the Dagster UI."""

    dataset: str
    split: str
    target_snapshot: str
    source_snapshot: str | None
    bleu_threshold: float
    records_in: int = 0
    records_out: int = 0
    outputs_in: int = 0
    outputs_out: int = 0
    provenance_in: int = 0
    provenance_out: int = 0
    spans_searched: int = 0
    dropped: Counter = field(default_factory=Counter)
    page_resolution: Counter = field(default_factory=Counter)
    evidence: Counter = field(default_factory=Counter)
    bleu_histogram: Counter = field(default_factory=Counter)
    missing_pages: Counter = field(default_factory=Counter)
    answer_paths: dict[str, Counter] = field(default_factory=dict)  # language -> path -> answers
    malformed_skipped: int = 0  # input lines (or items) the reader skipped as malformed
    read_problems: int = 0  # the reader's problems (malformed lines and notes), counted
    read_problem_examples: list[str] = field(default_factory=list)  # the first of them, as "line N: why"
    seconds: float = 0.0

    @property
    def mapped_fraction(self) -> float:
        return self.records_out / self.records_in if self.records_in else 1.0

    @property
    def spans_per_second(self) -> float:
        return self.spans_searched / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "target_snapshot": self.target_snapshot,
            "source_snapshot": self.source_snapshot,
            "bleu_threshold": self.bleu_threshold,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "mapped_fraction": round(self.mapped_fraction, 4),
            "outputs_in": self.outputs_in,
            "outputs_out": self.outputs_out,
            "provenance_in": self.provenance_in,
            "provenance_out": self.provenance_out,
            "spans_searched": self.spans_searched,
            "spans_per_second": round(self.spans_per_second, 1),
            "dropped": dict(self.dropped),
            "page_resolution": dict(self.page_resolution),
            "evidence": dict(self.evidence),
            "bleu_histogram": {_bin_label(b): self.bleu_histogram[b] for b in range(HISTOGRAM_BINS + 1)},
            "missing_pages": dict(self.missing_pages.most_common(50)),
            **(
                {
                    "answer_paths": {
                        lang: dict(sorted(c.items())) for lang, c in sorted(self.answer_paths.items())
                    }
                }
                if self.answer_paths
                else {}
            ),
            "malformed_skipped": self.malformed_skipped,
            "read_problems": self.read_problems,
            "read_problem_examples": self.read_problem_examples[:20],
            "seconds": round(self.seconds, 3),
        }


def _bin_label(index: int) -> str:
    return (
        "1.0"
        if index == HISTOGRAM_BINS
        else f"{index / HISTOGRAM_BINS:.1f}-{(index + 1) / HISTOGRAM_BINS:.1f}"
    )


@dataclass(slots=True)
class TargetPage:
    wikipedia_id: str
    title: str
    text: list[str]
    prepared: PreparedPage | None = None

    def section_of(self, paragraph_id: int) -> str:
        for index in range(paragraph_id, 0, -1):
            if self.text[index].startswith(SECTION_PREFIX):
                return self.text[index].rstrip("\n")
        return ABSTRACT_SECTION


class PageResolver:
    """Page lookups in the target snapshot, with a small LRU of tokenized pages."""

    def __init__(self, store: ProvenanceStore, cache_size: int = 256) -> None:
        self.store = store
        self.cache: OrderedDict[str, TargetPage] = OrderedDict()
        self.cache_size = cache_size

    def cached(self, record: dict[str, Any]) -> TargetPage:
        """The page of a store record, tokenized pages kept in the LRU."""
        key = record["wikipedia_id"]
        page = self.cache.get(key)
        if page is None:
            page = TargetPage(key, record["wikipedia_title"], record["text"])
            self.cache[key] = page
            if len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return page

    def resolve(self, provenance: Provenance) -> tuple[TargetPage | None, str]:
        """The target page and how it was found (``id``, ``title``, ``redirect``, ...) or why not."""
        wikipedia_id = provenance.wikipedia_id
        title = provenance.title
        cached = self.cache.get(str(wikipedia_id)) if wikipedia_id not in (None, "") else None
        if cached is not None and (
            title is None or normalize_title(title, decode_fever=True) == cached.title
        ):
            self.cache.move_to_end(cached.wikipedia_id)
            return cached, "id"
        if wikipedia_id not in (None, ""):
            match = self.store.page(str(wikipedia_id), by="id")
            if match is not None:
                same = (
                    title is None
                    or normalize_title(title, decode_fever=True) == match.record["wikipedia_title"]
                )
                if same:
                    return self.cached(match.record), "id"
        if not title:
            return None, "missing_id_not_found" if wikipedia_id else "missing_no_title"
        try:
            match = self.store.page(title, by="title")
        except LookupError:
            return None, "missing_redirect_target"
        if match is None:
            return None, "missing_page"
        return self.cached(match.record), "redirect" if match.via == "redirect" else "title"


def _evidence_for(
    provenance: Provenance, output: Output, dataset: str, source: ProvenanceStore | None
) -> tuple[str | None, str]:
    text = provenance.evidence_text
    if isinstance(text, str) and text.strip():
        return text, "evidence_text"
    if source is not None and provenance.span is not None:
        try:
            span = source.span(str(provenance.wikipedia_id), *provenance.span)
        except ValueError:
            span = None
        if span and span["text"].strip():
            return span["text"], "source_snapshot"
    answer = output.answer
    if dataset not in LABEL_DATASETS and isinstance(answer, str) and answer.strip():
        return answer, "answer"
    return None, "page"


def _span_provenance(page: TargetPage, match: Any, meta: dict[str, Any]) -> Provenance:
    """KILT provenance of a found span (section, paragraph/character coordinates, BLEU), ``meta`` if any."""
    return Provenance.of(
        wikipedia_id=page.wikipedia_id,
        title=page.title,
        section=page.section_of(match.paragraph_id),
        start_paragraph_id=match.paragraph_id,
        start_character=match.start_character,
        end_paragraph_id=match.end_paragraph_id,
        end_character=match.end_character,
        bleu_score=match.bleu,
        **({"meta": meta} if meta else {}),
    )


def _histogram_bin(bleu: float) -> int:
    return HISTOGRAM_BINS if bleu >= 1.0 else int(bleu * HISTOGRAM_BINS)


class DatasetMapper:
    """Maps records of one dataset split onto a target snapshot."""

    def __init__(
        self,
        target: ProvenanceStore,
        *,
        dataset: str,
        split: str,
        source: ProvenanceStore | None = None,
        bleu_threshold: float = BLEU_THRESHOLD,
    ) -> None:
        self.target = target
        self.source = source
        self.dataset = dataset
        self.split = split
        self.threshold = bleu_threshold
        self.keep_all = split in KEEP_ALL_SPLITS
        self.pages = PageResolver(target)
        self._snapshot_has_qids: bool | None = None  # asked once, when an answer names an entity
        self.report = MappingReport(
            dataset,
            split,
            target.paths.snapshot_id,
            source.paths.snapshot_id if source else None,
            bleu_threshold,
        )

    def map_records(self, records: Iterable[DatasetRecord]) -> Iterator[DatasetRecord]:
        """The mapped records, in order (dropped ones left out). Records are taken ``MAP_BATCH`` at a time,
        and the pages and source paragraphs a batch cites are fetched together first (``prefetch``)."""
        started = time.perf_counter()
        for batch in batched(records, MAP_BATCH):
            self._prefetch(batch)
            for record in batch:
                mapped = self.map_record(record)
                if mapped is not None:
                    yield mapped
        self.report.seconds += time.perf_counter() - started

    def _prefetch(self, batch: Sequence[DatasetRecord]) -> None:
        """Fetch the target pages a batch cites, and the source paragraphs its evidence is read from."""
        entries = [entry for record in batch for output in record.output for entry in output.entries]
        self.target.prefetch(str(e.wikipedia_id) for e in entries if str(e.wikipedia_id or "").isdigit())
        if self.source is not None:
            self.source.prefetch(
                spans=(
                    (str(e.wikipedia_id), e.start_paragraph_id, e.end_paragraph_id)
                    for e in entries
                    if not e.evidence_text and e.span is not None
                )
            )

    def map_record(self, record: DatasetRecord) -> DatasetRecord | None:
        report = self.report
        report.records_in += 1
        outputs = []
        methods: Counter = Counter()
        missing: list[str] = []
        for output in record.output:
            report.outputs_in += 1
            provenance = output.provenance
            if not provenance:
                # answers only (NQ-open, test files): nothing to map, unless the answer names an entity
                outputs.append(self._map_entity_answer(record, output, methods))
                continue
            mapped, dropped_reason = self._map_output(output, provenance, methods, missing)
            if dropped_reason is not None:
                report.dropped[dropped_reason] += 1
                continue
            outputs.append(output.with_provenance(mapped))
        if record.output and not outputs:
            report.dropped["record_without_outputs"] += 1
            return None
        report.records_out += 1
        report.outputs_out += len(outputs)
        meta = dict(record.meta)
        meta["mapping"] = {
            "target_snapshot": report.target_snapshot,
            "source_snapshot": report.source_snapshot,
            "methods": dict(methods),
            **({"missing_pages": sorted(set(missing))} if missing else {}),
        }
        return DatasetRecord(record.id, record.input, outputs, meta, record.line)

    def _qids_available(self) -> bool:
        if self._snapshot_has_qids is None:
            self._snapshot_has_qids = (
                self.target.has_qids and self.target.qid_coverage()["pages_with_qid"] > 0
            )
        return self._snapshot_has_qids

    def _map_entity_answer(self, record: DatasetRecord, output: Output, methods: Counter) -> Output:
        """An answer without provenance; when it names a Wikidata entity (``meta.entity``, MKQA), the page
        with that QID becomes its provenance, with the answer's best span on it when that reaches the BLEU
        threshold. Counted per language in ``answer_paths``."""
        meta = output.meta if isinstance(output.meta, dict) else {}
        qid = meta.get("entity")
        language = str(record.meta.get("language") or "-")
        paths = self.report.answer_paths.setdefault(language, Counter())
        if not isinstance(qid, str) or not QID_RE.fullmatch(qid):
            paths["answer_only_no_qid"] += 1
            return output
        if not self._qids_available():
            paths["qid_snapshot_without_qids"] += 1
            return output
        match = self.target.page_by_qid(qid)
        if match is None:
            paths["qid_not_in_snapshot"] += 1
            self.report.missing_pages[qid] += 1
            return output
        page = self.pages.cached(match.record)
        provenance_meta = {"wikidata_id": qid, "found_by": match.via}
        answer = output.answer
        best = None
        if isinstance(answer, str) and answer.strip():
            if page.prepared is None:
                page.prepared = prepare_page(page.text)
            self.report.spans_searched += 1
            best = find_best_span(answer, page.prepared)
        self.report.provenance_out += 1
        if best is not None and best.bleu >= self.threshold:
            paths["qid_span"] += 1
            methods["qid:span"] += 1
            self.report.bleu_histogram[_histogram_bin(best.bleu)] += 1
            entry = _span_provenance(page, best, provenance_meta)
        else:
            paths["qid_page"] += 1
            methods["qid:page"] += 1
            if best is not None:
                provenance_meta["best_span_bleu"] = best.bleu
            entry = Provenance.of(wikipedia_id=page.wikipedia_id, title=page.title, meta=provenance_meta)
        return output.with_provenance([entry])

    def _map_output(
        self, output: Output, provenance: list[Provenance], methods: Counter, missing: list[str]
    ) -> tuple[list[Provenance], str | None]:
        report = self.report
        mapped = []
        low_bleu = False
        for entry in provenance:
            report.provenance_in += 1
            page, how = self.pages.resolve(entry)
            report.page_resolution[how] += 1
            if page is None:
                report.dropped["provenance_page_missing"] += 1
                name = entry.title or str(entry.wikipedia_id)
                report.missing_pages[name] += 1
                missing.append(name)
                continue
            new = self._locate(entry, output, page, methods)
            if new.bleu_score is not None and new.bleu_score < self.threshold:
                low_bleu = True
            mapped.append(new)
        if not mapped:
            return [], "output_pages_missing"
        if low_bleu and not self.keep_all:
            return [], "output_low_bleu"
        report.provenance_out += len(mapped)
        return mapped, None

    def _locate(self, entry: Provenance, output: Output, page: TargetPage, methods: Counter) -> Provenance:
        report = self.report
        base = {"wikipedia_id": page.wikipedia_id, "title": page.title}
        extra = {
            k: v
            for k, v in entry.to_kilt().items()
            if k
            not in {
                *SPAN_COLUMNS,
                "wikipedia_id",
                "title",
                "section",
                "bleu_score",
                "evidence_text",
                "meta",
            }
        }
        meta = dict(entry.meta or {})
        meta.update(extra)
        if self.dataset in PAGE_LEVEL_DATASETS:
            evidence, method = None, "page"
        else:
            evidence, method = _evidence_for(entry, output, self.dataset, self.source)
        report.evidence[method] += 1
        if evidence is None:
            methods["page"] += 1
            return Provenance.of(**base, **({"meta": meta} if meta else {}))
        if page.prepared is None:
            page.prepared = prepare_page(page.text)
        report.spans_searched += 1
        match = find_best_span(evidence, page.prepared)
        if match is None:
            methods[f"{method}:no_span"] += 1
            report.bleu_histogram[0] += 1
            return Provenance.of(**base, bleu_score=0.0, **({"meta": meta} if meta else {}))
        methods[f"{method}:{match.method}"] += 1
        report.bleu_histogram[_histogram_bin(match.bleu)] += 1
        return _span_provenance(page, match, meta)
