"""``params.yaml``: the one place the pipeline's parameters live (CLI, Dagster and DVC read it).

One typed model per section of the file. The defaults written here are what runs without a ``params.yaml``;
every other default in the code (Dagster configs, ``IndexSettings``, ``ParseSettings``) is taken from these
models, never restated. Nothing reads the file at import time: :func:`load_params` reads it when the CLI
starts or when ``orchestration.definitions`` builds its definitions. A key the models do not know is an
error naming it (a typo in ``params.yaml`` must not be silently ignored).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assets.limits import Limits
from assets.names import InvalidName, Name, check_name

ROWS_PER_SHARD = 20_000
"""Pages per knowledge-source Parquet shard (``knowledge_source.rows_per_shard``)."""
MAX_WORDS = 100
"""Words per passage, at most (``passages.max_words``; KILT's and DPR's 100-word passages)."""
BM25_THREADS = 2
"""Anserini indexing threads (``indexes.bm25.threads``)."""
BM25_HEAP = "2g"
"""The JVM heap of Anserini, in-process and in its subprocesses (``indexes.bm25.heap``)."""
DATASETS_STORE_MEMORY = "1536MB"
"""The DuckDB buffer pool of each store file the mapping reads (one database when the evidence is the
target snapshot itself): at 1M articles 1,212 records/s in a 2.0 GB process, where two 1 GB pools over
the same store gave 1,025/s in 2.4 GB (docs/scale.md)."""
BM25_BATCH_QUERIES = 1_000
"""Queries per Anserini batch search call: the JVM heap holds one batch's hits (40k queries at depth 100
in one call ran a 2 GB heap out of memory)."""
RECALL_QUERIES = 500
"""Queries of the approximate-index recall check (``indexes.checks.recall_queries``)."""
PART_BYTES = 128_000_000
MAX_PAGE_BYTES = 8 * 1024 * 1024
"""Wikitext bytes of the largest page a build takes in: four times MediaWiki's own limit
(``$wgMaxArticleSize``, 2,048 KiB); larger pages are skipped and reported with their id and size."""
"""Compressed bytes of a multistream bz2 dump per parse step (``knowledge_source.part_bytes``)."""
INVALID_BYTES = "error"
"""What a byte that is not UTF-8 in the dump does: ``error`` (naming the page) or ``replace``
(``knowledge_source.invalid_bytes``)."""
TEXT_STYLE = "kilt"
"""How pages are written: ``kilt`` (as KILT's knowledge source) or ``clean``
(``knowledge_source.text_style``)."""
PASSAGE_MODE = "kilt"
"""How pages are cut into passages: ``kilt`` (per paragraph) or ``dpr`` (``passages.mode``)."""
STRUCTURED_PASSAGES = True
"""Tables and infoboxes as passages of their own (``passages.structured``)."""
DENSE_BACKEND = "torch"
"""How the dense encoder runs (``indexes.dense.backend``; ``torch`` on the CPU is the fp32 reference)."""
DENSE_FAMILY = "sentence-transformers"
"""The dense encoder's family (``indexes.dense.family``): one tower, or ``dpr``'s two."""
DEVICE = "auto"
"""Where the dense encoder and the cross-encoder run (``indexes.dense.device``): a GPU when there is one."""
PRECISION = "auto"
"""The encoders' float precision (``indexes.dense.precision``): fp16 on a GPU, fp32 on the CPU."""
FAISS_FACTORY = "Flat"
"""The FAISS index factory string (``indexes.dense.factory``): exact search."""
FAISS_METRIC = "ip"
"""Inner product (``indexes.dense.metric``): cosine similarity of normalised vectors."""
FAISS_GPU = "auto"
"""Where FAISS builds (``indexes.dense.faiss_gpu``): on every GPU a GPU build of FAISS sees."""
CHECK_SEED = 0
"""The seed of the checks' samples (``indexes.checks.seed``)."""
FETCH_FORM = "multistream"
"""The dump form a fetch takes (``snapshots.releases.form``): one multistream file, or ``parts``."""
FETCH_TABLES = ("page_props", "redirect")
"""The SQL tables fetched with a dump (``snapshots.releases.tables``): Wikidata QIDs and redirects."""
FETCH_CONNECTIONS = 2
"""Connections per host at most (``snapshots.releases.connections_per_host``; Wikimedia asks for two)."""
FETCH_RETRIES = 20
"""Attempts per file after a drop, a 5xx or a stall before the fetch gives up
(``snapshots.releases.retries``)."""
FETCH_STALL_SECONDS = 60.0
"""Seconds without a byte after which a download is cut and resumed (``snapshots.releases.stall_seconds``)."""
DENSE_SHARD_SIZE = 50_000
"""Passages per embeddings shard, the unit of a resumable encode step (``indexes.dense.shard_size``)."""
HYBRID_DEPTH = 100
"""Hits of each part a hybrid fuses (``indexes.hybrid.depth``)."""
RRF_CONSTANT = 60.0
"""Reciprocal-rank fusion's constant (``indexes.hybrid.constant``; Cormack et al.'s 60)."""
RERANK_BATCH_SIZE = 64
"""(query, passage) pairs per cross-encoder forward pass (``indexes.rerank.batch_size``)."""
SELF_RETRIEVAL_SAMPLE = 200
"""Passages whose text is searched by the self-retrieval checks (``indexes.checks.self_retrieval_sample``)."""
EVALUATION_DEPTH = 100
"""Hits per query the retrieval evaluation reads (``indexes.evaluation.depth``)."""
EVALUATION_CHUNK = 2_000
"""Gold records the retrieval evaluation searches and scores together (its memory: one chunk's hits)."""
BLEU_THRESHOLD = 0.5
"""KILT's BLEU threshold: a dev/test answer span below it on the new snapshot is dropped
(``datasets.bleu_threshold``)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KnowledgeSourceParams(_Section):
    """``knowledge_source``: which dump, which snapshot id, and how it is parsed."""

    dump: str | None = None  # path of a MediaWiki XML dump; None = the embedded default excerpt
    snapshot: Name | None = None  # None = {dbname}-{date of the file name or the newest revision}
    as_of: str | None = None  # keep the latest revision at or before this date (full-history dumps)
    workers: int = Field(2, ge=0)  # wikitext conversion processes (0 = in-process)
    rows_per_shard: int = Field(ROWS_PER_SHARD, gt=0)  # pages per Parquet shard
    part_bytes: int = Field(PART_BYTES, gt=0)  # multistream bz2: compressed bytes per parse step
    invalid_bytes: Literal["error", "replace"] = INVALID_BYTES
    max_page_bytes: int = Field(MAX_PAGE_BYTES, gt=0)  # larger pages are skipped, reported with id and size
    text_style: Literal["kilt", "clean"] = TEXT_STYLE  # kilt: as KILT writes pages | clean (text_styles.py)


class RebuildScheduleParams(_Section):
    """``snapshots.rebuild_schedule``: rebuild the derived assets of the newest snapshot."""

    cron: str = "0 4 * * 0"
    timezone: str = "UTC"
    running: bool = False


class ReleasesParams(_Section):
    """``snapshots.releases``: the release sensor and ``kiltpipe fetch`` (the dump site, then mirrors)."""

    wikis: tuple[Name, ...] = ()  # e.g. [enwiki]: the sensor fetches each new run of these wikis
    sources: tuple[str, ...] = ("https://dumps.wikimedia.org",)  # then mirrors, tried in this order
    form: Literal["multistream", "parts"] = FETCH_FORM
    tables: tuple[Literal["page_props", "redirect"], ...] = FETCH_TABLES
    interval_seconds: int = Field(3600, gt=0)
    sensor_running: bool = False  # default status of the release sensor in the Dagster daemon
    connections_per_host: int = Field(FETCH_CONNECTIONS, gt=0)
    retries: int = Field(FETCH_RETRIES, ge=0)
    stall_seconds: float = Field(FETCH_STALL_SECONDS, gt=0)
    rate_limit: int | None = Field(None, gt=0)  # bytes per second over all files; None: no limit
    contact: str = ""  # an e-mail address or URL put into the User-Agent (Wikimedia's policy asks for one)


class SnapshotsParams(_Section):
    """``snapshots``: the landing sensor, incremental builds and the rebuild schedule."""

    landing_dir: str = "landing"
    sensor_interval_seconds: int = Field(60, gt=0)
    settle_seconds: float = Field(60, ge=0)
    hash_budget_mb: int = Field(4096, gt=0)
    sensor_running: bool = True
    incremental: bool = True
    rebuild_schedule: RebuildScheduleParams = RebuildScheduleParams()
    releases: ReleasesParams = ReleasesParams()


class PassagesParams(_Section):
    """``passages``: how pages are cut into passages."""

    max_words: int = Field(MAX_WORDS, gt=0)
    mode: Literal["kilt", "dpr"] = PASSAGE_MODE
    workers: int = Field(2, ge=0)
    structured: bool = STRUCTURED_PASSAGES


class DatasetsParams(_Section):
    """``datasets``: which records are remapped onto the snapshot, and how strictly."""

    # {path, format, dataset, split, qrels, language}; None = the embedded records
    files: list[dict[str, Any]] | None = None
    source_snapshot: Name | None = None
    bleu_threshold: float = Field(BLEU_THRESHOLD, ge=0, le=1)
    min_mapped_fraction: float = Field(0.5, ge=0, le=1)
    reports_dir: str = "reports"
    store_memory: str = DATASETS_STORE_MEMORY  # DuckDB buffer pool of the stores the mapping reads

    @field_validator("store_memory")
    @classmethod
    def _a_memory_size(cls, size: str) -> str:
        from assets.storage import memory_bytes

        memory_bytes(size)  # the error names what is wrong
        return size

    @field_validator("files")
    @classmethod
    def _names_are_plain(cls, files: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """A dataset or split name becomes a file name (``<dataset>-<split>-kilt.jsonl``)."""
        for number, entry in enumerate(files or []):
            for key in ("dataset", "split"):
                if entry.get(key) is not None:
                    check_name(entry[key], what=f"files[{number}].{key}")
        return files


class Bm25Params(_Section):
    """``indexes.bm25``: Anserini indexing and BM25 scoring."""

    threads: int = Field(BM25_THREADS, gt=0)
    heap: str = BM25_HEAP
    language: str | None = None  # None: the dump's language
    k1: float = 0.9
    b: float = 0.4


class DenseParams(_Section):
    """``indexes.dense``: the encoder (family, prompts, pooling, device) and the FAISS index."""

    model: str = "default"
    # model per snapshot language (Wikipedia code, e.g. {ja: sentence-transformers/paraphrase-multilingual-
    # MiniLM-L12-v2}; "*": every language not named); a snapshot of another language uses ``model``
    language_models: dict[str, str] = Field(default_factory=dict)
    backend: str = DENSE_BACKEND
    family: Literal["sentence-transformers", "dpr"] = DENSE_FAMILY
    query_model: str | None = None  # dpr: the question encoder (model = the context encoder)
    query_prompt: str | None = None  # None: the model's own (sentence-transformers config)
    passage_prompt: str | None = None
    pooling: Literal["mean", "cls"] | None = None  # None: the model's
    normalize: bool | None = None  # None: the model's (dpr: no)
    max_length: int | None = Field(None, ge=2)  # tokens; None: the model's
    device: str = DEVICE  # auto | cpu | cuda | cuda:N | cuda:0,cuda:1 | mps
    precision: Literal["auto", "fp32", "fp16", "bf16"] = PRECISION  # auto: fp16 on a GPU, fp32 on the CPU
    batch_size: int | None = None
    shard_size: int = Field(DENSE_SHARD_SIZE, gt=0)
    factory: str = FAISS_FACTORY
    metric: Literal["ip", "l2"] = FAISS_METRIC
    train_sample: int | None = None
    search_params: str = ""
    faiss_gpu: Literal["auto", "on", "off"] = FAISS_GPU  # auto: on every GPU a GPU build of FAISS sees

    @field_validator("search_params", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


class HybridParams(_Section):
    """``indexes.hybrid``: reciprocal-rank fusion of BM25 and dense."""

    depth: int = Field(HYBRID_DEPTH, gt=0)
    constant: float = Field(RRF_CONSTANT, gt=0)


class RerankParams(_Section):
    """``indexes.rerank``: Re2G's retrieve-then-rerank (the ``rerank`` index)."""

    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"  # any sentence-transformers CrossEncoder
    depth: int = Field(50, gt=0)  # candidates taken from each of bm25 and dense (their union is scored)
    batch_size: int = Field(RERANK_BATCH_SIZE, gt=0)  # (query, passage) pairs per forward pass
    max_length: int | None = Field(None, ge=2)  # tokens per pair; None: the model's
    device: str | None = None  # None: indexes.dense.device
    precision: Literal["auto", "fp32", "fp16", "bf16"] = PRECISION


class IndexChecksParams(_Section):
    """``indexes.checks``: the asset checks' sample sizes and floors."""

    self_retrieval_sample: int = Field(SELF_RETRIEVAL_SAMPLE, gt=0)
    self_retrieval_floor: float = Field(0.95, ge=0, le=1)
    recall_queries: int = Field(RECALL_QUERIES, gt=0)
    recall_floor: float = Field(0.95, ge=0, le=1)
    seed: int = CHECK_SEED


class EvaluationParams(_Section):
    """``indexes.evaluation``: which indices the KILT evaluation runs, and how deep."""

    depth: int = Field(EVALUATION_DEPTH, gt=0)
    indexes: tuple[Name, ...] = ("bm25", "dense", "hybrid")
    # text: the text passages (KILT-comparable); both: text + structured (tables, infoboxes), when built
    collections: tuple[Literal["text", "structured", "both"], ...] = ("text", "both")
    max_queries: int | None = Field(None, gt=0)  # first N records per split; None = every record


class IndexesParams(_Section):
    """``indexes``. A section named after an index type registered beside the built-in ones (a plugin's,
    :func:`assets.indexes.register_searcher` with a ``settings`` class) holds that type's settings: kept
    here as written, and validated by the type's settings class when the index settings are built
    (:meth:`assets.indexes.settings.IndexSettings.from_params`; a section no type claims is an error
    naming it there)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # the indices a snapshot's build makes (build_all, rebuild_derived, the landing sensor's runs); leave
    # dense out where encoding costs too much (CPU-only machines at enwiki's ~30M passages)
    build: tuple[Name, ...] = ("bm25", "dense")
    bm25: Bm25Params = Bm25Params()
    dense: DenseParams = DenseParams()
    hybrid: HybridParams = HybridParams()
    rerank: RerankParams = RerankParams()
    checks: IndexChecksParams = IndexChecksParams()
    evaluation: EvaluationParams = EvaluationParams()


class Params(_Section):
    """The whole of ``params.yaml``."""

    data_dir: str = "data"
    knowledge_source: KnowledgeSourceParams = KnowledgeSourceParams()
    snapshots: SnapshotsParams = SnapshotsParams()
    passages: PassagesParams = PassagesParams()
    datasets: DatasetsParams = DatasetsParams()
    indexes: IndexesParams = IndexesParams()
    limits: Limits = Limits()  # every bound on input from outside (assets/limits.py, docs/limits.md)


class ParamsError(ValueError):
    """``params.yaml`` names a key the model does not know, or a value of the wrong kind."""


def params_path() -> Path:
    """``$KILT_PARAMS``, else ``params.yaml`` in the working directory."""
    return Path(os.environ.get("KILT_PARAMS", "params.yaml"))


def parse_params(values: dict[str, Any], source: str = "params") -> Params:
    """The model of a parsed ``params.yaml``; a :class:`ParamsError` names every bad key (``source``)."""
    try:
        return Params.model_validate(values)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"])
            error_in_value = (item.get("ctx") or {}).get("error")
            if item["type"] == "extra_forbidden":
                problems.append(f"unknown key {key!r}")
            elif isinstance(error_in_value, InvalidName) and isinstance(item.get("input"), str):
                problems.append(f"{key} {item['input']!r} {error_in_value.rule}")
            elif isinstance(error_in_value, InvalidName):
                problems.append(f"{key}: {error_in_value}")
            else:
                problems.append(f"{key}: {item['msg']} (got {item.get('input')!r})")
        raise ParamsError(f"{source}: " + "; ".join(problems)) from None


def load_params(path: Path | None = None) -> Params:
    """``params.yaml`` (default :func:`params_path`, read when ``$KILT_PARAMS`` is) over the built-in
    defaults; no file: the defaults. Each file is read once."""
    return _load_params(path or params_path())


@cache
def _load_params(path: Path) -> Params:
    loaded: Any = {}
    if path.is_file():
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ParamsError(f"{path}: expected a mapping of sections, got {type(loaded).__name__}")
    return parse_params(loaded, str(path))


load_params.cache_clear = _load_params.cache_clear  # type: ignore[attr-defined]


def data_dir() -> Path:
    return Path(os.environ.get("KILT_DATA_DIR") or load_params().data_dir)


def reports_dir(data_dir: Path, value: str | Path | None = None) -> Path:
    """Where reports go: ``value`` (default ``datasets.reports_dir``); a relative one is under ``data_dir``,
    so reports stay with the snapshots they describe whatever the working directory."""
    path = Path(value if value is not None else load_params().datasets.reports_dir)
    return path if path.is_absolute() else Path(data_dir) / path


def landing_dir() -> Path:
    """The folder the landing sensor watches (``$KILT_LANDING_DIR`` or ``snapshots.landing_dir``)."""
    return Path(os.environ.get("KILT_LANDING_DIR") or load_params().snapshots.landing_dir)
