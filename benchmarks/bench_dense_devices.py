"""Encoding throughput on a device: our torch encoder vs sentence-transformers' own ``encode``.

Run through ``benchmarks/bench_dense.py --device cuda`` (or ``cpu``, ``auto``, ``cuda:N``). For each model
and precision, the same real excerpt passages (cycled to ``--passages`` rows) are encoded by

- ours: :class:`assets.indexes.dense.encoders.torch_backend.TransformerEncoder` (``load_encoder``): one
  tokenizer call, token-length-sorted batches padded to their longest row, pinned host memory, vectors kept
  on the device until the end;
- the peer: ``SentenceTransformer.encode`` of the same model on the same device at the same precision and
  batch size (its own character-length sort, per-batch tokenization and transfer back).

Models: all-MiniLM-L6-v2 (the packaged weights) and a BERT-base-size encoder (12 layers, hidden 768, the
size of DPR's, E5-base's and BGE-base's encoders) with random weights built here: throughput does not
depend on the weights, and no base checkpoint can be downloaded on the machines this runs on in CI.
Targets (issue 15), on one data-centre GPU: ours >= 1.5x the peer; the base-size encoder >= 5,000
passages/s (21M passages in under 70 minutes). On a machine without a GPU it says so and measures the CPU.
"""

from __future__ import annotations

import argparse
import gc
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from assets.indexes.dense.encoders import (
    EncoderOptions,
    encode_devices,
    load_encoder,
    passage_text,
    resolve_precision,
)
from benchmarks.common import format_table, machine_info, write_results
from support.workspace import WORK_DIR, log

WIKIPEDIA_PASSAGES = 21_000_000  # DPR's psgs_w100 is 21,015,324


def base_size_model() -> Path:
    """A sentence-transformers model of BERT-base size (random weights, the packaged BERT tokenizer)."""
    target = WORK_DIR / "models" / "bert-base-size-random"
    if (target / "modules.json").is_file():
        return target
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel

    from assets.indexes.dense.encoders import default_model_dir

    log("building a BERT-base-size encoder (random weights) for timing")
    bert_dir = target.parent / "bert-base-size-random-bert"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522)).save_pretrained(bert_dir)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (default_model_dir() / name).is_file():
            shutil.copyfile(default_model_dir() / name, bert_dir / name)
    transformer = Transformer(str(bert_dir), max_seq_length=256)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu").save(str(target))
    return target


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _timed(fn: Any, device: str, rounds: int) -> tuple[float, Any]:
    """Best wall seconds of ``rounds`` calls (after one warm-up call on a slice) and the last result."""
    best, result = float("inf"), None
    for _ in range(rounds):
        gc.collect()
        _synchronize(device)
        started = time.perf_counter()
        result = fn()
        _synchronize(device)
        best = min(best, time.perf_counter() - started)
    return best, result


def peer_encoder(model_dir: str, device: str, precision: str) -> Any:
    """sentence-transformers' SentenceTransformer of the model on ``device`` at ``precision``."""
    import warnings

    from sentence_transformers import SentenceTransformer

    from assets.indexes.dense.encoders import hub_offline, resolve_model, torch_dtype

    with hub_offline(True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SentenceTransformer(resolve_model(model_dir)[1], device=device)
    model.to(dtype=torch_dtype(precision))
    return model.eval()


def bench_model(
    label: str,
    model_dir: str,
    titles: list[str],
    texts: list[str],
    device: str,
    precisions: list[str],
    batch_size: int,
    rounds: int,
) -> list[dict[str, Any]]:
    joined = [passage_text(t, x) for t, x in zip(titles, texts, strict=True)]
    rows = []
    for precision in precisions:
        ours = load_encoder(
            model_dir, "torch", batch_size, options=EncoderOptions(device=device, precision=precision)
        )
        peer = peer_encoder(model_dir, device, precision)
        ours.encode_passages(titles[:batch_size], texts[:batch_size])  # warm-up (kernels, allocator)
        peer.encode(joined[:batch_size], batch_size=batch_size, show_progress_bar=False)
        our_seconds, our_vectors = _timed(partial(ours.encode_passages, titles, texts), device, rounds)
        peer_call = partial(
            peer.encode, joined, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )  # fmt: skip
        peer_seconds, peer_vectors = _timed(peer_call, device, rounds)
        cosine = (our_vectors * np.asarray(peer_vectors, dtype=np.float32)).sum(axis=1)
        rate, peer_rate = len(titles) / our_seconds, len(titles) / peer_seconds
        rows.append(
            {
                "model": label,
                "precision": precision,
                "batch_size": batch_size,
                "passages": len(titles),
                "passages_per_second": round(rate, 1),
                "peer_passages_per_second": round(peer_rate, 1),
                "speedup_vs_peer": round(rate / peer_rate, 2),
                "mean_cosine_vs_peer": round(float(cosine.mean()), 5),
                "hours_for_21m_passages": round(WIKIPEDIA_PASSAGES / rate / 3600, 2),
            }
        )
        log(f"{label} {precision}: ours {rate:.0f}/s, sentence-transformers {peer_rate:.0f}/s")
        gc.collect()
    return rows


def bench_build_path(passages_dir: Path, device: str, precision: str, batch_size: int) -> dict[str, Any]:
    """The dense build's own encode (:func:`encode_passages`: shards, manifest) of ``passages_dir`` on one
    device process, then on several (every GPU, or two processes sharing the one GPU): the multi-process
    path the ``dense_index`` asset takes with ``device: auto``. Same vectors either way (the same shards
    meet the same kernels), each run's passages/s."""
    import shutil
    import tempfile

    from assets.indexes.dense import Embeddings, encode_passages

    many = encode_devices("auto") if device.startswith("cuda") else [device]
    many = many if len(many) > 1 else [device, device]
    encoder = load_encoder(
        "default", "torch", batch_size, options=EncoderOptions(device=device, precision=precision)
    )
    work = Path(tempfile.mkdtemp(prefix="dense-build-path-", dir=WORK_DIR))
    try:
        rates, vectors = {}, {}
        for label, devices in (("one process", [device]), (f"{len(many)} processes", many)):
            out = work / label.replace(" ", "-")
            report = encode_passages(
                passages_dir, out, encoder, shard_size=2048, batch_size=batch_size, progress=False,
                devices=devices,
            )  # fmt: skip
            rates[label] = {
                "devices": report.devices,
                "passages_per_second": round(report.passages_per_second, 1),
            }
            vectors[label] = Embeddings.open(out).load()
            log(f"build path, {label} on {report.devices}: {report.passages_per_second:.0f} passages/s")
        first, second = vectors.values()
        return {
            "precision": precision,
            "passages": int(first.shape[0]),
            "runs": rates,
            "max_abs_difference": float(np.abs(first - second).max()),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return str(torch.cuda.get_device_name(device))
    return str(machine_info().get("cpu_model") or "CPU")


def run(args: argparse.Namespace, titles: list[str], texts: list[str], passages_dir: Path) -> None:
    """The device benchmark on the excerpt's ``titles``/``texts`` (cycled to ``args.device_passages``),
    then the dense build's encode of ``passages_dir`` on one and on several processes."""
    device = encode_devices(args.device)[0]
    on_gpu = device.startswith(("cuda", "mps"))
    if not on_gpu:
        log(f"no GPU here (device {args.device} -> {device}): measuring the CPU")
    precisions = args.precisions.split(",") if args.precisions else (["fp32", "fp16"] if on_gpu else ["fp32"])
    precisions = [resolve_precision(p, device) for p in precisions]
    count = args.device_passages or (20_000 if on_gpu else 384)
    repeat = -(-count // len(titles))
    cycled_titles, cycled_texts = (titles * repeat)[:count], (texts * repeat)[:count]
    batch = args.device_batch or (256 if on_gpu else 32)
    rows = bench_model(
        "all-MiniLM-L6-v2", "default", cycled_titles, cycled_texts, device, precisions, batch, args.rounds
    )
    base_count = count if on_gpu else max(32, count // 6)
    rows += bench_model(
        "BERT-base size (random weights)", str(base_size_model()), cycled_titles[:base_count],
        cycled_texts[:base_count], device, precisions, batch, args.rounds,
    )  # fmt: skip
    build_path = bench_build_path(passages_dir, device, precisions[-1], batch) if on_gpu else None
    best_base = max((r["passages_per_second"] for r in rows if r["model"].startswith("BERT-base")), default=0)
    results = {
        "device": device,
        "device_name": device_name(device),
        "gpu": on_gpu,
        "passages": "the embedded excerpt's real passages (title + text), cycled to the count",
        "peer": "sentence-transformers SentenceTransformer.encode: same model, device, precision, batch size",
        "runs": rows,
        "build_path": build_path,
        "targets": {
            "speedup_vs_peer_min": min(r["speedup_vs_peer"] for r in rows),
            "speedup_target_met (>= 1.5x, GPU)": on_gpu and min(r["speedup_vs_peer"] for r in rows) >= 1.5,
            "base_size_passages_per_second": best_base,
            "base_size_target_met (>= 5,000/s, GPU)": on_gpu and best_base >= 5000,
        },
        "machine": machine_info(),
    }
    path = write_results(f"dense_devices_{'gpu' if on_gpu else 'cpu'}", results)
    print(f"\nEncoding on {results['device_name']} ({device}); peer: sentence-transformers encode")
    headers = ["model", "precision", "batch", "passages/s", "peer/s", "ratio", "cosine", "h / 21M"]
    print(
        format_table(
            headers,
            [
                [r["model"], r["precision"], r["batch_size"], r["passages_per_second"],
                 r["peer_passages_per_second"], f"{r['speedup_vs_peer']}x", r["mean_cosine_vs_peer"],
                 r["hours_for_21m_passages"]]
                for r in rows
            ],
        )
    )  # fmt: skip
    if build_path:
        print(f"\nthe dense build's encode ({build_path['precision']}): {build_path['runs']}, "
              f"max |difference| {build_path['max_abs_difference']}")  # fmt: skip
    print(f"\ntargets: {results['targets']}\nresults: {path}")
