"""How the dense index is encoded, built and searched: ``indexes.dense`` of params.yaml as typed settings."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from assets import params
from assets.indexes.dense.encoders import EncoderOptions
from assets.languages import wiki_language
from assets.storage import SnapshotPaths

__all__ = ["DenseSettings"]


@dataclass(frozen=True, slots=True)
class DenseSettings:
    """``indexes.dense`` (:class:`assets.params.DenseParams` holds the defaults and says more of each)."""

    model: str
    """The passage encoder: a hub name, a local folder, or ``default`` (all-MiniLM-L6-v2)."""
    language_models: tuple[tuple[str, str], ...]
    """``(language, model)`` pairs: a snapshot of that Wikipedia language uses that model (``*``: any)."""
    backend: str
    """torch | onnx (int8) | onnx-fp32 | openvino | torch-int8: how the encoder runs."""
    family: Literal["sentence-transformers", "dpr"]
    """sentence-transformers (one tower) or dpr (a question and a context encoder)."""
    query_model: str | None
    """dpr: the question encoder (``model`` is the context encoder)."""
    query_prompt: str | None
    """Text put before each query; None: the model's own."""
    passage_prompt: str | None
    """Text put before each passage; None: the model's own."""
    pooling: Literal["mean", "cls"] | None
    """None: the model's."""
    normalize: bool | None
    """L2-normalise the vectors; None: the model's (dpr: no)."""
    max_length: int | None
    """Tokens per input; None: the model's."""
    device: str
    """auto | cpu | cuda | cuda:N | cuda:0,cuda:1 | mps."""
    precision: Literal["auto", "fp32", "fp16", "bf16"]
    """auto: fp16 on a GPU, fp32 on the CPU."""
    batch_size: int | None
    """Passages per forward pass; None: the backend's."""
    shard_size: int
    """Passages per embeddings shard (the unit of a resumable encode step)."""
    factory: str
    """The FAISS index factory string (``Flat``, ``IVF4096,PQ64``, ``HNSW32``...)."""
    metric: Literal["ip", "l2"]
    """Inner product or L2 distance."""
    train_sample: int | None
    """Vectors a trained index is trained on; None: FAISS's advice for the factory."""
    search_params: str
    """FAISS ``ParameterSpace`` settings stored with the index (``nprobe=32``)."""
    faiss_gpu: Literal["auto", "on", "off"]
    """auto: build on every GPU a GPU build of FAISS sees."""

    @classmethod
    def from_params(cls, section: params.DenseParams | None = None) -> DenseSettings:
        """The settings of ``section`` (default: the model's defaults)."""
        values = (section or params.DenseParams()).model_dump()
        values["language_models"] = tuple(sorted(values["language_models"].items()))
        return cls(**values)

    def replace(self, **changes: Any) -> DenseSettings:
        """These settings with ``changes`` (those that are not None) in place."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def for_language(self, language: str | None) -> DenseSettings:
        """These settings for a snapshot of ``language``: its model of ``language_models`` (``*`` for any
        language not named) in place of ``model``; unchanged when none applies."""
        if not self.language_models or not language:
            return self
        models = dict(self.language_models)
        code = wiki_language(language)
        chosen = models.get(code) or models.get(language) or models.get("*")
        return self if chosen is None or chosen == self.model else dataclasses.replace(self, model=chosen)

    def for_snapshot(self, paths: SnapshotPaths) -> DenseSettings:
        """:meth:`for_language` with the language of the snapshot's knowledge source."""
        if not self.language_models or not paths.manifest_file.is_file():
            return self
        return self.for_language(json.loads(paths.manifest_file.read_text()).get("language"))

    def encoder_options(self, device: str | None = None) -> EncoderOptions:
        """The encoder's :class:`EncoderOptions` (on ``device``, default the setting's)."""
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
        """The encoder these settings describe (model, backend, batch size, options)."""
        from assets.indexes.dense.encoders import load_encoder

        return load_encoder(self.model, self.backend, self.batch_size, options=self.encoder_options(device))
