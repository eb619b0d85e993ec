"""A snapshot's indices as one retriever (bm25, dense, hybrid), their checks and KILT evaluation.

* :func:`build_bm25` / :func:`build_dense` build the indices of a snapshot under ``indexes/``.
* :class:`Retriever` searches them (single queries or batches) and returns :class:`Hit` lists;
  ``hybrid`` is reciprocal-rank fusion of the two rankings (Re2G).
* :func:`self_retrieval` and :func:`approximate_recall` measure what the blocking checks gate on.
* :func:`evaluate_indexes` scores every index on the datasets remapped onto the same snapshot with
  KILT's page-level metrics and writes JSON, Markdown and a bar chart.

Pure module: no Dagster import.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from assets import charts, params
from assets.files import atomic_path
from assets.indexes.encoder_options import EncoderOptions
from assets.indexes.evaluation import KS, add_guesses, has_provenance, scores_of
from assets.indexes.hits import Hit
from assets.indexes.kilt_metrics import RetrievalMeans
from assets.indexes.searchers import Searcher, get_searcher_type
from assets.iterables import batched
from assets.params import EVALUATION_CHUNK, EVALUATION_DEPTH, RECALL_QUERIES, SELF_RETRIEVAL_SAMPLE
from assets.storage import SnapshotPaths, sql_literal, write_report_json
from assets.wikipedia.languages import wiki_language

EXACT_FACTORIES = frozenset({"Flat", "IDMap,Flat", "FlatIP", "FlatL2"})


# =========================================================================================== settings
_DEFAULT = params.IndexesParams()


_SECTION_PREFIXES = {"bm25": "bm25_", "dense": "", "hybrid": "hybrid_", "rerank": "rerank_"}
_UNPREFIXED = frozenset({"k1", "b"})  # BM25's parameters, named as Anserini and pyserini name them


def _flat_name(section: str, key: str) -> str:
    return key if key in _UNPREFIXED else _SECTION_PREFIXES[section] + key


def _frozen(value: Any) -> Any:
    """A mapping as its sorted item tuple (the settings are frozen and hashable); anything else as it is."""
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


def flat_index_params(section: params.IndexesParams) -> dict[str, Any]:
    """``indexes`` of params.yaml as :class:`IndexSettings` fields: each section's keys with its prefix
    (``bm25_``, ``hybrid_``, ``rerank_``; none for ``dense``, and ``k1``/``b`` as they are)."""
    return {
        _flat_name(name, key): _frozen(value)
        for name in _SECTION_PREFIXES
        for key, value in getattr(section, name).model_dump().items()
    }


def _settings_fields() -> list[tuple[str, Any, Any]]:
    """:class:`IndexSettings`' fields, read off the params model: name by :func:`flat_index_params`' rule,
    the model's type (a mapping's as item tuples) and its default."""
    fields: list[tuple[str, Any, Any]] = []
    for name in _SECTION_PREFIXES:
        defaults = getattr(_DEFAULT, name)
        for key, info in type(defaults).model_fields.items():
            value = getattr(defaults, key)
            annotation = tuple[tuple[str, str], ...] if isinstance(value, dict) else info.annotation
            fields.append((_flat_name(name, key), annotation, field(default=_frozen(value))))
    return fields


class _IndexSettingsMethods:
    """What :class:`IndexSettings` does; its fields come from the params model (:func:`_settings_fields`)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, section: params.IndexesParams | None = None, **overrides: Any) -> IndexSettings:
        """The settings of ``section`` (default: params.yaml's), with the ``overrides`` that are not None."""
        values = flat_index_params(section or params.load_params().indexes)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def for_language(self, language: str | None) -> IndexSettings:
        """These settings for a snapshot of ``language``: its model of ``language_models`` (``*`` for any
        language not named) in place of ``model``; unchanged when none applies."""
        if not self.language_models or not language:
            return self
        models = dict(self.language_models)
        code = wiki_language(language)
        chosen = models.get(code) or models.get(language) or models.get("*")
        return self if chosen is None or chosen == self.model else dataclasses.replace(self, model=chosen)

    def for_snapshot(self, paths: SnapshotPaths) -> IndexSettings:
        """:meth:`for_language` with the language of the snapshot's knowledge source."""
        if not self.language_models or not paths.manifest_file.is_file():
            return self
        return self.for_language(json.loads(paths.manifest_file.read_text()).get("language"))

    def encoder_options(self, device: str | None = None) -> EncoderOptions:
        """The dense encoder's :class:`EncoderOptions` (on ``device``, default the setting's)."""
        return EncoderOptions(
            family=self.family,
            query_model=self.query_model,
            query_prompt=self.query_prompt,
            passage_prompt=self.passage_prompt,
            pooling=self.pooling,
            normalize=self.normalize,
            max_length=self.max_length,
            device=device or self.device,
            precision=self.precision,
        )

    def load_encoder(self, device: str | None = None) -> Any:
        """The dense encoder these settings describe (model, backend, batch size, options)."""
        from assets.indexes.encoders import load_encoder

        return load_encoder(self.model, self.backend, self.batch_size, options=self.encoder_options(device))


_SETTINGS_DOC = """How a snapshot's indices are built and searched: ``indexes`` of params.yaml, flattened
by one rule (:func:`flat_index_params`); every field, type and default is the params model's
(:class:`assets.params.IndexesParams`), none is written here."""
IndexSettings = dataclasses.make_dataclass(
    "IndexSettings",
    _settings_fields(),
    bases=(_IndexSettingsMethods,),
    namespace={"__module__": __name__, "__doc__": _SETTINGS_DOC},
    frozen=True,
    slots=True,
)


def snapshot_language(paths: SnapshotPaths) -> str:
    """The dump's language code from the knowledge-source manifest (siteinfo), ``en`` when unknown."""
    if paths.manifest_file.is_file():
        return json.loads(paths.manifest_file.read_text()).get("language") or "en"
    return "en"


def passage_count(paths: SnapshotPaths) -> int:
    """Passages of the snapshot, from the passages stage's report."""
    return int(json.loads(paths.passages_report.read_text())["passages"])


# =========================================================================================== building
def build_bm25(paths: SnapshotPaths, settings: IndexSettings, *, progress: bool = False) -> Any:
    """The snapshot's Lucene index over its passage collection (:func:`bm25.build_bm25_index`)."""
    from assets.indexes.bm25 import build_bm25_index

    return build_bm25_index(
        paths.passages_collection,
        paths.bm25_index,
        threads=settings.bm25_threads,
        heap=settings.bm25_heap,
        language=settings.bm25_language or snapshot_language(paths),
        progress=progress,
    )


@dataclass(slots=True)
class DenseBuild:
    encode: Any  # dense.EncodeReport
    index: Any  # dense.IndexReport


def build_dense(
    paths: SnapshotPaths,
    settings: IndexSettings,
    *,
    progress: bool = False,
    encoder: Any = None,
    reuse_from: SnapshotPaths | None = None,
) -> DenseBuild:
    """Encode the passages (resuming finished shards) and build the FAISS index from them.

    Embeddings made with another model, backend or input are discarded, not mixed. ``reuse_from``: an
    earlier snapshot whose vectors are copied for passages with the same id and text (when its
    embeddings were made with the same model and backend; the encode report says why not otherwise).
    """
    from assets.indexes.dense import ReuseSource, build_faiss_index, encode_passages
    from assets.indexes.encoder_options import encode_devices

    devices = encode_devices(settings.device) if encoder is None and settings.backend == "torch" else []
    encoder = encoder or settings.load_encoder(devices[0] if devices else None)
    reuse = ReuseSource(reuse_from.passages_parquet, reuse_from.dense_embeddings) if reuse_from else None
    encoded = encode_passages(
        paths.passages_parquet,
        paths.dense_embeddings,
        encoder,
        settings.shard_size,
        batch_size=settings.batch_size,
        progress=progress,
        on_mismatch="restart",
        reuse_from=reuse,
        devices=devices,
    )
    index = build_faiss_index(
        paths.dense_embeddings,
        paths.dense_index,
        settings.factory,
        settings.metric,
        train_sample=settings.train_sample,
        search_params=settings.search_params,
        gpu=settings.faiss_gpu,
    )
    return DenseBuild(encoded, index)


# =========================================================================================== searching
class Retriever:
    """Search one snapshot's indices, of any registered index type (:mod:`assets.indexes.searchers`).
    Searchers (the JVM, the FAISS index, the query encoder) open on first use, once each; ``close()`` (or
    ``with``) releases them."""

    def __init__(self, paths: SnapshotPaths, settings: IndexSettings | None = None) -> None:
        self.paths = paths
        self.settings = (settings or IndexSettings.from_params()).for_snapshot(paths)
        self._searchers: dict[str, Searcher] = {}
        self._store: Any = None  # the provenance store, opened (read-only) on the first text lookup

    def searcher(self, index: str) -> Searcher:
        """The open searcher of an index type (opened now if it is not)."""
        if index not in self._searchers:
            self._searchers[index] = get_searcher_type(index).open(self)
        return self._searchers[index]

    @property
    def bm25(self) -> Any:
        """The Lucene searcher (:class:`~assets.indexes.bm25.Bm25Searcher`)."""
        return self.searcher("bm25").inner

    @property
    def dense(self) -> Any:
        """The FAISS searcher (:class:`~assets.indexes.dense.DenseSearcher`)."""
        return self.searcher("dense").inner

    def open(self, index: str) -> Retriever:
        """Load what ``index`` searches with now (JVM, FAISS index, encoder) rather than on first query."""
        self.searcher(index)
        return self

    def batch_search(
        self,
        index: str,
        queries: Sequence[str],
        k: int = 10,
        *,
        threads: int | None = None,
        with_text: bool = False,
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query (query order kept; a blank query has no hits)."""
        searcher = self.searcher(index)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        queries = list(queries)
        if not queries:
            return []
        hits = searcher.batch_search(queries, k, threads=threads, with_text=with_text)
        return self.with_text(hits) if with_text else hits

    def search(self, index: str, query: str, k: int = 10, *, with_text: bool = True) -> list[Hit]:
        return self.batch_search(index, [query], k, with_text=with_text)[0]

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]:
        """The hits with title and text filled in from the provenance store (or the passages Parquet)."""
        wanted = {h.passage_id for hits in results for h in hits if h.text is None}
        if not wanted:
            return results
        if self._store is None and self.paths.provenance_store.is_file():
            from assets.provenance_store import ProvenanceStore

            self._store = ProvenanceStore(self.paths)
        rows = passage_rows(self.paths, wanted, self._store)
        return [
            [
                h
                if h.text is not None or h.passage_id not in rows
                else Hit(h.passage_id, h.wikipedia_id, h.score, *rows[h.passage_id])
                for h in hits
            ]
            for hits in results
        ]

    def close(self) -> None:
        for searcher in reversed(list(self._searchers.values())):
            searcher.close()
        self._searchers = {}
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def passage_rows(
    paths: SnapshotPaths, passage_ids: set[str], store: Any = None
) -> dict[str, tuple[str, str]]:
    """``{passage_id: (title, text)}``: one indexed lookup in the provenance store (``store``, an open
    one, or the snapshot's when it is built), else one scan of the passages Parquet."""
    if store is not None:
        return store.passage_texts(sorted(passage_ids))
    if paths.provenance_store.is_file():
        from assets.provenance_store import ProvenanceStore

        with ProvenanceStore(paths) as opened:
            return opened.passage_texts(sorted(passage_ids))
    from assets.indexes.runs import lookup_passages

    rows = lookup_passages(paths.passages_parquet, passage_ids, ("title", "text"))
    return {pid: (row["title"], row["text"]) for pid, row in rows.items()}


# =========================================================================================== checks
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def first_sentence(text: str, min_words: int = 4) -> str:
    """The passage's first full sentence of at least ``min_words`` words (a passage that opens
    mid-sentence, e.g. ``"law practice. He ..."``, skips that fragment); the whole text when none."""
    parts = _SENTENCE_BREAK.split(text.strip())
    if len(parts) > 1 and parts[0][:1].islower():
        parts = parts[1:]
    return next((p for p in parts if len(p.split()) >= min_words), text.strip())


def sample_passages(paths: SnapshotPaths, size: int, seed: int = 0) -> list[tuple[str, str]]:
    """``size`` ``(passage_id, text)`` drawn uniformly (reservoir sample, streamed; sorted by id)."""
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT passage_id, text FROM read_parquet({sql_literal(paths.passages_glob)}) "
            f"USING SAMPLE reservoir({int(size)} ROWS) REPEATABLE ({int(seed)})"
        ).fetchall()
    finally:
        con.close()
    return sorted(rows)


@dataclass(slots=True)
class SelfRetrieval:
    """How many sampled passages are in the top ``k`` when queried with their first sentence. A sentence
    that other passages hold word for word (boilerplate, stubs of one mould, copied paragraphs) does not
    single its passage out: a hit that holds the sentence is its evidence as well, and counts as found
    (``found_as_duplicate`` of ``found``). A broken index (ids and vectors or documents out of step) still
    fails: its hits do not hold the sentence."""

    index: str
    queried: int
    found: int
    k: int
    seconds: float
    found_as_duplicate: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)  # the first 20, for the report

    @property
    def fraction(self) -> float:
        return self.found / self.queried if self.queried else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": self.fraction}


def self_retrieval(
    retriever: Retriever, index: str, *, sample: int = SELF_RETRIEVAL_SAMPLE, seed: int = 0, k: int = 10
) -> SelfRetrieval:
    """Query ``sample`` random passages by their first sentence on ``index``; count own-passage hits."""
    started = time.perf_counter()
    passages = sample_passages(retriever.paths, sample, seed)
    queries = [first_sentence(text) for _, text in passages]
    results = retriever.batch_search(index, queries, k, with_text=True)
    found, duplicates, misses = 0, 0, []
    for (passage_id, _), query, hits in zip(passages, queries, results, strict=True):
        if any(h.passage_id == passage_id for h in hits):
            found += 1
        elif any(query in (h.text or "") for h in hits):
            found, duplicates = found + 1, duplicates + 1
        elif len(misses) < 20:
            misses.append({"passage_id": passage_id, "query": query, "top": [h.passage_id for h in hits[:3]]})
    seconds = round(time.perf_counter() - started, 2)
    return SelfRetrieval(index, len(passages), found, k, seconds, duplicates, misses)


@dataclass(slots=True)
class RecallResult:
    """recall@k of the configured FAISS index against exact inner-product search on the same queries."""

    factory: str
    exact_index: bool
    queries: int
    k: int
    recall: float
    search_params: str


def exact_top_k(embeddings_dir: Path, queries: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of the exact top ``k`` inner products (as a set per query, in no particular order),
    streamed shard by shard (bounded memory)."""
    from assets.indexes.dense import Embeddings

    embeddings = Embeddings.open(embeddings_dir)
    best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    offset = 0
    for shard in embeddings.shard_arrays():
        scores = queries @ np.asarray(shard, dtype=np.float32).T
        rows = np.broadcast_to(np.arange(offset, offset + shard.shape[0]), scores.shape)
        scores = np.concatenate([best_scores, scores], axis=1)
        rows = np.concatenate([best_rows, rows], axis=1)
        if scores.shape[1] > k:  # a partial selection: the callers compare sets, not orders
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            scores, rows = np.take_along_axis(scores, top, axis=1), np.take_along_axis(rows, top, axis=1)
        best_scores, best_rows = scores, np.ascontiguousarray(rows)
        offset += shard.shape[0]
    return best_rows


def recall_against_exact(searcher: Any, embeddings_dir: Path, vectors: np.ndarray, k: int = 10) -> float:
    """Mean |approximate top-k ∩ exact top-k| / k of a :class:`DenseSearcher` over query ``vectors``;
    ``k`` is at most the number of vectors (an index of 3 vectors has 3, not 10, to find)."""
    k = min(k, searcher.count)
    if k == 0:
        raise ValueError("the dense index holds no vectors: recall is undefined")
    _, approx = searcher.search_vectors(vectors, k)
    exact = exact_top_k(embeddings_dir, vectors, k)
    overlaps = [
        len(set(a[a >= 0].tolist()) & set(e.tolist())) / k for a, e in zip(approx, exact, strict=True)
    ]
    return float(np.mean(overlaps)) if overlaps else 0.0


def approximate_recall(
    retriever: Retriever, *, queries: int = RECALL_QUERIES, seed: int = 0, k: int = 10
) -> RecallResult:
    """recall@k of the snapshot's dense index on first-sentence queries of sampled passages; an exact
    factory is measured too (it must come out at 1.0)."""
    searcher = retriever.dense
    texts = [first_sentence(text) for _, text in sample_passages(retriever.paths, queries, seed)]
    vectors = searcher.encode_queries(texts)
    factory = str(searcher.meta["factory"])
    return RecallResult(
        factory=factory,
        exact_index=factory.replace(" ", "") in EXACT_FACTORIES,
        queries=len(texts),
        k=min(k, searcher.count),
        recall=recall_against_exact(searcher, retriever.paths.dense_embeddings, vectors, k),
        search_params=retriever.settings.search_params or searcher.meta.get("search_params") or "",
    )


# =========================================================================================== evaluation
@dataclass(slots=True)
class EvalQueries:
    """One remapped dataset split (its JSONL file), read chunk by chunk: every gold record counts, as in
    KILT's evaluation; the queries are the records with an input."""

    dataset: str
    split: str
    path: Path
    records: int = 0  # in the file

    def chunks(
        self, size: int = EVALUATION_CHUNK, limit: int | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """The records ``size`` at a time (the first ``limit`` of them, when given)."""
        with open(self.path, encoding="utf-8") as handle:
            records = (json.loads(line) for line in handle if line.strip())
            yield from batched(records if limit is None else islice(records, limit), size)

    @property
    def gold(self) -> list[dict[str, Any]]:
        """Every record (read whole: for small splits and tests)."""
        return [record for chunk in self.chunks() for record in chunk]

    @property
    def queried(self) -> list[dict[str, Any]]:
        return asked(self.gold)


def asked(gold: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with an input to query with."""
    return [record for record in gold if (record.get("input") or "").strip()]


def eval_queries(paths: SnapshotPaths) -> list[EvalQueries]:
    """Every remapped split with page-level provenance on at least one record."""
    found = []
    for path in sorted(paths.datasets.glob("*-kilt.jsonl")):
        dataset, _, split = path.name.removesuffix("-kilt.jsonl").rpartition("-")
        queries = EvalQueries(dataset, split, path)
        with_provenance = False
        for chunk in queries.chunks():
            queries.records += len(chunk)
            with_provenance = with_provenance or any(has_provenance(record) for record in chunk)
        if with_provenance:
            found.append(queries)
    return found


NO_EVALUATION = (
    "no remapped dataset split has page-level provenance on this snapshot (set datasets.files to map "
    "datasets onto it)"
)


def retrieval_reports_dir(reports_dir: Path, snapshot_id: str) -> Path:
    return Path(reports_dir) / snapshot_id / "retrieval"


def evaluate_indexes(
    retriever: Retriever,
    reports_dir: Path,
    *,
    indexes: Sequence[str] | None = None,
    depth: int = EVALUATION_DEPTH,
    ks: Sequence[int] = KS,
    chunk: int = EVALUATION_CHUNK,
    max_queries: int | None = None,
) -> dict[str, Any]:
    """KILT metrics per dataset split and index; ``retrieval.json``, ``retrieval.md`` and
    ``r_precision.png`` under ``reports/<snapshot>/retrieval/``. ``indexes``: default those of
    ``indexes.evaluation`` (bm25, dense, hybrid: ``rerank`` needs its cross-encoder, so it is asked for).
    Each split is searched and scored ``chunk`` gold records at a time; ``max_queries``: only the first
    that many records of each split (the report gives the split's size beside the queries scored)."""
    indexes = list(indexes) if indexes is not None else list(params.EvaluationParams().indexes)
    paths = retriever.paths
    results: dict[str, Any] = {
        "snapshot_id": paths.snapshot_id,
        "depth": depth,
        "ks": list(ks),
        "indexes": list(indexes),
        **({"max_queries": max_queries} if max_queries else {}),
        "splits": [],
    }
    read = max(ks, default=0)  # the in-context metrics read the text of the first max(ks) passages only
    for queries in eval_queries(paths):
        means = {name: RetrievalMeans(ks) for name in indexes}
        seconds = dict.fromkeys(indexes, 0.0)
        scored = without_provenance = 0
        for gold in queries.chunks(chunk, max_queries):  # one read; memory stays one chunk's hits
            queried = asked(gold)
            for name in indexes:
                started = time.perf_counter()
                found = retriever.batch_search(name, [r["input"] for r in queried], depth)
                texts = retriever.with_text([ranked[:read] for ranked in found])
                hits = {
                    str(record["id"]): [*top, *ranked[read:]]
                    for record, ranked, top in zip(queried, found, texts, strict=True)
                }
                add_guesses(means[name], gold, hits)
                seconds[name] += time.perf_counter() - started
            scored += len(gold)
            without_provenance += sum(not has_provenance(record) for record in gold)
        results["splits"].append(
            {
                "dataset": queries.dataset,
                "split": queries.split,
                "queries": scored,
                **({"records": queries.records} if max_queries else {}),
                "indexes": {
                    name: {**scores_of(means[name], without_provenance), "seconds": round(seconds[name], 3)}
                    for name in indexes
                },
            }
        )
    rows = [
        {
            "dataset": f"{s['dataset']}-{s['split']}",
            "index": name,
            "queries": s["queries"],
            **{
                key: round(value, 4) if isinstance(value, float) else value
                for key, value in metrics.items()
                if key not in ("queries", "without_provenance", "seconds")
            },
        }
        for s in results["splits"]
        for name, metrics in s["indexes"].items()
    ]
    results["table"] = rows
    out = retrieval_reports_dir(reports_dir, paths.snapshot_id)
    write_report_json(out / "retrieval.json", results)
    chart = {f"{r['dataset']}/{r['index']}": r["Rprec"] for r in rows}
    png = charts.bar_chart_png(
        chart or {"(no remapped dataset)": 0},
        title=f"KILT R-precision by dataset and index ({paths.snapshot_id})",
        xlabel="dataset/index",
        ylabel="R-precision",
    )
    charts.save_png(png, out / "r_precision.png")
    shown = ["dataset", "index", "queries", "Rprec", "precision@1", "recall@5", "recall@20", "success_rate@5"]
    shown += ["answer_in_context@5", "entity_in_context@5"]
    markdown = (
        f"# Retrieval evaluation: {paths.snapshot_id}\n\n"
        f"KILT's page-level metrics by the rules of kilt/eval_retrieval.py (every record of a split counts); "
        f"{depth} passages retrieved per query, in rank order. retrieval.json has every metric.\n\n"
        + (
            f"Only the first {max_queries:,} records of each split are scored (max_queries).\n\n"
            if max_queries
            else ""
        )
        + (
            charts.markdown_table([{k: r[k] for k in shown} for r in rows])
            if rows
            else f"Skipped: {NO_EVALUATION}."
        )
        + "\n\n![R-precision](r_precision.png)\n"
    )
    with atomic_path(out / "retrieval.md") as tmp:
        tmp.write_text(markdown, encoding="utf-8")
    return results
