"""Searchers: the protocol every index type's searcher follows, and the one registry of index types.

The :class:`~assets.indexes.retrieval.Retriever`, the CLI's ``--index`` choices, the ``retrieval_evaluation``
asset and ``kiltpipe eval`` all go through :func:`searcher_types`, so adding an index type is one module
that builds its index (and its Dagster asset) and registers a :class:`SearcherType` here. ``hybrid`` and
``rerank`` are searchers built from two others: they ask the retriever for ``bm25`` and ``dense`` and fuse
their ranks, or score their union with a cross-encoder (:mod:`assets.indexes.rerank`).

Nothing heavy is imported here (the JVM, FAISS and torch load when a searcher opens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Protocol

from assets.indexes.hits import Hit
from assets.indexes.hybrid import reciprocal_rank_fusion
from assets.storage import SnapshotPaths


class Searcher(Protocol):
    """Ranks a snapshot's passages for queries."""

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in query order; a blank query has none. ``with_text``: fill
        title and text when the index stores them (the retriever fills the rest)."""
        ...

    def close(self) -> None: ...


class Retriever(Protocol):
    """What a searcher opens over (:class:`assets.indexes.retrieval.Retriever`): a snapshot, the index
    settings, and the other searchers it holds."""

    paths: SnapshotPaths
    settings: Any  # assets.indexes.retrieval.IndexSettings

    def searcher(self, index: str) -> Searcher: ...

    def with_text(self, results: list[list[Hit]]) -> list[list[Hit]]: ...


@dataclass(frozen=True)
class SearcherType:
    """An index type: its name (``--index``), what it is, and how to open its searcher over a retriever's
    snapshot (``open(retriever)``: the retriever gives the paths, the settings and other searchers)."""

    name: str
    description: str
    open: Callable[[Retriever], Searcher]
    asset: str | None = None
    """The Dagster asset that builds the index (the evaluation depends on it); None: searches others'."""
    index_dir: Callable[[SnapshotPaths], Path] | None = None
    """Where a snapshot's index of this type lives (``kiltpipe snapshots`` says whether it is built)."""
    searches: tuple[str, ...] = ()
    """The index types whose built indices it opens (empty: its own)."""
    served_by_default: bool = True
    """Whether ``kiltpipe serve`` without ``--index`` serves it when its indices are built (rerank: no, it
    loads a cross-encoder of its own)."""

    @property
    def needs(self) -> tuple[str, ...]:
        """The built index types this type cannot search without."""
        return self.searches or (self.name,)


_TYPES: dict[str, SearcherType] = {}


def register_searcher(searcher_type: SearcherType) -> SearcherType:
    if searcher_type.name in _TYPES:
        raise ValueError(f"index type {searcher_type.name!r} is already registered")
    _TYPES[searcher_type.name] = searcher_type
    return searcher_type


def unregister_searcher(name: str) -> None:
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


# ------------------------------------------------------------------------------------------- built in
class Bm25Search:
    """BM25 over the snapshot's Lucene index (``inner``: the :class:`~assets.indexes.bm25.Bm25Searcher`)."""

    def __init__(self, retriever: Retriever) -> None:
        from assets.indexes.bm25 import Bm25Searcher

        paths, settings = retriever.paths, retriever.settings
        if not paths.bm25_index.is_dir():
            raise FileNotFoundError(
                f"no BM25 index for snapshot {paths.snapshot_id}: build it with "
                "`kiltpipe build --select key:bm25_index`"
            )
        self.threads = settings.bm25_threads
        self.inner = Bm25Searcher(paths.bm25_index, settings.k1, settings.b, heap=settings.bm25_heap)

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        qids = [str(i) for i in range(len(queries))]
        found = self.inner.batch_search(list(queries), qids, k, threads or self.threads, with_text=with_text)
        return [found[q] for q in qids]

    def close(self) -> None:
        self.inner.close()


class DenseSearch:
    """FAISS over the snapshot's embeddings, queries encoded as the index's passages were (``inner``: the
    :class:`~assets.indexes.dense.DenseSearcher`)."""

    def __init__(self, retriever: Retriever) -> None:

        import dataclasses

        from assets.indexes.dense import INDEX_META, DenseSearcher
        from assets.indexes.encoder_options import EncoderOptions
        from assets.indexes.encoders import load_encoder
        from assets.storage import read_report_json

        paths, settings = retriever.paths, retriever.settings
        meta_path = paths.dense_index / INDEX_META
        if not meta_path.is_file():
            raise FileNotFoundError(
                f"no dense index for snapshot {paths.snapshot_id}: build it with "
                "`kiltpipe build --select key:dense_index`"
            )
        meta = read_report_json(meta_path)  # with its run facts: a local model's absolute path
        # queries are encoded the index's way: its model, backend, family, prompts, pooling and length
        description = meta.get("encoder")
        if description:
            conflicts = settings_conflicts(settings, description)
            if conflicts:
                raise ValueError(
                    f"the dense index of snapshot {paths.snapshot_id} was built with another encoder "
                    f"than the settings name ({'; '.join(conflicts)}): rebuild it (`kiltpipe build --select "
                    "key:dense_index`) or set indexes.dense back"
                )
            options = EncoderOptions.from_description(description, device=settings.device)
            if options.family == "dpr" and not options.query_model:  # its local path is a run fact too
                options = dataclasses.replace(options, query_model=settings.query_model)
            model = description.get("model") or settings.model  # a local path is a run fact (index.run.json)
            encoder = load_encoder(model, meta["backend"], settings.batch_size, options=options)
        else:  # an index from before manifests recorded the encoder: the settings' options
            encoder = load_encoder(
                settings.model, meta.get("backend") or settings.backend, options=settings.encoder_options()
            )
        # search parameters: the settings', else those the index was built with
        search_params = settings.search_params or meta.get("search_params") or ""
        self.inner = DenseSearcher(paths.dense_index, encoder, params=search_params)

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        keep = [i for i, q in enumerate(queries) if q and q.strip()]
        results: list[list[Hit]] = [[] for _ in queries]
        if keep:
            for i, hits in zip(keep, self.inner.batch_search([queries[i] for i in keep], k), strict=True):
                results[i] = hits
        return results

    def close(self) -> None:
        self.inner = None


def settings_conflicts(settings: Any, description: dict[str, Any]) -> list[str]:
    """Where the dense settings (model, family, question encoder, and each option set explicitly) differ
    from the encoder an index manifest describes, as ``key: index value != settings value``."""
    from assets.indexes.encoders import resolve_model

    wanted: dict[str, Any] = {"model": resolve_model(settings.model)[0], "family": settings.family}
    if settings.family == "dpr" and settings.query_model:
        wanted["query_model"] = resolve_model(settings.query_model)[0]
    for key in ("query_prompt", "passage_prompt", "pooling", "normalize", "max_length"):
        if getattr(settings, key) is not None:
            wanted[key] = getattr(settings, key)
    return [
        f"{key}: {description.get(key)!r} != {value!r}"
        for key, value in wanted.items()
        if key in description and description.get(key) != value
    ]


class HybridSearch:
    """Reciprocal-rank fusion of the retriever's ``bm25`` and ``dense`` searchers (``indexes.hybrid``)."""

    def __init__(self, retriever: Retriever, parts: tuple[str, ...] = ("bm25", "dense")) -> None:
        self.parts = [retriever.searcher(name) for name in parts]
        self.depth, self.constant = retriever.settings.hybrid_depth, retriever.settings.hybrid_constant

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        depth = max(k, self.depth)
        rankings = [part.batch_search(queries, depth, threads=threads) for part in self.parts]
        fused = []
        for per_query in zip(*rankings, strict=True):
            by_id: dict[str, Hit] = {}
            for hits in reversed(per_query):
                by_id.update((hit.passage_id, hit) for hit in hits)
            ranking = reciprocal_rank_fusion(
                [[h.passage_id for h in hits] for hits in per_query], depth=depth, constant=self.constant, k=k
            )
            fused.append([Hit(pid, by_id[pid].wikipedia_id, score) for pid, score in ranking])
        return fused

    def close(self) -> None:  # the parts belong to the retriever, which closes them
        self.parts = []


def _open_rerank(retriever: Retriever) -> Searcher:
    from assets.indexes.rerank import RerankSearch

    return RerankSearch(retriever)


def _register_built_ins() -> None:
    for name, description, opener in (
        ("bm25", "BM25 (Anserini/Lucene)", Bm25Search),
        ("dense", "dense embeddings + FAISS", DenseSearch),
    ):
        index = f"{name}_index"  # the asset and its SnapshotPaths folder share the name
        register_searcher(SearcherType(name, description, opener, asset=index, index_dir=attrgetter(index)))
    both = ("bm25", "dense")
    register_searcher(
        SearcherType("hybrid", "reciprocal-rank fusion of bm25 and dense", HybridSearch, searches=both)
    )
    register_searcher(
        SearcherType(
            "rerank",
            "cross-encoder rerank of the bm25 + dense candidates (Re2G)",
            _open_rerank,
            searches=both,
            served_by_default=False,
        )
    )


_register_built_ins()
