"""How the BM25 index is built and searched: ``indexes.bm25`` of params.yaml as typed settings."""

from __future__ import annotations

from dataclasses import dataclass

from assets import params

__all__ = ["Bm25Settings"]


@dataclass(frozen=True, slots=True)
class Bm25Settings:
    """``indexes.bm25`` (:class:`assets.params.Bm25Params` holds the defaults)."""

    threads: int
    """Anserini's indexing threads, and the Java threads of a batch search."""
    heap: str
    """The JVM heap (``-Xmx``), in-process and in Anserini's subprocess."""
    language: str | None
    """The analyzer's language; None: the dump's."""
    k1: float
    """BM25's term-frequency saturation (Anserini's and pyserini's name)."""
    b: float
    """BM25's length normalisation."""

    @classmethod
    def from_params(cls, section: params.Bm25Params | None = None) -> Bm25Settings:
        """The settings of ``section`` (default: the model's defaults)."""
        return cls(**(section or params.Bm25Params()).model_dump())
