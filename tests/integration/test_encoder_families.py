"""Dense encoder families and devices end to end on the real excerpt's passages.

The packaged all-MiniLM-L6-v2 checks that our torch encoder gives sentence-transformers' own vectors; small
models built in the test (``tests/tiny_models.py``: random weights, the real BERT tokenizer) check each
family's code path, its manifest and its query/passage asymmetry: an E5-style sentence-transformers model
whose config carries ``query: ``/``passage: `` prompts, and DPR's two towers. Several devices are two CPU
processes here (the same code that puts one process on each GPU); FAISS's GPU path runs with FAISS's GPU
functions stood in by CPU copies (a GPU build is not installable here).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.indexes.dense import (
    INDEX_META,
    MANIFEST,
    DenseSearcher,
    DenseSettings,
    Embeddings,
    add_shard_to_faiss,
    build_dense,
    build_faiss_index,
    encode_passages,
    faiss_gpus,
    merge_faiss_shards,
    train_faiss_index,
)
from assets.indexes.dense.encoders import EncoderOptions, passage_text
from assets.indexes.dense.encoders.loading import (
    SentenceTransformerEncoder,
    default_model_dir,
    load_encoder,
    load_sentence_transformer,
)
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from assets.params import IndexesParams
from assets.storage import SnapshotPaths, read_report_json
from tests.tiny_models import tiny_dpr, tiny_sentence_transformer

QUERIES = [
    "Who developed the general theory of relativity?",
    "What is the capital city of Albania?",
    "fraction of sunlight reflected by a surface",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    context, question = tiny_dpr(root / "dpr")
    return {"e5": tiny_sentence_transformer(root / "e5"), "context": context, "question": question}


@pytest.fixture(scope="module")
def passages(built_store):
    paths, _ = built_store
    return pq.read_table(paths.passages_parquet, columns=["passage_id", "title", "text"])


FAMILY_PASSAGES = 1200
"""Passages each family encodes end to end: the excerpt's first, in two shards (every code path, seconds)."""


@pytest.fixture(scope="module")
def snapshot(built_store, tmp_path_factory: pytest.TempPathFactory) -> SnapshotPaths:
    """The excerpt's store and its first :data:`FAMILY_PASSAGES` passages (the rest linked, read-only) in
    a data dir of its own for dense builds."""
    paths, _ = built_store
    mine = SnapshotPaths(tmp_path_factory.mktemp("families-data"), paths.snapshot_id)
    mine.root.mkdir(parents=True)
    for child in paths.root.iterdir():
        if child.name not in ("indexes", "passages"):
            (mine.root / child.name).symlink_to(child)
    for child in paths.passages_parquet.parent.iterdir():
        if child != paths.passages_parquet:
            (mine.passages_parquet.parent / child.name).parent.mkdir(parents=True, exist_ok=True)
            (mine.passages_parquet.parent / child.name).symlink_to(child)
    files = sorted(paths.passages_parquet.glob("part-*.parquet"))
    first = pa.concat_tables(pq.read_table(f) for f in files).slice(0, FAMILY_PASSAGES)
    mine.passages_parquet.mkdir(parents=True)
    half = FAMILY_PASSAGES // 2
    pq.write_table(first.slice(0, half), mine.passages_parquet / "part-00000.parquet")
    pq.write_table(first.slice(half), mine.passages_parquet / "part-00001.parquet")
    return mine


@pytest.fixture(scope="module")
def subset(passages, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 600 real passages as two Parquet shards."""
    directory = tmp_path_factory.mktemp("subset")
    rows = passages.slice(0, 600)
    pq.write_table(rows.slice(0, 300), directory / "part-00000.parquet")
    pq.write_table(rows.slice(300), directory / "part-00001.parquet")
    return directory


# ------------------------------------------------------------------------------------- one encoder
def test_our_torch_encoder_gives_sentence_transformers_vectors(passages) -> None:
    ours = load_encoder("default", "torch")
    assert type(ours).__name__ == "TransformerEncoder" and ours.description()["pooling"] == "mean"
    reference = SentenceTransformerEncoder(
        load_sentence_transformer(str(default_model_dir()), True), ours.name, "torch"
    )
    sample = passages.slice(0, 48)
    titles, texts = sample.column("title").to_pylist(), sample.column("text").to_pylist()
    joined = [passage_text(t, x) for t, x in zip(titles, texts, strict=True)]
    assert np.abs(ours.encode_passages(titles, texts) - reference.encode(joined)).max() < 1e-5
    assert np.abs(ours.encode_queries(QUERIES) - reference.encode(QUERIES)).max() < 1e-5
    # reduced precision through the same path (fp16/bf16 is the GPU default; bf16 also runs on a CPU)
    half = load_encoder("default", "torch", options=EncoderOptions(device="cpu", precision="bf16"))
    assert half.description()["precision"] == "bf16"
    cosine = (half.encode(joined[:4]) * reference.encode(joined[:4])).sum(axis=1)
    assert cosine.min() > 0.98


def test_prompts_come_from_the_model_config_and_can_be_overridden(tiny) -> None:
    encoder = load_encoder(tiny["e5"])
    assert (encoder.query_prompt, encoder.passage_prompt) == ("query: ", "passage: ")
    text = "Albert Einstein developed the theory of relativity"
    np.testing.assert_allclose(encoder.encode_queries([text]), encoder.encode([f"query: {text}"]), atol=1e-6)
    np.testing.assert_allclose(
        encoder.encode_passages(["Albert Einstein"], ["was a physicist"]),
        encoder.encode(["passage: Albert Einstein was a physicist"]),
        atol=1e-6,
    )
    assert not np.allclose(encoder.encode_queries([text]), encoder.encode_passages([""], [text]), atol=1e-3)
    plain = load_encoder(tiny["e5"], options=EncoderOptions(query_prompt="", passage_prompt="doc: "))
    assert plain.description()["query_prompt"] == "" and plain.description()["passage_prompt"] == "doc: "
    np.testing.assert_allclose(plain.encode_queries([text]), encoder.encode([text]), atol=1e-6)


def test_dpr_towers_pool_cls_without_normalising_and_pair_title_with_text(tiny) -> None:
    import torch
    from transformers import AutoTokenizer, DPRContextEncoder, DPRQuestionEncoder

    encoder = load_encoder(
        tiny["context"], options=EncoderOptions(family="dpr", query_model=str(tiny["question"]))
    )
    description = encoder.description()
    assert description["family"] == "dpr" and description["query_model"] == str(tiny["question"].resolve())
    assert (description["pooling"], description["normalize"]) == ("cls", False)
    tokenizer = AutoTokenizer.from_pretrained(tiny["context"])
    question, context = (
        DPRQuestionEncoder.from_pretrained(tiny["question"]),
        DPRContextEncoder.from_pretrained(tiny["context"]),
    )
    with torch.no_grad():
        expected_query = question(**tokenizer(QUERIES[:1], return_tensors="pt")).pooler_output.numpy()
        pair = tokenizer(["Albert Einstein"], ["was a physicist"], return_tensors="pt")
        assert pair["token_type_ids"][0].tolist().count(1) > 0  # two segments, as DPR feeds passages
        expected_passage = context(**pair).pooler_output.numpy()
    np.testing.assert_allclose(encoder.encode_queries(QUERIES[:1]), expected_query, atol=1e-5)
    np.testing.assert_allclose(
        encoder.encode_passages(["Albert Einstein"], ["was a physicist"]), expected_passage, atol=1e-5
    )
    assert abs(np.linalg.norm(expected_query) - 1) > 0.1  # inner product on raw vectors, as DPR
    with pytest.raises(ValueError, match="query_model"):
        load_encoder(tiny["context"], options=EncoderOptions(family="dpr"))
    with pytest.raises(ValueError, match="torch backend"):
        load_encoder(tiny["context"], "onnx", options=EncoderOptions(family="dpr", query_model="x"))


# ------------------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("family", ["sentence-transformers", "dpr"])
def test_each_family_builds_and_searches_the_excerpt(family: str, tiny, snapshot: SnapshotPaths) -> None:
    # 64 tokens, 1,200 passages: every path in seconds; the length is recorded and checked like any option
    defaults = DenseSettings.from_params()
    if family == "dpr":
        dense = defaults.replace(
            model=str(tiny["context"]), family="dpr", query_model=str(tiny["question"]), max_length=64
        )
    else:
        dense = defaults.replace(model=str(tiny["e5"]), max_length=64)
    dense = dense.replace(shard_size=500)
    settings = IndexSettings.from_params(IndexesParams()).replace(dense=dense)
    built = build_dense(snapshot, dense)
    assert built.encode.passages == built.index.vectors == FAMILY_PASSAGES and built.encode.devices == ["cpu"]
    manifest = json.loads((snapshot.dense_embeddings / MANIFEST).read_text())
    meta = read_report_json(snapshot.dense_index / INDEX_META)  # a local model's path is a run fact
    assert manifest["encoder"] == meta["encoder"] == built.encode.encoder
    assert meta["encoder"]["family"] == family and manifest["normalized"] is (family != "dpr")
    if family == "dpr":
        assert meta["encoder"]["query_model"] == str(tiny["question"].resolve())
        assert meta["encoder"]["passage_input"].startswith("[CLS] title [SEP] text")
    else:
        assert (meta["encoder"]["query_prompt"], meta["encoder"]["passage_prompt"]) == (
            "query: ",
            "passage: ",
        )

    # queries are encoded the index's way: the hits are the exact inner-product top 10 of those vectors
    encoder = dense.load_encoder()
    vectors, ids = (
        Embeddings.open(snapshot.dense_embeddings).load(),
        Embeddings.open(snapshot.dense_embeddings).ids(),
    )
    with Retriever(snapshot, settings) as retriever:
        found = retriever.batch_search("dense", QUERIES, 10)
    scores = encoder.encode_queries(QUERIES) @ vectors.T
    for hits, row in zip(found, scores, strict=True):
        top = np.argsort(-row, kind="stable")[:10]
        assert [h.passage_id for h in hits][:5] == [ids[i] for i in top][:5]
        np.testing.assert_allclose([h.score for h in hits], row[top], rtol=1e-4, atol=1e-4)

    # settings that name another encoder than the index's are refused, with the difference named
    other = settings.replace(dense=dense.replace(query_prompt="search_query: ", max_length=32))
    with (
        Retriever(snapshot, other) as retriever,
        pytest.raises(ValueError, match=r"another encoder.*max_length"),
    ):
        retriever.batch_search("dense", QUERIES, 10)
    wrong = load_encoder(dense.model, options=dense.encoder_options().model_copy(update={"max_length": 32}))
    with pytest.raises(ValueError, match="queries would not be encoded as the index's passages"):
        DenseSearcher(snapshot.dense_index, wrong)


def test_several_devices_encode_what_one_device_encodes(tiny, subset: Path, tmp_path: Path) -> None:
    encoder = load_encoder(tiny["e5"], options=EncoderOptions(device="cpu"))
    one = encode_passages(subset, tmp_path / "one", encoder, 150, progress=False)
    two = encode_passages(subset, tmp_path / "two", encoder, 150, progress=False, devices=["cpu", "cpu"])
    assert (one.shards, two.shards, two.encoded_passages, two.devices) == (4, 4, 600, ["cpu"])
    first, second = Embeddings.open(tmp_path / "one"), Embeddings.open(tmp_path / "two")
    assert first.ids() == second.ids()
    np.testing.assert_allclose(first.load(), second.load(), atol=1e-6)
    assert json.loads((tmp_path / "two" / MANIFEST).read_text())["complete"]


def test_faiss_trains_and_adds_on_gpus_when_faiss_has_them(
    tiny, subset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    encoder = load_encoder(tiny["e5"], options=EncoderOptions(device="cpu"))
    encode_passages(subset, tmp_path / "emb", encoder, 150, progress=False)
    cpu = build_faiss_index(tmp_path / "emb", tmp_path / "cpu", "IVF8,Flat", train_sample=600, gpu="off")
    assert cpu.device == "cpu" and faiss_gpus("auto") == 0  # the CPU build of FAISS installed here
    with pytest.raises(RuntimeError, match="faiss-gpu"):
        faiss_gpus("on")

    moves: list[str] = []
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(
        faiss, "index_cpu_to_all_gpus", lambda i: moves.append("to gpu") or faiss.clone_index(i)
    )
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", lambda i: moves.append("to cpu") or i, raising=False)
    gpu = build_faiss_index(tmp_path / "emb", tmp_path / "gpu", "IVF8,Flat", train_sample=600)
    assert gpu.device == "gpu x 1" and moves == ["to gpu", "to cpu"] * 5  # training, then each of 4 shards
    moves.clear()  # the same steps one by one, as the asset's steps run them
    training = train_faiss_index(tmp_path / "emb", tmp_path / "work", "IVF8,Flat", train_sample=600)
    parts = [add_shard_to_faiss(tmp_path / "emb", training["work_dir"], s, gpu="on") for s in range(4)]
    merged = merge_faiss_shards(tmp_path / "emb", tmp_path / "merged", training, parts, "IVF8,Flat")
    assert training["device"] == merged.device == "gpu x 1" and moves.count("to gpu") == 5
    queries = encoder.encode_queries(QUERIES)
    results = [
        DenseSearcher(tmp_path / name, nprobe=8).search_vectors(queries, 10)[1]
        for name in ("cpu", "gpu", "merged")
    ]
    assert (results[0] == results[1]).all() and (results[0] == results[2]).all()

    def no_gpu_version(index):
        raise RuntimeError("not implemented for this type of index")

    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", no_gpu_version)
    assert build_faiss_index(tmp_path / "emb", tmp_path / "hnsw", "HNSW16").device == "cpu"
