"""Dense encoders: every family and backend behind one interface.

:class:`Encoder` is the interface, :func:`load_encoder` picks the backend.

* :mod:`~assets.indexes.dense.encoders.base`: the interface, and what works with any encoder;
* :mod:`~assets.indexes.dense.encoders.options`: family, prompts, pooling, device and precision;
* :mod:`~assets.indexes.dense.encoders.loading`: model location, the sentence-transformers backend and
  :func:`load_encoder`;
* :mod:`~assets.indexes.dense.encoders.torch_backend`: the torch encoder of every family (DPR included);
* :mod:`~assets.indexes.dense.encoders.onnx_backend`: the ONNX export (fused, optionally int8).
"""

from __future__ import annotations

from assets.indexes.dense.encoders.base import (
    Encoder,
    encode_passage_batch,
    encode_query_batch,
    encoder_description,
    passage_text,
)
from assets.indexes.dense.encoders.loading import (
    BACKENDS,
    DEFAULT_MODEL_NAME,
    SentenceTransformerEncoder,
    default_model_dir,
    hub_offline,
    load_encoder,
    load_sentence_transformer,
    resolve_model,
)
from assets.indexes.dense.encoders.options import (
    DeviceUnavailable,
    EncoderOptions,
    device_for_shard,
    encode_devices,
    query_side_mismatch,
    resolve_device,
    resolve_precision,
    torch_dtype,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL_NAME",
    "DeviceUnavailable",
    "Encoder",
    "EncoderOptions",
    "SentenceTransformerEncoder",
    "default_model_dir",
    "device_for_shard",
    "encode_devices",
    "encode_passage_batch",
    "encode_query_batch",
    "encoder_description",
    "hub_offline",
    "load_encoder",
    "load_sentence_transformer",
    "passage_text",
    "query_side_mismatch",
    "resolve_device",
    "resolve_model",
    "resolve_precision",
    "torch_dtype",
]
