"""The one registry of index types, and the protocol every index type's searcher follows.

The :class:`~assets.indexes.retriever.Retriever`, the CLI's ``--index`` choices, the
``retrieval_evaluation`` asset and ``kiltpipe eval`` all go through :func:`searcher_types`. Each index
type is a package that defines its searcher and a :class:`SearcherType`; :mod:`assets.indexes` registers
the built-in ones (bm25, dense, hybrid, rerank), and adding one is its module, its Dagster asset and one
:func:`register_searcher` call. ``hybrid`` and ``rerank`` search others: they ask the retriever for
``bm25`` and ``dense`` and fuse their ranks, or score their union with a cross-encoder.

Nothing heavy is imported here (the JVM, FAISS and torch load when a searcher opens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assets.indexes.hits import Hit
from assets.limits import SearchLimits
from assets.storage import SnapshotPaths

__all__ = [
    "BuiltIndex",
    "SearchContext",
    "Searcher",
    "SearcherType",
    "get_searcher_type",
    "index_build_problems",
    "index_names",
    "register_searcher",
    "searcher_types",
    "servable_types",
    "unregister_searcher",
]


class Searcher(Protocol):
    """Ranks a snapshot's passages for queries."""

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in query order; a blank query has none. ``with_text``: fill
        title and text when the index stores them (the retriever fills the rest)."""
        ...

    def close(self) -> None: ...


class SearchContext(Protocol):
    """What a searcher opens over (:class:`assets.indexes.retriever.Retriever`): a snapshot, the index
    settings, and the other searchers it holds."""

    paths: SnapshotPaths
    settings: Any  # assets.indexes.settings.IndexSettings
    limits: SearchLimits

    def searcher(self, index: str) -> Searcher: ...

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]: ...


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    """What building one index over a collection's passages made (:attr:`SearcherType.build`)."""

    documents: int
    """Documents (BM25) or vectors (dense) the index holds."""
    encoded_passages: int = 0
    reused_passages: int = 0


@dataclass(frozen=True)
class SearcherType:
    """An index type: its name (``--index``), what it is, and how to open its searcher over a retriever's
    snapshot (``open(retriever)``: the retriever gives the paths, the settings and other searchers)."""

    name: str
    description: str
    open: Callable[[SearchContext], Searcher]
    asset: str | None = None
    """The Dagster asset that builds the index (the evaluation depends on it); None: searches others'."""
    index_dir: Callable[[SnapshotPaths], Path] | None = None
    """Where a snapshot's index of this type lives (``kiltpipe snapshots`` says whether it is built)."""
    searches: tuple[str, ...] = ()
    """The index types whose built indices it opens (empty: its own)."""
    served_by_default: bool = True
    """Whether ``kiltpipe serve`` without ``--index`` serves it when its indices are built (rerank: no, it
    loads a cross-encoder of its own)."""
    build: Callable[..., BuiltIndex] | None = None
    """How an index of this type is built in one call over the passages of ``paths`` (a collection's
    view, :func:`assets.indexes.collections.collection_view`): ``build(paths, settings, *, progress,
    reuse_from)`` with the :class:`~assets.indexes.settings.IndexSettings`; None: the type builds no index of
    its own, or only through its asset. The collections other than the text passages are built so."""
    reusable: Callable[[SnapshotPaths], bool] | None = None
    """Whether an earlier snapshot's index of this type has work a build can reuse (dense: its vectors);
    None: a build reuses nothing."""
    documents: Callable[[Path], int] | None = None
    """The documents (vectors) an index of this type in a folder holds, read from the index itself (the
    checks compare it with the passages)."""
    sources: tuple[str, ...] = ()
    """The code an index (or a search) of this type depends on, as paths from the repository's root: the
    DVC stages that build or search with it list them as dependencies."""
    dvc_outs: tuple[str, ...] = ()
    """The index's outputs under the collection's ``indexes/`` folder as DVC stages list them (a name
    ending in ``/`` persists: a resumed build keeps it); the stages are checked against these."""
    settings: Any = None
    """A type beyond the built-in ones: its settings class, whose ``from_params(mapping | None)`` builds
    them from the section ``indexes.<name>`` of params.yaml (absent: None); searchers and assets read them
    with ``IndexSettings.of(name)``. None: it has no settings."""

    @property
    def needs(self) -> tuple[str, ...]:
        """The built index types this type cannot search without."""
        return self.searches or (self.name,)


_TYPES: dict[str, SearcherType] = {}


def register_searcher(searcher_type: SearcherType) -> SearcherType:
    """Add an index type (its name must be new); returns it."""
    if searcher_type.name in _TYPES:
        raise ValueError(f"index type {searcher_type.name!r} is already registered")
    _TYPES[searcher_type.name] = searcher_type
    return searcher_type


def unregister_searcher(name: str) -> None:
    """Remove an index type (a test's, or a plugin's); nothing when it is not registered."""
    _TYPES.pop(name, None)


def searcher_types() -> list[SearcherType]:
    """Every registered index type, in registration order (the built-ins first)."""
    return list(_TYPES.values())


def index_names() -> tuple[str, ...]:
    return tuple(_TYPES)


def servable_types(paths: SnapshotPaths, build: Sequence[str]) -> list[str]:
    """The index types a snapshot can be searched with as built: every type served by default whose
    indices ``build`` (``indexes.build``) makes and whose folders exist in ``paths``."""
    built = {
        kind.name
        for kind in _TYPES.values()
        if kind.name in build and kind.index_dir and kind.index_dir(paths).is_dir()
    }
    return [kind.name for kind in _TYPES.values() if kind.served_by_default and set(kind.needs) <= built]


def index_build_problems(build: Sequence[str], searched: Sequence[str]) -> list[str]:
    """Why a build that makes the indices of ``build`` (``indexes.build``) cannot serve the index types
    ``searched`` (e.g. ``indexes.evaluation.indexes``); empty when it can."""
    buildable = [kind.name for kind in _TYPES.values() if kind.asset]
    problems = [
        f"{name!r} is not an index a build makes (choose from {', '.join(buildable)})"
        for name in build
        if name not in buildable
    ]
    for name in searched:
        missing = [needed for needed in get_searcher_type(name).needs if needed not in build]
        if missing:
            what = f"{' and '.join(missing)} {'indices' if len(missing) > 1 else 'index'}"
            problems.append(f"{name!r} searches the {what}, which the build leaves out")
    return problems


def get_searcher_type(name: str) -> SearcherType:
    try:
        return _TYPES[name]
    except KeyError:
        raise ValueError(f"unknown index {name!r}; choose one of {', '.join(_TYPES)}") from None
