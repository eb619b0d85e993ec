"""The interface every dense encoder offers (:class:`Encoder`) and what works with any encoder.

:func:`passage_text` is what a single-tower model is fed for a passage; :func:`encoder_description`,
:func:`encode_passage_batch` and :func:`encode_query_batch` also accept an encoder written by a user that
only has ``encode``. :class:`SingleTowerEncoder` gives the sentence-transformers and ONNX encoders their
query and passage sides (the model's prompts). Loading encoders: :mod:`assets.indexes.dense.encoders.loading`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from assets.indexes.dense.encoders.options import EncoderOptions

PASSAGE_SEPARATOR = " "  # between title and text of a passage
JOINED_PASSAGE_INPUT = 'title + " " + text'
PAIR_PASSAGE_INPUT = "[CLS] title [SEP] text [SEP] (two segments, as DPR)"


def passage_text(title: str | None, text: str | None) -> str:
    """What is encoded for a passage: ``title + " " + text`` (just the text when the title is empty)."""
    title = (title or "").strip()
    text = text or ""
    return f"{title}{PASSAGE_SEPARATOR}{text}" if title else text


class Encoder(Protocol):
    name: str
    backend: str
    dimension: int
    batch_size: int

    @property
    def spec(self) -> str: ...

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray: ...

    def encode_queries(self, queries: Sequence[str], batch_size: int | None = None) -> np.ndarray: ...

    def encode_passages(
        self, titles: Sequence[str | None], texts: Sequence[str | None], batch_size: int | None = None
    ) -> np.ndarray: ...

    def description(self) -> dict[str, Any]: ...


def encoder_description(encoder: Any) -> dict[str, Any]:
    """What manifests record of an encoder; an encoder without ``description()`` (one written by a
    user, given only ``encode``) is a single-tower model fed ``title + " " + text``, L2-normalised."""
    if hasattr(encoder, "description"):
        return dict(encoder.description())
    described = SingleTowerEncoder()  # its defaults: no prompts, title + " " + text, normalised, fp32
    described.name, described.family = encoder.name, "custom"
    return described.description()


def encode_passage_batch(
    encoder: Any, titles: Sequence[str | None], texts: Sequence[str | None], batch_size: int | None = None
) -> np.ndarray:
    """Passages through ``encoder.encode_passages`` (prompt or tower), else ``encode`` of ``title text``."""
    if hasattr(encoder, "encode_passages"):
        return encoder.encode_passages(titles, texts, batch_size=batch_size)
    return encoder.encode(
        [passage_text(t, x) for t, x in zip(titles, texts, strict=True)], batch_size=batch_size
    )


def encode_query_batch(encoder: Any, queries: Sequence[str], batch_size: int | None = None) -> np.ndarray:
    """Queries through ``encoder.encode_queries`` (its prompt or question tower), or plain ``encode``."""
    if hasattr(encoder, "encode_queries"):
        return encoder.encode_queries(queries, batch_size=batch_size)
    return encoder.encode(list(queries), batch_size=batch_size)


class SingleTowerEncoder:
    """Queries and passages through one ``encode`` with the side's prompt (sentence-transformers and ONNX)."""

    name: str
    backend: str
    dimension: int
    family = "sentence-transformers"
    query_model: str | None = None
    passage_input = JOINED_PASSAGE_INPUT
    query_prompt = ""
    passage_prompt = ""
    pooling: str | None = None
    normalize = True
    max_length: int | None = None
    precision = "fp32"

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        raise NotImplementedError

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.backend}"

    def encode_queries(self, queries: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.encode([self.query_prompt + q for q in queries], batch_size=batch_size)

    def encode_passages(
        self, titles: Sequence[str | None], texts: Sequence[str | None], batch_size: int | None = None
    ) -> np.ndarray:
        joined = [self.passage_prompt + passage_text(t, x) for t, x in zip(titles, texts, strict=True)]
        return self.encode(joined, batch_size=batch_size)

    def set_prompts(self, model_prompts: tuple[str, str], options: EncoderOptions) -> None:
        """The model's prompts, or the options' where they are set ("" for none)."""
        query, passage = model_prompts
        self.query_prompt = query if options.query_prompt is None else options.query_prompt
        self.passage_prompt = passage if options.passage_prompt is None else options.passage_prompt

    def description(self) -> dict[str, Any]:
        """What the embeddings and index manifests record of this encoder."""
        return {
            "family": self.family,
            "model": self.name,
            "query_model": self.query_model,
            "query_prompt": self.query_prompt,
            "passage_prompt": self.passage_prompt,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "passage_input": self.passage_input,
            "precision": self.precision,
        }


def dimension_of(model: Any) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())
