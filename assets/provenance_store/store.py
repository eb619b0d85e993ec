"""Reading the per-snapshot provenance store (``provenance.duckdb``): pages, paragraphs, passages,
redirects, the KB (built by :mod:`.build`).

Every lookup is a parameterized query on an indexed key; a passage by its id (one, or many in one call)
is read from ``passages.sqlite`` (:mod:`.passage_rows`) when the store has it, in microseconds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb

from assets.iterables import batched
from assets.provenance_store.passage_rows import PassageRows
from assets.provenance_store.tables import StoredPassages, stored_passages
from assets.storage import (
    SnapshotPaths,
    build_state,
    duckdb_memory_limit,
)
from assets.wikipedia.dump import QID_RE
from assets.wikipedia.passages import SPAN_COLUMNS, content_bounds
from assets.wikipedia.wikitext import normalize_title, split_fragment

log = logging.getLogger(__name__)


_SPAN_PARAGRAPH_COLUMNS = "paragraph_id, text, section, page_offset, passages"  # what span() reads
PREFETCH_CHUNK = 250  # keys per IN list of ProvenanceStore.prefetch (DuckDB scans for much longer lists)
PREFETCH_SPAN_PARAGRAPHS = 64  # paragraphs of one span fetched ahead (a longer span reads the rest itself)


def paragraph_key(wikipedia_id: str, paragraph_id: int) -> str:
    """The paragraphs table's key of a page's paragraph."""
    return f"{wikipedia_id}:{paragraph_id}"


def covered_fraction(passage_start: int, passage_end: int, span_start: int, span_end: int) -> float:
    """The share of a span ``[span_start, span_end)`` that lies inside a passage ``[passage_start,
    passage_end)`` (page character offsets; the passage is known to overlap the span). An empty span
    inside a passage is covered whole (1.0)."""
    if span_end <= span_start:
        return 1.0
    return (min(passage_end, span_end) - max(passage_start, span_start)) / (span_end - span_start)


def covered_fraction_sql(passage_start: str, passage_end: str, span_start: str, span_end: str) -> str:
    """:func:`covered_fraction` as a DuckDB expression over the named columns (the same rule, for the
    datasets tables that precompute it)."""
    return (
        f"CASE WHEN {span_end} <= {span_start} THEN 1.0 ELSE "
        f"(least({passage_end}, {span_end}) - greatest({passage_start}, {span_start}))::DOUBLE "
        f"/ ({span_end} - {span_start}) END"
    )


@dataclass(slots=True)
class PageMatch:
    """A found page and how the query reached it."""

    record: dict[str, Any]
    via: str  # "id", "title", "redirect", "title_case_insensitive", "wikidata" or "wikidata_redirect"
    redirected_from: str | None = None


class ProvenanceStore:
    """Read-only lookups of pages, passages and spans of one snapshot (it never writes: a missing store is
    a :class:`LookupError`; ``kiltpipe restore-stores`` rebuilds missing stores). ``memory_limit``: its
    DuckDB buffer pool (default ``$KILT_DUCKDB_MEMORY``); ``sharing``: an open reader of the same store
    file (a hard link too), whose database and buffer pool this one then uses."""

    def __init__(
        self, paths: SnapshotPaths, *, memory_limit: str | None = None, sharing: ProvenanceStore | None = None
    ) -> None:
        if not paths.provenance_store.is_file():
            state = build_state(paths.data_dir, paths.snapshot_id)
            unbuilt = [
                f"{what} ({where.absolute()})"
                for what, where in (
                    ("knowledge source", paths.manifest_file),
                    ("passages", paths.passages_parquet),
                )
                if not where.exists()
            ]
            how = (
                f"it is built from its {' and '.join(unbuilt)}, never built: build them and the store with "
                f"`kiltpipe build --snapshot {paths.snapshot_id} --select +key:provenance_store`"
                if unbuilt
                else f"rebuild it from the snapshot's Parquet with `kiltpipe restore-stores --snapshot "
                f"{paths.snapshot_id}` (after a `dvc pull`), or build the snapshot with `kiltpipe build "
                f"--snapshot {paths.snapshot_id}`"
            )
            raise LookupError(
                f"snapshot {paths.snapshot_id} has no provenance store ({paths.provenance_store})"
                + (f"; {state.describe()}" if not state.complete else "")
                + f"; {how}"
            )
        self.paths = paths
        if sharing is not None and sharing.paths.provenance_store.samefile(paths.provenance_store):
            self.con = sharing.con.cursor()  # the same database: one buffer pool, not two
        else:  # held to the build's DuckDB memory: lookups fill the buffer pool with the store's blocks
            self.con = duckdb.connect(
                str(paths.provenance_store),
                read_only=True,
                config={"memory_limit": memory_limit or duckdb_memory_limit()},
            )
        manifest = json.loads(self.con.execute("SELECT manifest FROM meta").fetchone()[0])
        self.case = manifest.get("case", "first-letter")
        columns = self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'pages'"
        ).fetchall()
        self.has_qids = ("wikidata_id",) in columns
        tables = {row[0] for row in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        self.stored = tuple(stored for stored in stored_passages() if stored.table in tables)
        """The passage tables it holds (:mod:`.tables`), the text passages first."""
        self.rows = PassageRows(paths.passage_rows) if paths.passage_rows.is_file() else None
        self._pages_ahead: dict[str, dict[str, Any] | None] = {}  # see prefetch
        self._paragraphs_ahead: dict[str, tuple[Any, ...] | None] = {}

    def __enter__(self) -> ProvenanceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.rows is not None:
            self.rows.close()
        self.con.close()

    def _one(self, sql: str, params: list[Any]) -> dict[str, Any] | None:
        cursor = self.con.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def prefetch(self, wikipedia_ids: Iterable[str] = (), spans: Iterable[tuple[str, int, int]] = ()) -> None:
        """Fetch these pages (by id) and the paragraphs of these spans (``(wikipedia_id, start_paragraph_id,
        end_paragraph_id)``) in a few queries for the lookups that follow; what an earlier call fetched is
        forgotten (memory stays one batch).

        One point query costs ~0.6 ms (2 ms at 1M pages); a constant IN list of up to ``PREFETCH_CHUNK``
        keys is answered from the same ART index at a tenth of that per key (a longer one scans)."""
        pages = self._rows_in("pages", "wikipedia_id", "kilt_record", wikipedia_ids)
        self._pages_ahead = {page_id: row and json.loads(row[1]) for page_id, row in pages.items()}
        keys = (
            paragraph_key(wikipedia_id, paragraph_id)
            for wikipedia_id, start, end in spans
            for paragraph_id in range(start, min(end, start + PREFETCH_SPAN_PARAGRAPHS - 1) + 1)
        )
        paragraphs = self._rows_in("paragraphs", "paragraph_key", _SPAN_PARAGRAPH_COLUMNS, keys)
        self._paragraphs_ahead = {key: row and tuple(row[1:]) for key, row in paragraphs.items()}

    def _rows_in(self, table: str, key: str, columns: str, values: Iterable[str]) -> dict[str, Any]:
        """Every value asked -> its row ``(key, *columns)``, found by ``PREFETCH_CHUNK`` IN lists, or None
        (known to be missing)."""
        asked: dict[str, Any] = dict.fromkeys(values)
        for chunk in batched(list(asked), PREFETCH_CHUNK):
            marks = ",".join("?" * len(chunk))
            for row in self.con.execute(
                f"SELECT {key}, {columns} FROM {table} WHERE {key} IN ({marks})", chunk
            ).fetchall():
                asked[row[0]] = row
        return asked

    def _paragraph_row(self, key: str) -> tuple[Any, ...] | None:
        if key in self._paragraphs_ahead:
            return self._paragraphs_ahead[key]
        return self.con.execute(
            f"SELECT {_SPAN_PARAGRAPH_COLUMNS} FROM paragraphs WHERE paragraph_key = ?", [key]
        ).fetchone()

    def _page_row(self, column: str, value: str) -> dict[str, Any] | None:
        """The KILT record of the page whose ``column`` equals ``value`` (stored as JSON: fast to load)."""
        if column == "wikipedia_id" and value in self._pages_ahead:
            return self._pages_ahead[value]
        row = self.con.execute(
            f"SELECT kilt_record FROM pages WHERE {column} = ? LIMIT 1", [value]
        ).fetchone()
        return json.loads(row[0]) if row else None

    # ------------------------------------------------------------------------------------ pages
    def page(self, query: str, *, by: str = "auto") -> PageMatch | None:
        """A page by numeric id, by Wikidata QID (``Q42``) or by title: normalized (underscores, first-letter
        case, entities, FEVER escapes such as ``-LRB-``), redirects followed, then a unique case-insensitive
        match. ``by``: ``auto`` (digits = id, ``Q`` + digits = QID, each falling back to a title), ``id``,
        ``qid`` or ``title``."""
        query = query.strip()
        if by == "qid" or (by == "auto" and QID_RE.fullmatch(query.upper())):
            match = self.page_by_qid(query)
            if match is not None or by == "qid":
                return match
        if by in ("auto", "id") and query.isdigit():
            row = self._page_row("wikipedia_id", query)
            if row is not None or by == "id":
                return PageMatch(row, "id") if row else None
        title, _ = split_fragment(normalize_title(query, case=self.case, decode_fever=True))
        row = self._page_row("wikipedia_title", title)
        if row is not None:
            return PageMatch(row, "title")
        redirect = self._one(
            "SELECT target_wikipedia_id, target_title, status FROM redirects WHERE source_title = ? LIMIT 1",
            [title],
        )
        if redirect is not None:
            row = (
                self._page_row("wikipedia_id", redirect["target_wikipedia_id"])
                if redirect["target_wikipedia_id"]
                else None
            )
            if row is None:
                raise LookupError(
                    f"{title!r} is a redirect to {redirect['target_title']!r}, which is not an article of "
                    f"snapshot {self.paths.snapshot_id} ({redirect['status']})"
                )
            return PageMatch(row, "redirect", redirected_from=title)
        rows = self.con.execute(
            "SELECT wikipedia_id FROM pages WHERE title_lower = ? LIMIT 2", [title.lower()]
        ).fetchall()
        if len(rows) == 1:
            return PageMatch(self._page_row("wikipedia_id", rows[0][0]), "title_case_insensitive")
        return None

    def page_by_qid(self, qid: str) -> PageMatch | None:
        """The article with this Wikidata QID, else the target of a redirect page that has it (None when
        neither: the snapshot was built without a page_props table, or the entity has no page here)."""
        qid = qid.strip().upper()
        if not self.has_qids:
            raise LookupError(
                f"the provenance store of snapshot {self.paths.snapshot_id} predates Wikidata ids"
                f"; rebuild it (delete {self.paths.provenance_store} and run `kiltpipe build --snapshot "
                f"{self.paths.snapshot_id}`)"
            )
        row = self._page_row("wikidata_id", qid)
        if row is not None:
            return PageMatch(row, "wikidata")
        redirect = self._one(
            "SELECT source_title, target_wikipedia_id FROM redirects WHERE wikidata_id = ? LIMIT 1", [qid]
        )
        if redirect is not None and redirect["target_wikipedia_id"]:
            row = self._page_row("wikipedia_id", redirect["target_wikipedia_id"])
            if row is not None:
                return PageMatch(row, "wikidata_redirect", redirected_from=redirect["source_title"])
        return None

    def qid(self, query: str, *, by: str = "auto") -> dict[str, Any] | None:
        """The Wikidata QID of a page given by title or id (redirects followed): ``wikidata_id`` (None when
        the page has none), the page's id and title, how it was found, and a redirect's own QID."""
        match = self.page(query, by=by)
        if match is None:
            return None
        record = match.record
        answer = {
            "wikidata_id": (record.get("wikidata_info") or {}).get("wikidata_id"),
            "wikipedia_id": record["wikipedia_id"],
            "wikipedia_title": record["wikipedia_title"],
            "via": match.via,
        }
        if match.redirected_from is not None:
            answer["redirected_from"] = match.redirected_from
            own = self.con.execute(
                "SELECT wikidata_id FROM redirects WHERE source_title = ? LIMIT 1", [match.redirected_from]
            ).fetchone()
            if own and own[0]:
                answer["redirect_wikidata_id"] = own[0]
        return answer

    def qid_coverage(self) -> dict[str, int]:
        """Pages and redirects with a QID (0 and 0 for a snapshot built without page_props)."""
        if not self.has_qids:
            return {
                "pages": self.con.execute("SELECT count(*) FROM pages").fetchone()[0],
                "pages_with_qid": 0,
                "redirects_with_qid": 0,
            }
        pages, with_qid = self.con.execute("SELECT count(*), count(wikidata_id) FROM pages").fetchone()
        redirects = self.con.execute("SELECT count(wikidata_id) FROM redirects").fetchone()[0]
        return {"pages": pages, "pages_with_qid": with_qid, "redirects_with_qid": redirects}

    # ------------------------------------------------------------------------------------ passages
    def holds(self, stored: StoredPassages) -> bool:
        """Whether it holds a collection's passage table (a store built before the collection was, or
        from a snapshot without its passages, does not)."""
        return stored in self.stored

    def passage(self, passage_id: str) -> dict[str, Any] | None:
        """A passage with its text, title and coordinates: a text passage's KILT span, a table's
        (infobox's) passage with its ``kind``, structure, rows and wikitext offsets, any other stored
        collection's passage as its registration reads it."""
        if self.rows is not None:
            return self.rows.get(passage_id)
        for stored in self.stored:
            found = self._one(f"SELECT {stored.row} FROM {stored.table} WHERE passage_id = ?", [passage_id])
            if found is not None:
                return found
        return None

    def passages_of_page(self, wikipedia_id: str, stored: StoredPassages) -> list[dict[str, Any]]:
        """A page's passages of one stored collection, in their order on the page (none without them)."""
        if not self.holds(stored):
            return []
        cursor = self.con.execute(
            f"SELECT {stored.row} FROM {stored.table} WHERE wikipedia_id = ? ORDER BY {stored.order}",
            [wikipedia_id],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def passages(self, passage_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{passage_id: row}`` of the passages found (rows as :meth:`passage` returns them), in one call."""
        if self.rows is not None:
            return self.rows.many(passage_ids)
        return {pid: row for pid in dict.fromkeys(passage_ids) if (row := self.passage(pid)) is not None}

    def passage_texts(self, passage_ids: list[str]) -> dict[str, tuple[str, str]]:
        """``{passage_id: (title, text)}`` of the passages found in any stored collection (indexed)."""
        if self.rows is not None:
            return {pid: (row["title"], row["text"]) for pid, row in self.rows.many(passage_ids).items()}
        found: dict[str, tuple[str, str]] = {}
        for stored in self.stored:
            rows = self.con.execute(
                f"SELECT passage_id, title, text FROM {stored.table} "
                "WHERE passage_id IN (SELECT unnest(?::VARCHAR[]))",
                [list(passage_ids)],
            ).fetchall()
            found.update((pid, (title, text)) for pid, title, text in rows)
        return found

    def span(
        self,
        wikipedia_id: str,
        start_paragraph_id: int,
        start_character: int,
        end_paragraph_id: int,
        end_character: int,
    ) -> dict[str, Any] | None:
        """A span's text and the passages covering it, each with the fraction of the span it covers.

        None when the page is unknown; ValueError when the coordinates are outside the page.
        """
        if (end_paragraph_id, end_character) < (start_paragraph_id, start_character):
            raise ValueError("span ends before it starts")
        # Only single-key point queries: DuckDB answers those from the ART indexes (a conjunction with a
        # range falls back to a scan).
        rows = []
        for paragraph_id in range(start_paragraph_id, end_paragraph_id + 1):
            row = self._paragraph_row(paragraph_key(wikipedia_id, paragraph_id))
            if row is None:
                if self._page_row("wikipedia_id", wikipedia_id) is None:
                    return None
                raise ValueError(
                    f"page {wikipedia_id} has paragraphs 0..{self._last_paragraph(wikipedia_id)}; "
                    f"span asks for {start_paragraph_id}..{end_paragraph_id}"
                )
            rows.append(row)
        first_text, last_text = rows[0][1], rows[-1][1]
        if start_character > len(first_text) or end_character > len(last_text):
            raise ValueError(
                f"character offsets outside the paragraphs: {start_character} > {len(first_text)} or "
                f"{end_character} > {len(last_text)}"
            )
        pieces = []
        for paragraph_id, text, _, _, _ in rows:
            start, end = content_bounds(text)
            if paragraph_id == start_paragraph_id:
                start = start_character
            if paragraph_id == end_paragraph_id:
                end = end_character
            if start < end:
                pieces.append(text[start:end])
        span_start = rows[0][3] + start_character
        span_end = rows[-1][3] + end_character
        upper = max(span_end, span_start + 1)
        overlapping = {p["passage_id"]: p for row in rows for p in row[4]}.values()
        covering = sorted(
            (p for p in overlapping if p["page_end"] > span_start and p["page_start"] < upper),
            key=lambda p: p["page_start"],
        )
        return {
            "wikipedia_id": wikipedia_id,
            "section": rows[0][2],
            "start_paragraph_id": start_paragraph_id,
            "start_character": start_character,
            "end_paragraph_id": end_paragraph_id,
            "end_character": end_character,
            "text": " ".join(pieces),
            "passages": [
                {
                    "passage_id": p["passage_id"],
                    "covered_fraction": round(
                        covered_fraction(p["page_start"], p["page_end"], span_start, span_end), 6
                    ),
                    **{k: p[k] for k in SPAN_COLUMNS},
                }
                for p in covering
            ],
        }

    def _last_paragraph(self, wikipedia_id: str) -> int:
        return self.con.execute(
            "SELECT max(paragraph_id) FROM paragraphs WHERE wikipedia_id = ?", [wikipedia_id]
        ).fetchone()[0]
