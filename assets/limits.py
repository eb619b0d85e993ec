"""Every bound the project enforces on what comes from outside, named once: the ``limits`` section of
``params.yaml``.

Input from outside (an HTTP request, a query, a dump site's answers, a page's tables and infoboxes, the
addresses the project listens on) is checked where it enters, against one of these settings, and the
error names the setting. The CLI, the Python API and ``kiltpipe serve`` read the same values, so a query
the server refuses is refused by ``kiltpipe search`` too. ``kiltpipe limits`` prints them all;
docs/limits.md lists them with what each protects (a test keeps the page and this model in step).

Bounds that belong to a stage's own settings stay there and are listed here by name only:
``knowledge_source.max_page_bytes`` (the largest page a build reads), ``knowledge_source.max_group_bytes``
(the decompressed stream group a conversion worker holds) and ``snapshots.releases.retries``
(attempts per file).

Pure module: no Dagster import.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_HOPS",
    "LIMITS_PATH",
    "FetchLimits",
    "HtmlLimits",
    "HttpLimits",
    "InputLimits",
    "LimitExceeded",
    "Limits",
    "NetworkLimits",
    "QALimits",
    "SearchLimits",
    "StructureLimits",
    "WikidataLimits",
    "bounded_json",
    "check_k",
    "check_query",
    "describe_limits",
    "input_line_bytes",
]

LIMITS_PATH = "limits"
"""The section of ``params.yaml`` that holds these settings."""


class LimitExceeded(ValueError):
    """An input over one of the limits; the message names the setting (``limits.<group>.<name>``)."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(f"{message} (limit: {LIMITS_PATH}.{setting} in params.yaml)")
        self.setting = setting


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchLimits(_Group):
    """``limits.search``: what one query and one search may ask for (CLI, Python API, HTTP API)."""

    max_k: int = Field(1000, gt=0, description="hits per query")
    max_query_chars: int = Field(
        100_000, gt=0, description="characters of one query; a longer one is refused, not cut"
    )
    max_query_terms: int = Field(
        1024,
        gt=0,
        description="distinct analysed terms of a BM25 query (Lucene's clause limit); the rest of the query "
        "is cut and the cut reported",
    )


class HttpLimits(_Group):
    """``limits.http``: what one request to ``kiltpipe serve`` may carry and ask for."""

    max_body_bytes: int = Field(16 * 1024 * 1024, gt=0, description="bytes of a request body")
    max_json_depth: int = Field(16, gt=1, description="nesting of arrays and objects in a JSON body")
    max_number_chars: int = Field(32, gt=0, description="characters of one number in a JSON body or URL")
    max_queries: int = Field(10_000, gt=0, description="queries of one batch request")
    max_hits: int = Field(100_000, gt=0, description="hits one request may ask for (queries x k)")
    max_text_hits: int = Field(20_000, gt=0, description="hits with title and text one request may ask for")
    shutdown_seconds: float = Field(
        5.0, gt=0, description="after SIGTERM: how long requests in flight may run before the server exits"
    )


class FetchLimits(_Group):
    """``limits.fetch``: what a dump site (Wikimedia's or a mirror) may send."""

    max_listing_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="bytes of a run index page, dumpstatus.json or checksum list"
    )
    connect_seconds: float = Field(30.0, gt=0, description="seconds to open a connection")
    min_bytes_per_second: int = Field(
        1024,
        ge=0,
        description="a download slower than this over snapshots.releases.stall_seconds is stalled: cut and "
        "tried from the next source",
    )
    max_redirects: int = Field(5, ge=0, description="HTTP redirects followed per request")
    max_runs_probed: int = Field(
        20,
        gt=0,
        description="run folders of a wiki (newest first) looked into for a ready run, on each source "
        "(kiltpipe fetch, the release sensor); older runs are not tried",
    )
    max_answers_told: int = Field(
        20,
        gt=0,
        description="what the sources answered, named in the error when no run is ready (the rest counted)",
    )


class StructureLimits(_Group):
    """``limits.structures``: what one page's tables and infoboxes may hold (larger ones are skipped and
    counted in the structured passages' report)."""

    max_grid_cells: int = Field(100_000, gt=0, description="cells of a table's expanded grid")
    max_span: int = Field(1000, gt=0, description="rowspan/colspan (MediaWiki caps colspan at 1000)")
    max_value_bytes: int = Field(
        65_536, gt=0, description="wikitext bytes of one table cell or infobox value"
    )
    max_structures: int = Field(10_000, gt=0, description="tables and infoboxes read from one page")


class HtmlLimits(_Group):
    """``limits.html``: what one article's Parsoid HTML (an Enterprise record) may hold. libxml2 alone would
    cut a page at 256 nested elements or a 10 MB text node and go on with what it had; the HTML is parsed
    without those limits and these are applied instead: a page over one is skipped whole, counted and named
    by its record."""

    max_depth: int = Field(512, gt=0, le=2000, description="nested elements of one page's HTML")
    max_node_bytes: int = Field(
        16 * 1024 * 1024,
        gt=0,
        description="characters of one text node or attribute value of a page's HTML (inside "
        "knowledge_source.max_record_bytes)",
    )


DEFAULT_HOPS = 3
"""Statements per KB path when a search names none (``WikidataLimits.max_hops`` bounds any search)."""


class WikidataLimits(_Group):
    """``limits.wikidata``: what one entity of a Wikidata dump and one KB query may hold or ask for."""

    max_entity_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="bytes of one entity's JSON line (the largest real ones are about 10 MB); a longer line "
        "is skipped and counted, named with its byte offset",
    )
    max_document_bytes: int = Field(
        256 * 1024 * 1024,
        gt=0,
        description="bytes of a file that is one JSON document (wbgetentities, Special:EntityData) rather "
        "than one entity per line",
    )
    max_statements: int = Field(
        20_000,
        gt=0,
        description="statements kept of one entity (in the dump's order); the rest are dropped and counted",
    )
    max_hops: int = Field(4, gt=0, description="hops of a KB path search (kiltpipe kb-path --max-hops)")
    max_visited: int = Field(
        2_000_000,
        gt=0,
        description="entities and edges one path search may touch; a search that would touch more is refused",
    )
    max_paths: int = Field(1000, gt=0, description="shortest paths one search returns (the rest are counted)")
    max_mention_words: int = Field(
        8, gt=0, description="words of the longest mention the entity linker tries"
    )
    max_text_chars: int = Field(10_000, gt=0, description="characters of a text the entity linker reads")
    max_key_chars: int = Field(
        1000,
        gt=0,
        description="characters of an entity key a KB lookup reads (a QID, page id, title or label: "
        "kiltpipe entity, facts, kb-path), a longer one refused; and of a line of a label file "
        "(wikidata.label_files, 4 bytes a character), a longer one skipped and counted",
    )


class QALimits(_Group):
    """``limits.qa``: what one line of a QA-pair file and one question to the QA KB may hold."""

    max_line_bytes: int = Field(
        1024 * 1024,
        gt=0,
        description="bytes of one line of a QA-pair file or of qa.source_passages (a longer one is skipped "
        "and counted, by line)",
    )
    max_question_words: int = Field(
        100, gt=0, description="words of a stored question (longer ones are skipped and counted)"
    )
    max_answers: int = Field(
        100,
        gt=0,
        description="answers kept of one stored question, of one line and of all its lines merged (the rest "
        "are dropped and counted)",
    )
    max_lines_per_question: int = Field(
        1000,
        gt=0,
        description="lines merged into one stored question (answers, sources, metadata passages); further "
        "lines of the same question are counted as duplicates and dropped, counted",
    )
    max_answer_chars: int = Field(
        500, gt=0, description="characters of one answer (longer ones are dropped and counted)"
    )


class InputLimits(_Group):
    """``limits.input``: what one line of a line-oriented input file may hold."""

    max_line_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="bytes of one line of a dataset, qrels or topics file (kiltpipe map, datasets.files, "
        "search --topics) or of KILT JSONL pages (compare-kilt); a longer dataset line is a counted skip "
        "named by line, a longer topics or pages line an error naming the file and line",
    )


def input_line_bytes(given: int | None = None) -> int:
    """``given``, else the built-in ``limits.input.max_line_bytes``: the bound of one line of a dataset,
    topics or KILT JSONL file (a door passes its params' value)."""
    return given if given is not None else InputLimits().max_line_bytes


class NetworkLimits(_Group):
    """``limits.network``: where the project listens."""

    bind_host: str = Field(
        "127.0.0.1",
        description="the address every port the project opens binds to unless the user names another "
        "(kiltpipe serve, the Dask scheduler and dashboard of --executor dask)",
    )


class Limits(_Group):
    """``limits``: every bound the project enforces on input from outside."""

    search: SearchLimits = Field(SearchLimits(), description="what one query and one search may ask for")
    http: HttpLimits = Field(HttpLimits(), description="what one request to kiltpipe serve may carry")
    fetch: FetchLimits = Field(FetchLimits(), description="what a dump site or mirror may send")
    structures: StructureLimits = Field(StructureLimits(), description="what one page's tables may hold")
    html: HtmlLimits = Field(HtmlLimits(), description="what one article's Parsoid HTML may hold")
    network: NetworkLimits = Field(NetworkLimits(), description="where the project listens")
    wikidata: WikidataLimits = Field(
        WikidataLimits(), description="what a Wikidata entity and a KB query may hold"
    )
    qa: QALimits = Field(QALimits(), description="what a QA-pair file's line and a stored question may hold")
    input: InputLimits = Field(
        InputLimits(), description="what one line of a line-oriented input file may hold"
    )


def describe_limits(limits: Limits | None = None) -> list[dict[str, Any]]:
    """Every limit as ``{"setting", "value", "default", "what"}`` (``kiltpipe limits``, docs/limits.md)."""
    limits = limits or Limits()
    rows = []
    for group_name in Limits.model_fields:
        group = getattr(limits, group_name)
        for name, spec in type(group).model_fields.items():
            rows.append(
                {
                    "setting": f"{LIMITS_PATH}.{group_name}.{name}",
                    "value": getattr(group, name),
                    "default": spec.default,
                    "what": spec.description or "",
                }
            )
    return rows


# ---------------------------------------------------------------------------------------------- checks
def check_k(k: int, limits: SearchLimits) -> int:
    """``k`` when ``1 <= k <= max_k``; else :class:`LimitExceeded` (k < 1: ValueError)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if k > limits.max_k:
        raise LimitExceeded(f"k must be at most {limits.max_k:,}, not {k:,}", "search.max_k")
    return k


def check_query(query: str, limits: SearchLimits) -> str:
    """``query`` when it is at most ``max_query_chars`` long; else :class:`LimitExceeded`."""
    if len(query) > limits.max_query_chars:
        raise LimitExceeded(
            f"a query of {len(query):,} characters; at most {limits.max_query_chars:,}",
            "search.max_query_chars",
        )
    return query


def _outside_strings(codes: Any) -> Any:
    """The bytes of a JSON text that stand outside its strings, found in one vectorised pass (linear in the
    text whatever it holds: no backtracking). A quote delimits a string when an even run of backslashes
    precedes it; :class:`ValueError` for an unterminated string or a backslash outside a string (neither is
    JSON)."""
    import numpy as np

    size = codes.size
    slash = codes == 0x5C
    positions = np.arange(size, dtype=np.int32 if size < 2**31 else np.int64)
    # for every byte, the index of the last byte at or before it that is not a backslash
    last_plain = np.maximum.accumulate(np.where(slash, -1, positions))
    quotes = np.flatnonzero(codes == 0x22)
    before = quotes - 1
    run = np.where(before >= 0, before - last_plain[np.maximum(before, 0)], 0)
    delimiters = quotes[run % 2 == 0]
    if delimiters.size % 2:
        raise ValueError(f"an unterminated string starts at byte {int(delimiters[-1]):,}")
    inside = np.zeros(size + 1, dtype=np.int8)
    inside[delimiters[0::2]] += 1
    inside[delimiters[1::2] + 1] -= 1
    in_string = np.cumsum(inside[:size], dtype=np.int8).astype(bool)
    stray = np.flatnonzero(slash & ~in_string)
    if stray.size:
        raise ValueError(f"a backslash outside a string at byte {int(stray[0]):,}")
    return codes[~in_string]


def bounded_json(raw: bytes, limits: HttpLimits) -> Any:
    """``raw`` parsed as JSON, refused (:class:`LimitExceeded`, naming the bound) when it nests deeper
    than ``max_json_depth`` or holds a number longer than ``max_number_chars``, before the parser sees it.
    The scan is one vectorised pass over the bytes (strings found by their delimiters, never by a
    backtracking pattern; brackets summed outside them), so its cost is linear in the body whatever it
    holds: 100,000 ``[``, a 5,000-digit ``k`` or a megabyte of escaped quotes cost what reading them costs.
    Other bad JSON is a ValueError."""
    import numpy as np

    bare = _outside_strings(np.frombuffer(bytes(raw), dtype=np.uint8))
    numeric = np.isin(bare, np.frombuffer(b"-+0123456789.eE", dtype=np.uint8))
    if numeric.size:
        # the longest run of number characters: distance between the non-number bytes around it
        edges = np.flatnonzero(np.diff(np.concatenate(([False], numeric, [False])).astype(np.int8)))
        if edges.size and int((edges[1::2] - edges[0::2]).max()) > limits.max_number_chars:
            raise LimitExceeded(
                f"a number in the JSON body is longer than {limits.max_number_chars} characters",
                "http.max_number_chars",
            )
    steps = np.isin(bare, (0x5B, 0x7B)).astype(np.int32) - np.isin(bare, (0x5D, 0x7D)).astype(np.int32)
    if steps.size and int(np.cumsum(steps).max()) > limits.max_json_depth:
        raise LimitExceeded(
            f"the JSON body nests deeper than {limits.max_json_depth} levels", "http.max_json_depth"
        )
    return json.loads(raw, parse_constant=_no_constant)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")
