"""The one result type every index returns: a ranked passage with its page id (and text when known)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def wikipedia_id_of(passage_id: str) -> str:
    """The page id of a passage id ``<wikipedia_id>-<n>`` (the part before the last ``-``)."""
    return passage_id.rpartition("-")[0] or passage_id


_KINDS: dict[str, str] = {}
"""A passage's kind by the first letter of its id's last part, as each collection registers its own
(:func:`register_passage_kinds`: ``<page>-t<i>.<n>`` a table, ``<page>-k<n>`` a kb passage, ``qa-q<n>`` a
stored question...); a last part that starts with a digit (``<page>-<n>``) is a text passage."""
TEXT = "text"


def register_passage_kinds(kinds: Mapping[str, str]) -> None:
    """Add the id letters of a collection's passages and the kind each names (a letter is one kind's)."""
    for letter, kind in kinds.items():
        if len(letter) != 1 or letter.isdigit() or _KINDS.get(letter, kind) != kind:
            raise ValueError(f"passage id letter {letter!r} is not a new letter (kinds: {_KINDS})")
    _KINDS.update(kinds)


def passage_kind(passage_id: str) -> str:
    """``text``, or the kind a registered collection gave the first letter of the id's last part."""
    return _KINDS.get(passage_id.rpartition("-")[2][:1], TEXT)


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
