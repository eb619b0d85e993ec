"""The ONNX backends of the dense encoder: the model's transformer exported to ONNX, fused, optionally int8.

See :mod:`assets.indexes.dense.encoders.loading` for what each backend is; this module exports the graph
(cached under :func:`default_cache_dir`) and runs it (:class:`OnnxEncoder`, CPU only).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from assets.indexes.dense.encoders.base import SingleTowerEncoder, dimension_of

EXPORT_FORMAT = 2  # bump when the export/optimize/quantize recipe changes (invalidates cached files)

log = logging.getLogger(__name__)


def pooling_and_normalize(model: Any) -> tuple[str, bool]:
    """The pooling mode (``mean`` or ``cls``) and whether the model normalises, or refuse."""
    modules = [type(m).__name__ for m in model]
    if len(modules) < 2 or modules[0] != "Transformer" or modules[1] != "Pooling":
        raise NotImplementedError(
            f"ONNX backends need Transformer + Pooling modules, this model has {modules}"
        )
    if any(name not in ("Transformer", "Pooling", "Normalize") for name in modules):
        raise NotImplementedError(f"ONNX backends do not support the modules {modules}")
    pooling = model[1]
    mode = getattr(pooling, "pooling_mode", None)
    if mode is None:
        config = pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}
        mode = next((k.removeprefix("pooling_mode_") for k, v in config.items() if v is True), "mean")
    mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(str(mode), str(mode))
    if mode not in ("mean", "cls"):
        raise NotImplementedError(f"ONNX backends support mean or cls pooling, not {mode!r}")
    return mode, True  # rows are always L2-normalised here (inner product == cosine)


def _library_versions() -> dict[str, str]:
    versions = {}
    for package in ("torch", "transformers", "sentence-transformers", "onnxruntime", "onnx"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "-"
    return versions


def _model_fingerprint(name: str, load_path: str, is_local: bool) -> str:
    """Hash of the model's config/tokenizer files and weight sizes (local) or its name (hub)."""
    digest = hashlib.sha256(name.encode())
    if is_local:
        root = Path(load_path)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            relative = str(path.relative_to(root))
            if relative.startswith(("onnx", "openvino", ".")):
                continue
            digest.update(relative.encode())
            if path.suffix in (".json", ".txt", ".model") and path.stat().st_size < 5_000_000:
                digest.update(path.read_bytes())
            else:
                digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()


def default_cache_dir() -> Path:
    env = os.environ.get("KILT_ENCODER_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kilt-pipeline" / "encoders"


def export_onnx(
    model: Any, name: str, load_path: str, is_local: bool, *, quantize: bool, cache_dir: Path | None = None
) -> Path:
    """The fused (and, with ``quantize``, int8) ONNX file for ``model``, exported once and cached."""
    versions = _library_versions()
    key_payload = {
        "format": EXPORT_FORMAT,
        "model": _model_fingerprint(name, load_path, is_local),
        "versions": versions,
    }
    key = hashlib.sha256(json.dumps(key_payload, sort_keys=True).encode()).hexdigest()[:16]
    directory = (cache_dir or default_cache_dir()) / key
    fp32_path = directory / "model-fp32-fused.onnx"
    int8_path = directory / "model-int8-dynamic.onnx"
    target = int8_path if quantize else fp32_path
    if target.is_file():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".export-") as scratch:
        work = Path(scratch)
        if not fp32_path.is_file():
            raw = work / "raw.onnx"
            _torch_export(model, raw)
            fused = work / "fused.onnx"
            _optimize(raw, fused, model)
            os.replace(fused, fp32_path)
        if quantize and not int8_path.is_file():
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantized = work / "int8.onnx"
            with _quiet():
                quantize_dynamic(
                    str(fp32_path),
                    str(quantized),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
                )
            os.replace(quantized, int8_path)
    (directory / "export.json").write_text(json.dumps({**key_payload, "name": name}, indent=2) + "\n")
    return target


@contextlib.contextmanager
def _quiet():
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


def _torch_export(model: Any, path: Path) -> None:
    """Trace the transformer (eager attention, so onnxruntime can fuse it) to ONNX with dynamic axes."""
    import torch

    transformer = model[0]
    hf_model = transformer.model if hasattr(transformer, "model") else transformer.auto_model
    tokenizer = model.tokenizer
    previous = getattr(hf_model.config, "_attn_implementation", None)
    if hasattr(hf_model, "set_attn_implementation"):
        hf_model.set_attn_implementation("eager")
    else:
        hf_model.config._attn_implementation = "eager"
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]
    sample = tokenizer(
        ["a short one", "and a somewhat longer second sentence"], padding=True, return_tensors="pt"
    )

    class _Wrapper(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    try:
        with torch.inference_mode(False), torch.no_grad(), _quiet():
            torch.onnx.export(
                _Wrapper(hf_model.eval()),
                tuple(sample[n] for n in names),
                str(path),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
    finally:
        if previous is not None:
            if hasattr(hf_model, "set_attn_implementation"):
                with contextlib.suppress(Exception):
                    hf_model.set_attn_implementation(previous)
            else:
                hf_model.config._attn_implementation = previous


def _optimize(source: Path, target: Path, model: Any) -> None:
    """onnxruntime's transformer fusions for BERT-like graphs; a plain copy when they do not apply."""
    config = model[0].model.config if hasattr(model[0], "model") else model[0].auto_model.config
    model_type = {"bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "distilbert": "bert"}.get(
        getattr(config, "model_type", "")
    )
    if model_type is None:
        shutil.copyfile(source, target)
        return
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        options = FusionOptions(model_type)
        # Add + LayerNormalization is ~4x faster than onnxruntime's CPU SkipLayerNormalization kernel
        options.enable_skip_layer_norm = options.enable_bias_skip_layer_norm = False
        options.enable_gelu_approximation = True  # FastGelu (tanh): cheaper than erf, cosine unchanged
        with _quiet():
            optimized = optimize_model(
                str(source),
                model_type=model_type,
                num_heads=int(config.num_attention_heads),
                hidden_size=int(config.hidden_size),
                optimization_options=options,
            )
            optimized.save_model_to_file(str(target))
    except Exception as error:  # fusions are an optimisation: fall back to the plain export
        log.warning("onnxruntime transformer optimizer failed (%s); using the unfused graph", error)
        shutil.copyfile(source, target)


class OnnxEncoder(SingleTowerEncoder):
    """The sentence-transformers tokenizer + an exported ONNX transformer + pooling + L2 normalisation.

    With ``threads`` > 1 and ``parallel="batches"`` (the default for onnxruntime), ``threads`` batches run
    at once on a single-threaded session (scales ~2x on 2 cores, where onnxruntime's own intra-op threads
    give ~1.8x); ``parallel="intra"`` runs one batch at a time on ``threads`` intra-op threads. Either way a
    batch's members depend only on ``texts`` and ``batch_size`` (texts sorted by token count), so the
    output does too.

    int8 (``onnx``) runs each text alone, whatever ``batch_size``: onnxruntime's dynamic quantization takes
    one activation scale per input tensor, so a text batched with others would depend on its batch mates
    and their padding, and an incremental build (re-encoding only changed passages) would differ from a
    full one. Alone, a text's vector depends on that text only; on 2 CPU cores it is no slower (3,000
    excerpt passages: 15.0-15.5 s alone, 16.0-16.7 s in batches of 32).
    """

    def __init__(
        self,
        model: Any,
        name: str,
        backend: str,
        onnx_path: Path,
        *,
        batch_size: int = 32,
        threads: int | None = None,
        parallel: str = "batches",
    ) -> None:
        if parallel not in ("batches", "intra"):
            raise ValueError(f"parallel must be 'batches' or 'intra', not {parallel!r}")
        self.name = name
        self.backend = backend
        self.batch_size = batch_size
        self.onnx_path = onnx_path
        self.tokenizer = model.tokenizer
        self.max_length = int(model.max_seq_length or 512)
        self.pooling, _ = pooling_and_normalize(model)
        self.precision = "int8" if backend == "onnx" else "fp32"
        self.dimension = dimension_of(model)
        self.input_names = [
            n
            for n in ("input_ids", "attention_mask", "token_type_ids")
            if n in self.tokenizer.model_input_names
        ]
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.workers = self.threads if parallel == "batches" and backend != "openvino" else 1
        self._run = self._make_runner(self.threads if self.workers == 1 else 1)
        self._pool: ThreadPoolExecutor | None = None

    def _make_runner(self, threads: int) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
        if self.backend == "openvino":
            import openvino as ov

            core = ov.Core()
            compiled = core.compile_model(
                str(self.onnx_path),
                "CPU",
                {
                    "INFERENCE_NUM_THREADS": threads,
                    "PERFORMANCE_HINT": "LATENCY",
                    "INFERENCE_PRECISION_HINT": "f32",
                },
            )
            request = compiled.create_infer_request()
            output = compiled.outputs[0]
            return lambda feed: request.infer(feed)[output]
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # no busy-waiting between operators: the same speed here, and fair to other processes
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(self.onnx_path),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["SkipLayerNormFusion"],  # keep Add + LayerNormalization (faster on CPU)
        )
        return lambda feed: session.run(None, feed)[0]  # thread-safe: batches may run concurrently

    def _tokenize(self, texts: Sequence[str]) -> tuple[dict[str, list[list[int]]], np.ndarray]:
        """Token ids of every text (one tokenizer call, no padding) and their lengths."""
        encoded = self.tokenizer(
            list(texts),
            padding=False,
            truncation=True,
            max_length=self.max_length,
            return_attention_mask=False,
        )
        columns = {n: encoded[n] for n in self.input_names if n != "attention_mask" and n in encoded}
        lengths = np.fromiter((len(ids) for ids in columns["input_ids"]), dtype=np.int64, count=len(texts))
        return columns, lengths

    def _feed(self, columns: dict[str, list[list[int]]], lengths: np.ndarray, rows: np.ndarray) -> dict:
        """Padded int64 inputs for ``rows`` (as the tokenizer would pad them, to the longest row)."""
        width = int(lengths[rows].max())
        pad = {
            "input_ids": self.tokenizer.pad_token_id or 0,
            "token_type_ids": self.tokenizer.pad_token_type_id,
        }
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        feed = {n: np.full((len(rows), width), pad.get(n, 0), dtype=np.int64) for n in columns}
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for j, i in enumerate(rows):
            span = slice(width - lengths[i], width) if left else slice(0, lengths[i])
            mask[j, span] = 1
            for n, values in columns.items():
                feed[n][j, span] = values[i]
        feed["attention_mask"] = mask
        return {n: feed[n] if n in feed else np.zeros_like(mask) for n in self.input_names}

    def _pooled(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        hidden = self._run(feed)
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        batch_size = batch_size or self.batch_size
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not len(texts):
            return out
        if self.precision == "int8":
            batch_size = 1  # per-text activation scales (see the class docstring)
        columns, lengths = self._tokenize(texts)
        order = np.argsort(-lengths, kind="stable")  # similar lengths share a batch: little padding
        batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]

        def run(rows: np.ndarray) -> None:
            out[rows] = self._pooled(self._feed(columns, lengths, rows))

        if self.workers > 1 and len(batches) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="onnx-encoder")
            list(self._pool.map(run, batches))
        else:
            for rows in batches:
                run(rows)
        return out

    def description(self) -> dict[str, Any]:
        described = super().description()
        if self.precision == "int8":
            described["activation_scales"] = "per text"  # vectors of batched int8 runs are not reused
        return described

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec}, dim={self.dimension}, file={self.onnx_path.name})"
