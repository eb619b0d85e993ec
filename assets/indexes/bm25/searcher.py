"""Searching the BM25 index in-process through pyserini's ``LuceneSearcher`` (the pyjnius JVM configured by
:mod:`assets.indexes.bm25.java`): :class:`Bm25Searcher`, and :func:`search_topics` over topics read by
:mod:`assets.indexes.runs` (which also writes TREC runs and KILT-format retrieval output).

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from assets.indexes.bm25 import java
from assets.indexes.bm25.index import read_index_metadata
from assets.indexes.bm25.settings import Bm25Settings
from assets.indexes.bm25.text_analysis import ANALYSES, ORIGINAL_FIELD, text_analysis
from assets.indexes.hits import Hit
from assets.indexes.registry import SearchContext
from assets.iterables import batched
from assets.languages import WHITESPACE_ANALYZER, resolve_language
from assets.limits import SearchLimits
from assets.params import BM25_BATCH_QUERIES
from assets.topics import Topic

__all__ = ["Bm25Searcher", "search_topics"]

log = logging.getLogger(__name__)

CUTS_REMEMBERED = 256
"""Long queries whose cut a searcher remembers (the server reports a cut, then searches the query)."""
_NOT_IN_A_TERM_RE = re.compile(r"[\s!-/:-@\[-`{-~]+")
"""Characters no analysed term is made of alone (blanks, ASCII punctuation): what is left bounds the number
of terms a query can have, so a query under the limit is never analysed twice."""


def _contents_of(lucene_document: Any) -> str | None:
    if lucene_document is None:
        return None
    raw = lucene_document.get("raw")
    if raw is not None:
        try:
            return _shown(json.loads(raw))
        except ValueError:
            return raw
    return lucene_document.get("contents")


def _shown(document: dict) -> str | None:
    """A stored document's text as a hit shows it: its original when its contents were pre-analysed."""
    return document.get(ORIGINAL_FIELD, document.get("contents"))


class Bm25Searcher:
    """BM25 search over an index built by :func:`build_bm25_index` (pyserini ``LuceneSearcher``).

    ``settings``: k1, b, the heap and the batch threads (default: ``indexes.bm25``'s defaults). The analyzer
    language comes from the index's ``kilt_bm25.json`` unless ``language`` is given. The JVM is in-process
    and shared: its heap is fixed by the first searcher (or :func:`assets.indexes.bm25.java.configure_jnius`)
    of the process.
    """

    @classmethod
    def open(cls, context: SearchContext) -> Bm25Searcher:
        """The searcher of a snapshot's BM25 index with the context's settings (its ``open`` as a
        :class:`~assets.indexes.registry.SearcherType`)."""
        paths = context.paths
        if not paths.bm25_index.is_dir():
            raise FileNotFoundError(
                f"no BM25 index for snapshot {paths.snapshot_id}: build it with "
                "`kiltpipe build --select key:bm25_index`"
            )
        return cls(paths.bm25_index, context.settings.bm25, limits=context.limits)

    def __init__(
        self,
        index_dir: Path | str,
        settings: Bm25Settings | None = None,
        *,
        language: str | None = None,
        limits: SearchLimits | None = None,
    ) -> None:
        self.settings = settings or Bm25Settings.from_params()
        self.max_terms = (limits or SearchLimits()).max_query_terms
        self.index_dir = Path(index_dir)
        if not self.index_dir.is_dir():
            raise FileNotFoundError(f"BM25 index {self.index_dir} does not exist")
        if not any(self.index_dir.glob("segments_*")):
            raise FileNotFoundError(f"{self.index_dir} is not a Lucene index (no segments_* file)")
        meta = read_index_metadata(self.index_dir)
        if language:
            self.language, fallback = resolve_language(language)
            self.analysis = text_analysis(language)
        else:  # the analyzer and pre-analysis the index was built with (none before there was any)
            self.language, fallback = meta.get("language") or "en", None
            self.analysis = ANALYSES[meta.get("analysis", "none")]
        if fallback:
            log.warning("BM25 search: %s", fallback)
        self.k1, self.b = float(self.settings.k1), float(self.settings.b)
        java.configure_jnius(self.settings.heap)
        lucene = java.import_pyserini("pyserini.search.lucene")
        self._searcher = lucene.LuceneSearcher(str(self.index_dir))
        if self.language == WHITESPACE_ANALYZER:
            analysis = java.import_pyserini("pyserini.analysis")
            self._searcher.set_analyzer(analysis.JWhiteSpaceAnalyzer())
        elif self.language != "en":
            self._searcher.set_language(self.language)
        self._searcher.set_bm25(self.k1, self.b)
        self.num_docs: int = int(self._searcher.num_docs)
        self._analyzer: Any = None
        self._cuts: OrderedDict[str, tuple[str, dict[str, int] | None]] = OrderedDict()  # newest last
        self._cuts_lock = threading.Lock()

    # ------------------------------------------------------------------------------------ query bounds
    def _terms(self, text: str) -> int:
        """Distinct terms of ``text`` as the index's analyzer makes them (one Java call)."""
        if self._analyzer is None:
            analysis = java.import_pyserini("pyserini.analysis")
            self._analyzer = analysis.Analyzer(
                analysis.JWhiteSpaceAnalyzer()
                if self.language == WHITESPACE_ANALYZER
                else analysis.get_lucene_analyzer(language=self.language)
            )
        return len(set(self._analyzer.analyze(text)))

    def cut_query(self, query: str) -> tuple[str, dict[str, int] | None]:
        """``query`` as it is searched: within ``limits.search.max_query_terms`` distinct analysed terms
        (Lucene refuses a query of more clauses, and the failure used to fail the batch it was in), cut at
        the last blank that keeps it within (or inside a word, when one word alone is over), and what was
        cut (``{"terms": kept, "of": had}``; None: nothing). A query whose characters cannot make that many
        terms is not analysed at all."""
        query = self.analysis.apply(query)
        if len(_NOT_IN_A_TERM_RE.sub("", query)) <= self.max_terms:
            return query, None
        with self._cuts_lock:  # the server asks from one thread and searches from another
            if query in self._cuts:  # cut once, searched (and reported) without analysing it again
                self._cuts.move_to_end(query)
                return self._cuts[query]
        cut, what = self._cut(query)
        with self._cuts_lock:
            self._cuts[query] = (cut, what)
            while len(self._cuts) > CUTS_REMEMBERED:
                self._cuts.popitem(last=False)
        return cut, what

    def _cut(self, query: str) -> tuple[str, dict[str, int] | None]:
        had = self._terms(query)
        if had <= self.max_terms:
            return query, None
        ends = [m.start() for m in re.finditer(r"\s+", query.strip())]
        text = query.strip()
        fits = [0] + [end for end in ends if end > 0]  # candidate cuts at blanks, in order
        low, high = 0, len(fits) - 1  # fits[low] fits; find the last that does
        while low < high:
            middle = (low + high + 1) // 2
            if self._terms(text[: fits[middle]]) <= self.max_terms:
                low = middle
            else:
                high = middle - 1
        if fits[low] == 0:  # the first word alone is over: cut inside it
            first = len(text) if not ends else ends[0]
            low_c, high_c = 0, first
            while low_c < high_c:
                middle = (low_c + high_c + 1) // 2
                if self._terms(text[:middle]) <= self.max_terms:
                    low_c = middle
                else:
                    high_c = middle - 1
            cut = text[:low_c]
        else:
            cut = text[: fits[low]]
        return cut, {"terms": self._terms(cut), "of": had}

    def query_cuts(self, queries: Sequence[str]) -> list[dict[str, int] | None]:
        """What :meth:`cut_query` cuts of each query (None where nothing)."""
        return [self.cut_query(query)[1] if query else None for query in queries]

    # ------------------------------------------------------------------------------------ queries
    def search(self, query: str, k: int = 10, *, with_text: bool = True) -> list[Hit]:
        """The top ``k`` passages for ``query`` (best first; ties broken by Anserini by docid)."""
        self._check_open()
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not query or not query.strip():
            return []
        return self._hits(self._searcher.search(self.cut_query(query)[0], int(k)), with_text)

    def batch_search(
        self, queries: Sequence[str], k: int = 10, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in query order (a blank query has none), searched by
        ``threads`` Java threads (default: the settings')."""
        qids = [str(i) for i in range(len(queries))]
        found = self.batch_search_ids(queries, qids, k, threads, with_text=with_text)
        return [found[qid] for qid in qids]

    def batch_search_ids(
        self,
        queries: Sequence[str],
        qids: Sequence[str],
        k: int = 100,
        threads: int | None = None,
        *,
        with_text: bool = True,
    ) -> dict[str, list[Hit]]:
        """``{qid: top-k hits}`` for many queries (pyserini's form), searched by ``threads`` Java threads
        (default: the settings'; qid order kept)."""
        self._check_open()
        threads = self.settings.threads if threads is None else threads
        queries, qids = list(queries), [str(q) for q in qids]
        if len(queries) != len(qids):
            raise ValueError(f"{len(queries)} queries but {len(qids)} qids")
        if len(set(qids)) != len(qids):
            raise ValueError("qids must be unique")
        if k < 1 or threads < 1:
            raise ValueError(f"k and threads must be >= 1, got k={k}, threads={threads}")
        searchable = [
            (self.cut_query(q)[0], i) for q, i in zip(queries, qids, strict=True) if q and q.strip()
        ]
        found: dict[str, list[Hit]] = {}
        if len(searchable) == 1:  # one query: no Java thread pool to set up
            ((query, qid),) = searchable
            found[qid] = self._hits(self._searcher.search(query, int(k)), with_text)
        else:  # a batch's Java results become Python hits before the next: the heap holds one batch
            for batch in batched(searchable, BM25_BATCH_QUERIES):
                raw = self._searcher.batch_search(
                    [q for q, _ in batch], [i for _, i in batch], int(k), int(threads)
                )
                found.update((qid, self._hits(raw.get(qid, ()), with_text)) for _, qid in batch)
        return {qid: found.get(qid, []) for qid in qids}

    def doc(self, passage_id: str) -> Hit | None:
        """The stored passage ``passage_id`` (score 0), or None."""
        self._check_open()
        document = self._searcher.doc(passage_id)
        if document is None:
            return None
        raw = document.raw()
        contents = _shown(json.loads(raw)) if raw else document.contents()
        return Hit.from_contents(passage_id, 0.0, contents)

    @staticmethod
    def _hits(scored_docs: Iterable[Any], with_text: bool) -> list[Hit]:
        if not with_text:
            return [Hit.from_contents(d.docid, d.score, None) for d in scored_docs]
        return [Hit.from_contents(d.docid, d.score, _contents_of(d.lucene_document)) for d in scored_docs]

    # ------------------------------------------------------------------------------------ lifecycle
    def _check_open(self) -> None:
        if self._searcher is None:
            raise RuntimeError("Bm25Searcher is closed")

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def __enter__(self) -> Bm25Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Bm25Searcher({str(self.index_dir)!r}, k1={self.k1}, b={self.b}, language={self.language!r})"


def search_topics(
    searcher: Bm25Searcher,
    topics: Sequence[Topic],
    *,
    k: int = 100,
    threads: int | None = None,
    with_text: bool = False,
) -> dict[str, list[Hit]]:
    """:meth:`Bm25Searcher.batch_search_ids` over topics (texts are not needed for runs: off by default)."""
    return searcher.batch_search_ids(
        [t.text for t in topics], [t.id for t in topics], k=k, threads=threads, with_text=with_text
    )


def bm25_documents(index_dir: Path) -> int:
    """The documents the Lucene index in ``index_dir`` holds (what Lucene says, not a build's report)."""
    return Bm25Searcher(index_dir).num_docs
