"""How a dense encoder is set up: its family, prompts, pooling, device and precision (``indexes.dense``).

Pure settings and device logic: torch is imported only to look at the devices that are there.

Families:

- ``sentence-transformers``: one model for queries and passages, with the query and passage prompts of
  the model's own sentence-transformers config (E5's ``query: ``/``passage: ``, BGE's query instruction),
  its pooling, normalisation and maximum sequence length; each overridable.
- ``dpr``: two towers, a question encoder (``query_model``) and a context encoder (``model``): Hugging Face
  ``DPRQuestionEncoder``/``DPRContextEncoder`` checkpoints or any two transformer checkpoints; CLS pooling
  (DPR's ``pooler_output``: CLS, projected when the checkpoint has a projection), no normalisation, inner
  product; a passage is fed as DPR feeds it, title and text as two segments (``[CLS] title [SEP] text``).

Devices: ``auto`` (a CUDA GPU when torch sees one, else Apple's MPS, else the CPU), ``cpu``, ``cuda`` (every
visible GPU: shard steps are spread over them), ``cuda:N`` or a comma list (``cuda:0,cuda:2``), ``mps``.
Precision: ``auto`` is fp16 on a GPU and fp32 (the reference) on the CPU; ``fp32``, ``fp16`` or ``bf16``.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from assets.params import DENSE_FAMILY, DEVICE, EncoderParams

FAMILY_ALIASES = {"st": "sentence-transformers", "sentence_transformers": "sentence-transformers"}
PRECISIONS = ("auto", "fp32", "fp16", "bf16")
QUERY_SIDE_KEYS = ("family", "model", "query_model", "query_prompt", "pooling", "normalize", "max_length")
"""What a query encoder must share with the index's passage encoder (precision and device may differ)."""


class DeviceUnavailable(RuntimeError):
    """A device was asked for that this machine (or this torch build) does not have."""


class EncoderOptions(EncoderParams):
    """The encoder settings beyond model and backend: :class:`~assets.params.EncoderParams` of
    ``indexes.dense`` as they are; ``None`` means "the model's own". A family may be given by an alias
    (``st``)."""

    @field_validator("family", mode="before")
    @classmethod
    def _alias(cls, family: Any) -> Any:
        return FAMILY_ALIASES.get(family, family) if isinstance(family, str) else family

    def on(self, device: str) -> EncoderOptions:
        """The same options on another device (one shard step's GPU)."""
        return self.model_copy(update={"device": device})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_description(cls, description: dict[str, Any], device: str = DEVICE) -> EncoderOptions:
        """The options that encode queries as an index's manifest ``encoder`` describes (its family,
        prompts, pooling, normalisation and length: never the model's defaults of today)."""
        return cls(
            family=description.get("family", DENSE_FAMILY),
            query_model=description.get("query_model") if description.get("family") == "dpr" else None,
            query_prompt=description.get("query_prompt", ""),
            passage_prompt=description.get("passage_prompt", ""),
            pooling=description.get("pooling"),
            normalize=description.get("normalize"),
            max_length=description.get("max_length"),
            device=device,
        )


def query_side_mismatch(index: dict[str, Any], encoder: dict[str, Any]) -> list[str]:
    """The :data:`QUERY_SIDE_KEYS` where a query encoder's description differs from the index's, as
    ``key: index value != encoder value`` (empty: queries are encoded the index's way)."""
    return [
        f"{key}: {index.get(key)!r} != {encoder.get(key)!r}"
        for key in QUERY_SIDE_KEYS
        if key in index and index.get(key) != encoder.get(key)
    ]


# ------------------------------------------------------------------------------------------- devices
def _torch() -> Any:
    import torch

    return torch


def cuda_count() -> int:
    """CUDA devices torch can use (0 on a CPU build of torch)."""
    torch = _torch()
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    backend = getattr(_torch().backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def encode_devices(setting: str = "auto") -> list[str]:
    """The devices a setting spreads encoding over: every visible GPU for ``auto``/``cuda``, else one.

    Raises :class:`DeviceUnavailable` naming what is missing (a CUDA device on a CPU build of torch, a
    GPU index past the count)."""
    text = (setting or "auto").strip().lower()
    if text == "auto":
        count = cuda_count()
        if count:
            return [f"cuda:{i}" for i in range(count)]
        return ["mps"] if _mps_available() else ["cpu"]
    if text == "cpu":
        return ["cpu"]
    if text == "mps":
        if not _mps_available():
            raise DeviceUnavailable("device mps asked for, but torch sees no Apple MPS device")
        return ["mps"]
    if text == "cuda":
        count = cuda_count()
        if not count:
            raise DeviceUnavailable(_no_cuda_message(text))
        return [f"cuda:{i}" for i in range(count)]
    devices = [part.strip() for part in text.split(",") if part.strip()]
    count = cuda_count()
    for device in devices:
        prefix, _, number = device.partition(":")
        if prefix != "cuda" or not number.isdigit():
            raise ValueError(f"unknown device {device!r}: auto, cpu, cuda, cuda:N (or a comma list), mps")
        if not count:
            raise DeviceUnavailable(_no_cuda_message(device))
        if int(number) >= count:
            raise DeviceUnavailable(f"device {device} asked for, but torch sees {count} CUDA device(s)")
    return devices


def _no_cuda_message(device: str) -> str:
    version = _torch().__version__
    return f"device {device} asked for, but torch {version} sees no CUDA device" + (
        " (a CPU build of torch: install the CUDA wheel, see the README's GPU section)"
        if "+cpu" in version
        else ""
    )


def resolve_device(setting: str = "auto") -> str:
    """The one device an encoder of this setting runs on (the first of :func:`encode_devices`)."""
    return encode_devices(setting)[0]


def device_for_shard(devices: list[str], shard: int) -> str:
    """Round robin: shard ``i`` of the embeddings runs on ``devices[i % len(devices)]``."""
    return devices[shard % len(devices)]


def resolve_precision(precision: str, device: str) -> str:
    """``auto``: fp16 on a GPU (CUDA or MPS), fp32 on the CPU; otherwise as asked."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision
    return "fp16" if device.startswith(("cuda", "mps")) else "fp32"


def torch_dtype(precision: str) -> Any:
    torch = _torch()
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
