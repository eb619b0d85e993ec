"""How the rerank index scores its candidates: ``indexes.rerank`` of params.yaml as typed settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assets import params

__all__ = ["RerankSettings"]


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """``indexes.rerank`` (:class:`assets.params.RerankParams` holds the defaults)."""

    model: str
    """Any sentence-transformers ``CrossEncoder`` checkpoint (a hub name or a local folder)."""
    depth: int
    """Candidates taken from each of bm25 and dense (their union is scored)."""
    batch_size: int
    """(query, passage) pairs per forward pass."""
    max_length: int | None
    """Tokens per pair; None: the model's."""
    device: str | None
    """None: the dense encoder's device (``indexes.dense.device``)."""
    precision: Literal["auto", "fp32", "fp16", "bf16"]
    """auto: fp16 on a GPU, fp32 on the CPU."""

    @classmethod
    def from_params(cls, section: params.RerankParams | None = None) -> RerankSettings:
        """The settings of ``section`` (default: the model's defaults)."""
        return cls(**(section or params.RerankParams()).model_dump())
