"""How the hybrid index fuses BM25 and dense: ``indexes.hybrid`` of params.yaml as typed settings."""

from __future__ import annotations

from dataclasses import dataclass

from assets import params

__all__ = ["HybridSettings"]


@dataclass(frozen=True, slots=True)
class HybridSettings:
    """``indexes.hybrid`` (:class:`assets.params.HybridParams` holds the defaults)."""

    depth: int
    """Hits of each part that take part in the fusion."""
    constant: float
    """Reciprocal-rank fusion's constant (0: Re2G's plain sum of inverse ranks)."""

    @classmethod
    def from_params(cls, section: params.HybridParams | None = None) -> HybridSettings:
        """The settings of ``section`` (default: the model's defaults)."""
        return cls(**(section or params.HybridParams()).model_dump())
