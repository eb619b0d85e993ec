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

from assets.compressed import EVERY_CORE
from assets.limits import Limits
from assets.names import InvalidName, Name, check_name
from assets.segmentation import Unit

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
MAX_GROUP_BYTES = 1 << 30
MAX_RECORD_BYTES = 32 * 1024 * 1024
INPUT_FORM = "auto"
"""What a dump is (``knowledge_source.input``): read from the file."""
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
PASSAGE_UNIT: Unit = "words"
"""What ``max_words`` counts in Han, Kana, Thai, Lao, Khmer and Myanmar text (``passages.unit``): ``words``
(a segmenter's words) or ``characters`` (BERGEN's 100-character passages); elsewhere always words."""
WIKIDATA_SCOPE = "sitelinked"
"""Whose statements the KB keeps (``wikidata.scope``): the entities with a sitelink to the snapshot's wiki."""
DECODE_THREADS = EVERY_CORE
"""Threads decoding one compressed entity file (``wikidata.threads``): 0, one per core."""
WIKIDATA_SKIPPED_DATATYPES = (
    "external-id",
    "commonsMedia",
    "url",
    "geo-shape",
    "tabular-data",
    "math",
    "musical-notation",
    "entity-schema",
)
"""The datatypes of ``wikidata.facts_skip_datatypes``."""
STRUCTURED_PASSAGES = True

QA_PROVENANCE_DEPTH = 10
"""BM25 hits of a stored question searched for a passage that holds its answer (``qa.provenance_depth``)."""

QA_INDEX_MEMORY = "500MB"
"""What the QA-pair KB's dense index may take (``qa.index_memory``): the FAISS factory is chosen to fit it."""
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
"""The dump form a fetch takes (``snapshots.releases.form``): one multistream file, ``parts``, or
``enterprise-html``."""
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
    """A section of params.yaml: frozen, unknown keys refused, each field documented by its docstring (the
    field's description, which the Dagster run config derived from the section shows too)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @classmethod
    def from_params(cls, section: BaseModel | None = None) -> Any:
        """This section's class (or a subclass that adds behaviour, no fields) built from ``section``, a
        section of the params model; None: the defaults."""
        return cls() if section is None else cls.model_validate(section.model_dump())

    def replace(self, **changes: Any) -> Any:
        """This section with the ``changes`` that are not None in place, validated as params.yaml is (a run
        config's fields, a CLI's options over the file's values); a name the section lacks is an error."""
        unknown = sorted(set(changes) - set(type(self).model_fields))
        if unknown:
            raise ParamsError(f"{type(self).__name__} has no setting {unknown[0]!r}")
        given = {name: value for name, value in changes.items() if value is not None}
        return type(self).model_validate({**self.model_dump(), **given})


class KnowledgeSourceParams(_Section):
    """``knowledge_source``: which dump, which snapshot id, and how it is parsed."""

    dump: str | None = None
    """Path of a MediaWiki XML dump; None = the embedded default excerpt."""
    snapshot: Name | None = None
    """The snapshot id; None: ``{dbname}-{date of the file name or the newest revision}``."""
    as_of: str | None = None
    """Keep the latest revision at or before this date (full-history dumps)."""
    workers: int = Field(2, ge=0)
    """Wikitext conversion processes (0 = in-process)."""
    rows_per_shard: int = Field(ROWS_PER_SHARD, gt=0)
    """Pages per Parquet shard."""
    part_bytes: int = Field(PART_BYTES, gt=0)
    """Multistream bz2: compressed bytes per parse step."""
    invalid_bytes: Literal["error", "replace"] = INVALID_BYTES
    """What a byte that is not UTF-8 in the dump does: ``error`` (naming the page) or ``replace``."""
    max_page_bytes: int = Field(MAX_PAGE_BYTES, gt=0)
    """Larger pages are skipped, reported with id and size."""
    max_group_bytes: int = Field(MAX_GROUP_BYTES, gt=0)
    """Multistream bz2: decompressed bytes of one stream group a worker holds; more is an error."""
    max_record_bytes: int = Field(MAX_RECORD_BYTES, gt=0)
    """Enterprise HTML dumps: bytes of one article record (a line); longer ones are skipped and reported."""
    text_style: Literal["kilt", "clean"] = TEXT_STYLE
    """Kilt: as KILT writes pages | clean (text_styles.py)."""
    language: str | None = Field(None, pattern=r"^[a-z]{2,3}(-[a-z]+)?$")
    """The language the dump is built as (a Wikipedia code: ``ja``, ``zh``, ``th``); None: what the dump
    says (siteinfo, a record's ``in_language``), unless the scripts of its first pages contradict it and
    name a language by themselves (warned once)."""
    input: Literal["auto", "xml", "enterprise-html"] = INPUT_FORM
    """What the dump is: ``auto`` (read from the file: an Enterprise HTML dump by its name, else by its
    content, a gzip'd tar of ndjson; else a MediaWiki XML dump) | ``xml`` | ``enterprise-html``."""


class RebuildScheduleParams(_Section):
    """``snapshots.rebuild_schedule``: rebuild the derived assets of the newest snapshot."""

    cron: str = "0 4 * * 0"
    """When the derived assets of the newest snapshot are rebuilt (cron syntax)."""
    timezone: str = "UTC"
    """The schedule's timezone."""
    running: bool = False
    """Default status of the schedule in the Dagster daemon."""


class ReleasesParams(_Section):
    """``snapshots.releases``: the release sensor and ``kiltpipe fetch`` (the dump site, then mirrors)."""

    wikis: tuple[Name, ...] = ()
    """The wikis whose new runs the release sensor fetches (e.g. ``[enwiki]``)."""
    sources: tuple[str, ...] = ("https://dumps.wikimedia.org",)
    """The dump site, then mirrors, tried in this order."""
    form: Literal["multistream", "parts", "enterprise-html"] = FETCH_FORM
    """The dump form a fetch takes: one ``multistream`` file, its ``parts``, or the wiki's Enterprise HTML
    dump (``enterprise-html``: Parsoid HTML, every template expanded; no SQL table needed)."""
    tables: tuple[Literal["page_props", "redirect"], ...] = FETCH_TABLES
    """The SQL tables fetched with a dump: Wikidata QIDs (``page_props``) and ``redirect``."""
    interval_seconds: int = Field(3600, gt=0)
    """Seconds between two looks of the release sensor at the sources."""
    sensor_running: bool = False
    """Default status of the release sensor in the Dagster daemon."""
    connections_per_host: int = Field(FETCH_CONNECTIONS, gt=0)
    """Connections per host at most (Wikimedia asks for two)."""
    retries: int = Field(FETCH_RETRIES, ge=0)
    """Attempts per file after a drop, a 5xx or a stall before the fetch gives up."""
    stall_seconds: float = Field(FETCH_STALL_SECONDS, gt=0)
    """Seconds without a byte after which a download is cut and resumed."""
    rate_limit: int | None = Field(None, gt=0)
    """Bytes per second over all files; None: no limit."""
    wikidata: bool = False
    """With each run fetched, fetch the newest ready Wikidata entity dump too (into ``<landing>/wikidata/``,
    what ``wikidata.files: [landing]`` reads)."""
    contact: str = ""
    """An e-mail address or URL put into the User-Agent (Wikimedia's policy asks for one)."""


class SnapshotsParams(_Section):
    """``snapshots``: the landing sensor, incremental builds and the rebuild schedule."""

    landing_dir: str = "landing"
    """The folder the landing sensor watches (``$KILT_LANDING_DIR`` wins)."""
    sensor_interval_seconds: int = Field(60, gt=0)
    """Seconds between two scans of the landing folder."""
    settle_seconds: float = Field(60, ge=0)
    """Seconds a landed file must stay unchanged before it is built."""
    hash_budget_mb: int = Field(4096, gt=0)
    """Megabytes the landing sensor hashes per tick at most."""
    sensor_running: bool = True
    """Default status of the landing sensor in the Dagster daemon."""
    incremental: bool = True
    """Reuse the previous snapshot's work for unchanged pages and passages (the result is the same)."""
    rebuild_schedule: RebuildScheduleParams = RebuildScheduleParams()
    """The schedule that rebuilds the derived assets."""
    releases: ReleasesParams = ReleasesParams()
    """The release sensor and ``kiltpipe fetch``."""


class PassagesParams(_Section):
    """``passages``: how pages are cut into passages."""

    max_words: int = Field(MAX_WORDS, gt=0)
    """Words per passage, at most (KILT's and DPR's 100-word passages)."""
    mode: Literal["kilt", "dpr"] = PASSAGE_MODE
    """How pages are cut: ``kilt`` (per paragraph) or ``dpr`` (a page's text as one stream)."""
    unit: Unit = PASSAGE_UNIT
    """What a word is in scripts written without spaces: ``words`` (ICU's dictionary segmenter) or
    ``characters`` (each character one unit, BERGEN's ``wiki-100w-<lang>``); see assets/segmentation.py."""
    workers: int = Field(2, ge=0)
    """Processes that cut passages (0: in-process)."""
    structured: bool = STRUCTURED_PASSAGES
    """Tables and infoboxes as passages of their own (the ``structured`` collection)."""


class DatasetsParams(_Section):
    """``datasets``: which records are remapped onto the snapshot, and how strictly."""

    files: list[dict[str, Any]] | None = None
    """Dataset files: ``{path, format, dataset, split, qrels, language}`` each; None: the embedded records."""
    source_snapshot: Name | None = None
    """The snapshot whose text is the evidence for records with KILT coordinates (None: the target's)."""
    bleu_threshold: float = Field(BLEU_THRESHOLD, ge=0, le=1)
    """KILT's BLEU threshold: a dev/test answer span below it on the new snapshot is dropped."""
    min_mapped_fraction: float = Field(0.5, ge=0, le=1)
    """Share of a dataset's records that must map, else the asset check fails."""
    reports_dir: str = "reports"
    """Where reports go; relative: under the data dir."""
    store_memory: str = DATASETS_STORE_MEMORY
    """DuckDB buffer pool of the stores the mapping reads."""

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


class WikidataParams(_Section):
    """``wikidata``: the Wikidata entity dump read beside the snapshot (the ``kb`` collection, the entity
    linker, KB paths)."""

    files: tuple[str, ...] | None = None
    """Entity files (Wikimedia's JSON dump, bz2 or gzip; one entity per line; wbgetentities documents), a
    relative path read from the folder of params.yaml; ``landing``: the newest entity dump ``kiltpipe fetch
    --wikidata`` fetched into the landing folder; ``[]``: no KB (the KB assets write empty outputs that say
    so); None: the real entities shipped for the embedded default snapshot (``assets/wikidata/fixtures``),
    no KB for any other."""
    scope: Literal["sitelinked", "all"] = WIKIDATA_SCOPE
    """Whose statements are kept: ``sitelinked`` (the entities with a sitelink to the snapshot's wiki;
    the entities and properties they name are labelled) or ``all``."""
    language: str | None = None
    """The language of labels, descriptions and aliases beside English (default: the snapshot's)."""
    threads: int = Field(DECODE_THREADS, ge=0)
    """Threads decoding one bz2/gzip file (0: every core)."""
    label_files: tuple[str, ...] | None = None
    """Labels for the entities and properties the statements name and the entity files do not label
    (``id<TAB>label[<TAB>datatype]`` lines after a header, compressed or not; relative paths read from the
    folder of params.yaml); None: the English labels shipped with the project (every property, 12,983, and
    494 common items and units, from live Wikidata: ``assets/wikidata/fixtures``); ``[]``: none."""
    facts_skip_datatypes: tuple[str, ...] = WIKIDATA_SKIPPED_DATATYPES
    """Statement datatypes the ``kb`` passages leave out (kept in the statements table): identifiers in
    other databases, media files, URLs, shapes and tables, which a reader does not read as facts."""


class QAParams(_Section):
    """``qa``: the QA-pair knowledge base (RePAQ): stored questions and their answers, found by question."""

    files: tuple[str, ...] | None = None
    """QA-pair files (NQ-open/PAQ JSON lines, PAQ metadata lines, ``question<TAB>answers`` topics; gzip, bz2,
    xz or plain), relative paths read from the folder of params.yaml; ``[]``: no QA KB (its assets write
    empty outputs that say so); None: the real pairs shipped for the embedded default snapshot (DPR's NQ
    dev topics, ``assets/qa/fixtures``), none for any other."""
    provenance_depth: int = Field(QA_PROVENANCE_DEPTH, gt=0, le=1000)
    """BM25 hits of a stored question searched for a passage holding its answer (pairs whose metadata names
    no passage of the snapshot)."""
    index_memory: str = QA_INDEX_MEMORY
    """What the dense index over the questions may take: Flat while it fits, else IVF with SQ8, else PQ
    (``indexes.dense.factory`` ``budget:<size>``; the factory chosen is in the index's manifest)."""
    factory: str | None = None
    """A FAISS factory for the questions' dense index in place of the one ``index_memory`` picks."""
    source_passages: str | None = None
    """The passages PAQ's metadata names by id when they are another snapshot's (DPR's ``psgs_w100.tsv``:
    ``id<TAB>text<TAB>title``, gzip or plain; a relative path read from the folder of params.yaml): each
    is found on this snapshot by its title and KILT's span mapping, and the answer in it. None: only this
    snapshot's passage ids are looked up."""

    @field_validator("index_memory")
    @classmethod
    def _a_memory_size(cls, size: str) -> str:
        from assets.storage import memory_bytes

        memory_bytes(size)  # the error names what is wrong
        return size


class Bm25Params(_Section):
    """``indexes.bm25``: Anserini indexing and BM25 scoring."""

    threads: int = Field(BM25_THREADS, gt=0)
    """Anserini's indexing threads, and the Java threads of a batch search."""
    heap: str = BM25_HEAP
    """The JVM heap (``-Xmx``), in-process and in Anserini's subprocess."""
    language: str | None = None
    """The analyzer's language; None: the dump's."""
    k1: float = 0.9
    """BM25's term-frequency saturation (Anserini's and pyserini's name)."""
    b: float = 0.4
    """BM25's length normalisation."""


class EncoderParams(_Section):
    """The part of ``indexes.dense`` an encoder takes beside its model and backend (family, prompts,
    pooling, length, device, precision): :class:`~assets.indexes.dense.encoders.EncoderOptions` is this."""

    family: Literal["sentence-transformers", "dpr"] = DENSE_FAMILY
    """Sentence-transformers (one tower) or dpr (a question and a context encoder)."""
    query_model: str | None = None
    """dpr: the question encoder (``model`` is the context encoder)."""
    query_prompt: str | None = None
    """Text put before each query; None: the model's own."""
    passage_prompt: str | None = None
    """Text put before each passage; None: the model's own."""
    pooling: Literal["mean", "cls"] | None = None
    """mean | cls; None: the model's."""
    normalize: bool | None = None
    """L2-normalise the vectors; None: the model's (dpr: no)."""
    max_length: int | None = Field(None, ge=2)
    """Tokens per input; None: the model's."""
    device: str = DEVICE
    """Where the encoder runs: auto | cpu | cuda | cuda:N | cuda:0,cuda:1 | mps."""
    precision: Literal["auto", "fp32", "fp16", "bf16"] = PRECISION
    """Float precision; auto: fp16 on a GPU, fp32 on the CPU."""


class DenseParams(EncoderParams):
    """``indexes.dense``: the encoder (its model, backend and :class:`EncoderParams`) and the FAISS index."""

    model: str = "default"
    """The passage encoder: a hub name, a local folder, or ``default`` (all-MiniLM-L6-v2)."""
    language_models: dict[str, str] = Field(default_factory=dict)
    """Model per snapshot language (a Wikipedia code: ``{ja: ...}``; ``*``: every language not named)."""
    backend: str = DENSE_BACKEND
    """How the encoder runs: torch | onnx (int8) | onnx-fp32 | openvino | torch-int8."""
    batch_size: int | None = None
    """Passages per forward pass; None: the backend's."""
    shard_size: int = Field(DENSE_SHARD_SIZE, gt=0)
    """Passages per embeddings shard (the unit of a resumable encode step)."""
    factory: str = FAISS_FACTORY
    """The FAISS index factory string (``Flat``, ``IVF4096,PQ64``, ``HNSW32``...); ``budget:<size>`` (e.g.
    ``budget:500MB``): the most exact of Flat, IVF-SQ8 and PQ whose index fits that size."""
    metric: Literal["ip", "l2"] = FAISS_METRIC
    """Inner product or L2 distance."""
    train_sample: int | None = None
    """Vectors a trained index is trained on; None: FAISS's advice for the factory."""
    search_params: str = ""
    """FAISS ``ParameterSpace`` settings stored with the index (``nprobe=32``)."""
    faiss_gpu: Literal["auto", "on", "off"] = FAISS_GPU
    """Where FAISS builds; auto: on every GPU a GPU build of FAISS sees."""

    @field_validator("search_params", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


class HybridParams(_Section):
    """``indexes.hybrid``: reciprocal-rank fusion of BM25 and dense."""

    depth: int = Field(HYBRID_DEPTH, gt=0)
    """Hits of each part that take part in the fusion."""
    constant: float = Field(RRF_CONSTANT, gt=0)
    """Reciprocal-rank fusion's constant (0: Re2G's plain sum of inverse ranks)."""


class RerankParams(_Section):
    """``indexes.rerank``: Re2G's retrieve-then-rerank (the ``rerank`` index)."""

    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    """Any sentence-transformers ``CrossEncoder`` checkpoint (a hub name or a local folder)."""
    depth: int = Field(50, gt=0)
    """Candidates taken from each of bm25 and dense (their union is scored)."""
    batch_size: int = Field(RERANK_BATCH_SIZE, gt=0)
    """(query, passage) pairs per forward pass."""
    max_length: int | None = Field(None, ge=2)
    """Tokens per pair; None: the model's."""
    device: str | None = None
    """Where the cross-encoder runs; None: the dense encoder's device (``indexes.dense.device``)."""
    precision: Literal["auto", "fp32", "fp16", "bf16"] = PRECISION
    """Float precision; auto: fp16 on a GPU, fp32 on the CPU."""


class IndexChecksParams(_Section):
    """``indexes.checks``: the asset checks' sample sizes and floors."""

    self_retrieval_sample: int = Field(SELF_RETRIEVAL_SAMPLE, gt=0)
    """Passages whose text is searched by the self-retrieval checks."""
    self_retrieval_floor: float = Field(0.95, ge=0, le=1)
    """Share of them that must come back at rank 1."""
    recall_queries: int = Field(RECALL_QUERIES, gt=0)
    """Queries of the approximate-index recall check."""
    recall_floor: float = Field(0.95, ge=0, le=1)
    """Recall an approximate FAISS index must keep against exact search."""
    seed: int = CHECK_SEED
    """The seed of the checks' samples."""


class EvaluationParams(_Section):
    """``indexes.evaluation``: which indices the KILT evaluation runs, and how deep."""

    depth: int = Field(EVALUATION_DEPTH, gt=0)
    """Hits per query the evaluation reads."""
    indexes: tuple[Name, ...] = ("bm25", "dense", "hybrid")
    """The indices the evaluation scores."""
    collections: tuple[Literal["text", "structured", "kb", "both"], ...] = ("text", "both")
    """``text``: the text passages (KILT-comparable); ``structured``, ``kb``: one other collection; ``both``:
    every collection the snapshot has (text, structured, kb), when built."""
    max_queries: int | None = Field(None, gt=0)
    """First N records per split; None = every record."""


class IndexesParams(_Section):
    """``indexes``. A section named after an index type registered beside the built-in ones (a plugin's,
    :func:`assets.indexes.register_searcher` with a ``settings`` class) holds that type's settings: kept
    here as written, and validated by the type's settings class when the index settings are built
    (:meth:`assets.indexes.settings.IndexSettings.from_params`; a section no type claims is an error
    naming it there)."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)

    build: tuple[Name, ...] = ("bm25", "dense")
    """The indices a snapshot's build makes (leave dense out where encoding costs too much)."""
    bm25: Bm25Params = Bm25Params()
    """Anserini indexing and BM25 scoring."""
    dense: DenseParams = DenseParams()
    """The dense encoder and its FAISS index."""
    hybrid: HybridParams = HybridParams()
    """Reciprocal-rank fusion of bm25 and dense."""
    rerank: RerankParams = RerankParams()
    """Re2G's retrieve-then-rerank."""
    checks: IndexChecksParams = IndexChecksParams()
    """The asset checks' samples and floors."""
    evaluation: EvaluationParams = EvaluationParams()
    """The KILT retrieval evaluation."""


class Params(_Section):
    """The whole of ``params.yaml``."""

    data_dir: str = "data"
    """Where snapshots, builds and reports live (``$KILT_DATA_DIR`` wins)."""
    knowledge_source: KnowledgeSourceParams = KnowledgeSourceParams()
    """Which dump, which snapshot id, and how it is parsed."""
    snapshots: SnapshotsParams = SnapshotsParams()
    """Sensors, incremental builds and the rebuild schedule."""
    passages: PassagesParams = PassagesParams()
    """How pages are cut into passages."""
    datasets: DatasetsParams = DatasetsParams()
    """Which records are remapped onto the snapshot."""
    indexes: IndexesParams = IndexesParams()
    """The indices the evaluation scores."""
    wikidata: WikidataParams = WikidataParams()
    """The Wikidata entity dump read beside the snapshot (the KB)."""
    qa: QAParams = QAParams()
    """The QA-pair knowledge base (stored questions and their answers)."""
    limits: Limits = Limits()
    """Every bound on input from outside (assets/limits.py, docs/limits.md)."""


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


def configured_limits() -> Limits:
    """params.yaml's ``limits`` (read once), for a door (the CLI, ``serve``, the Dagster resources,
    :class:`assets.reading.Snapshot`) to hand to what it opens: domain code takes its limits as arguments
    and reads no params file."""
    return load_params().limits


def reports_dir(data_dir: Path, value: str | Path | None = None) -> Path:
    """Where reports go: ``value`` (default ``datasets.reports_dir``); a relative one is under ``data_dir``,
    so reports stay with the snapshots they describe whatever the working directory."""
    path = Path(value if value is not None else load_params().datasets.reports_dir)
    return path if path.is_absolute() else Path(data_dir) / path


def landing_dir() -> Path:
    """The folder the landing sensor watches (``$KILT_LANDING_DIR`` or ``snapshots.landing_dir``)."""
    return Path(os.environ.get("KILT_LANDING_DIR") or load_params().snapshots.landing_dir)
