"""The one result type every index returns: a ranked passage with its page id (and text when known)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def wikipedia_id_of(passage_id: str) -> str:
    """The page id of a passage id ``<wikipedia_id>-<n>`` (the part before the last ``-``)."""
    return passage_id.rpartition("-")[0] or passage_id


PASSAGE_KINDS = {"t": "table", "i": "infobox", "k": "kb", "q": "qa"}
"""The first letter of a structured passage id's last part (``<page>-t<i>.<n>``, ``<page>-i<i>.<n>``), or
of a KB passage's (``<page>-k<n>``; ``<QID>-k<n>`` for an entity without a page), of a stored question of
the QA-pair KB (``qa-q<n>``), and its kind; a text passage's last part is a number (``<page>-<n>``)."""


def passage_kind(passage_id: str) -> str:
    """``text``, ``table`` or ``infobox``: what a passage id names, read from the id alone."""
    return PASSAGE_KINDS.get(passage_id.rpartition("-")[2][:1], "text")


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved passage; ``title``/``text`` are None when the index does not store them."""

    passage_id: str
    wikipedia_id: str
    score: float
    title: str | None = None
    text: str | None = None

    @classmethod
    def from_contents(cls, passage_id: str, score: float, contents: str | None) -> Hit:
        """A hit from a JsonCollection ``contents`` field (``title\\ntext``)."""
        title = text = None
        if contents is not None:
            title, _, text = contents.partition("\n")
        return cls(passage_id, wikipedia_id_of(passage_id), float(score), title, text)

    @property
    def kind(self) -> str:
        """``text``, ``table`` or ``infobox`` (:func:`passage_kind`)."""
        return passage_kind(self.passage_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passage_id": self.passage_id,
            "wikipedia_id": self.wikipedia_id,
            "kind": self.kind,
            "title": self.title,
            "score": self.score,
            "text": self.text,
        }
