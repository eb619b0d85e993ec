"""Page lookups over a built snapshot's Parquet shards (by id or by title, redirects followed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from assets.storage import SnapshotPaths
from assets.wikipedia.kilt_jsonl import to_kilt_record
from assets.wikipedia.titles import normalize_title, split_fragment


@dataclass(slots=True)
class PageMatch:
    """A found page and how the query reached it."""

    record: dict[str, Any]
    via: str  # "id", "title", "redirect" or "title_case_insensitive"
    redirected_from: str | None = None


class PageLookup:
    """Parameterized DuckDB queries over ``pages/*.parquet`` and ``redirects.parquet``."""

    def __init__(self, paths: SnapshotPaths) -> None:
        self.paths = paths
        manifest = json.loads(paths.manifest_file.read_text())
        self.case = manifest.get("case", "first-letter")
        self.con = duckdb.connect()
        self.con.execute(f"CREATE VIEW pages AS SELECT * FROM read_parquet('{_escape(paths.pages_glob)}')")
        self.con.execute(
            f"CREATE VIEW redirects AS SELECT * FROM read_parquet('{_escape(str(paths.redirects_file))}')"
        )

    def _fetch(self, column: str, value: str) -> dict[str, Any] | None:
        relation = self.con.execute(f"SELECT * FROM pages WHERE {column} = ? LIMIT 1", [value])
        names = [d[0] for d in relation.description]
        row = relation.fetchone()
        return dict(zip(names, row, strict=True)) if row else None

    def find(self, query: str, *, by: str = "auto") -> PageMatch | None:
        """Find a page by numeric id or by title (normalized; FEVER escapes decoded; redirects followed)."""
        query = query.strip()
        if by in ("auto", "id") and query.isdigit():
            row = self._fetch("wikipedia_id", query)
            if row is not None or by == "id":
                return PageMatch(to_kilt_record(row), "id") if row else None
        title, _ = split_fragment(normalize_title(query, case=self.case, decode_fever=True))
        row = self._fetch("wikipedia_title", title)
        if row is not None:
            return PageMatch(to_kilt_record(row), "title")
        redirect = self.con.execute(
            "SELECT target_wikipedia_id, target_title, status FROM redirects WHERE source_title = ? LIMIT 1",
            [title],
        ).fetchone()
        if redirect is not None:
            target_id, target_title, status = redirect
            row = self._fetch("wikipedia_id", target_id) if target_id else None
            if row is None:
                raise LookupError(
                    f"{title!r} is a redirect to {target_title!r}, which is not an article of snapshot "
                    f"{self.paths.snapshot_id} ({status})"
                )
            return PageMatch(to_kilt_record(row), "redirect", redirected_from=title)
        rows = self.con.execute(
            "SELECT wikipedia_id FROM pages WHERE lower(wikipedia_title) = lower(?) LIMIT 2", [title]
        ).fetchall()
        if len(rows) == 1:
            return PageMatch(
                to_kilt_record(self._fetch("wikipedia_id", rows[0][0])), "title_case_insensitive"
            )
        return None

    def close(self) -> None:
        self.con.close()


def _escape(path: str) -> str:
    return path.replace("'", "''")
