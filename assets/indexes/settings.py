"""A snapshot's index settings: ``indexes`` of params.yaml, one typed settings object per index type.

Each index type keeps its settings in its own package (:class:`~assets.indexes.bm25.Bm25Settings`,
:class:`~assets.indexes.dense.DenseSettings`, :class:`~assets.indexes.hybrid.HybridSettings`,
:class:`~assets.indexes.rerank.RerankSettings`), built from its params section; the defaults are the params
model's (:mod:`assets.params`), written nowhere else.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from assets import params
from assets.indexes.bm25 import Bm25Settings
from assets.indexes.dense import DenseSettings
from assets.indexes.hybrid import HybridSettings
from assets.indexes.registry import index_names, searcher_types
from assets.indexes.rerank import RerankSettings
from assets.params import ParamsError, params_path
from assets.storage import SnapshotPaths

__all__ = ["IndexSettings"]


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """How a snapshot's indices are built and searched (``indexes`` of params.yaml)."""

    bm25: Bm25Settings
    dense: DenseSettings
    hybrid: HybridSettings
    rerank: RerankSettings
    others: tuple[tuple[str, Any], ...] = field(default=())
    """``(name, settings)`` of each registered index type beyond these four that has settings."""

    @classmethod
    def from_params(cls, section: params.IndexesParams | None = None) -> IndexSettings:
        """The settings of ``section`` (default: the built-in defaults; a door passes its params' section);
        a registered type's own settings from ``indexes.<name>``. A section of ``indexes`` that no
        registered type claims is a :class:`~assets.params.ParamsError` naming it."""
        section = section or params.IndexesParams()
        written = dict(section.model_extra or {})
        others = [
            (kind.name, kind.settings.from_params(written.pop(kind.name, None)))
            for kind in searcher_types()
            if kind.settings is not None
        ]
        if written:
            raise ParamsError(
                f"{params_path()}: unknown key 'indexes.{sorted(written)[0]}': no index type of that name "
                f"with settings is registered (registered: {', '.join(index_names())})"
            )
        return cls(
            bm25=Bm25Settings.from_params(section.bm25),
            dense=DenseSettings.from_params(section.dense),
            hybrid=HybridSettings.from_params(section.hybrid),
            rerank=RerankSettings.from_params(section.rerank),
            others=tuple(others),
        )

    def of(self, name: str) -> Any:
        """The settings of the index type ``name`` (a built-in one's section, or a registered type's own)."""
        if name in BUILT_IN:
            return getattr(self, name)
        found = dict(self.others)
        if name not in found:
            raise ValueError(f"index type {name!r} has no settings (registered: {', '.join(index_names())})")
        return found[name]

    def replace(self, **sections: Any) -> IndexSettings:
        """These settings with whole sections replaced (``settings.replace(dense=...)``)."""
        return dataclasses.replace(self, **sections)

    def for_snapshot(self, paths: SnapshotPaths) -> IndexSettings:
        """These settings with the dense model of the snapshot's language
        (``indexes.dense.language_models``)."""
        dense = self.dense.for_snapshot(paths)
        return self if dense is self.dense else dataclasses.replace(self, dense=dense)


BUILT_IN = tuple(f.name for f in dataclasses.fields(IndexSettings) if f.name != "others")
"""The index types whose settings are a section of ``indexes`` in the params model (bm25, dense, ...)."""
