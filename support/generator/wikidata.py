"""A Wikidata entity dump of N entities with Wikidata's shape, made only from real entities.

Every generated entity is a real item (the three dump slices of the embedded default's KB,
``assets/wikidata/fixtures``: labels, descriptions, aliases,
sitelinks, statements with their qualifiers and references), drawn by :data:`SIZE_EXPONENT`, under a new
id ``Q<i>``; its statements that name an entity name generated entities instead, drawn so that in-degree
follows a power law as Wikidata's does (a few hubs named by a large share of all statements, as Q5 "human"
or Q6256 "country" are: the object of a statement is ``Q<1 + floor(N u^3)>`` for a uniform ``u``);
statement ids keep their real UUIDs under the new subject. The real property entities come first, so
labels of properties read as in Wikidata. Deterministic for a seed: the same arguments write the same bytes.

Written in the JSON dump's layout (``[``, one entity per line ending in ``,``, ``]``), bz2-compressed as
multi-stream bz2 (as Wikimedia's own parallel compressors write: one stream per :data:`STREAM_BYTES` of
JSON, compressed by ``threads`` worker processes with Python's own bz2, so no system tool is needed and the
bytes do not depend on the machine or the thread count), to
``benchmarks/work/wikidata/n{N}-s{seed}/wikidata-20260101-all.json.bz2`` with ``stats.json``. The same
plan gives the statements between entities without writing a dump (:func:`generated_edges`), for the
path benchmark.

    .venv/bin/python benchmarks/gen_wikidata_dump.py --entities 100000 [--seed 0]
"""

from __future__ import annotations

import bz2
import collections
import functools
import gzip
import itertools
import json
import random
import re
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from support.workspace import WORK_DIR, log


def _template_files() -> list[Path]:
    """The real entities the templates come from: the embedded default's dump slices."""
    from assets.wikidata import embedded_entity_files

    return embedded_entity_files()[:-1]  # the labels file has no statements


SKEW = 3.0
"""Objects are ``Q<1 + floor(N u^SKEW)>``: P(object id <= k) = (k/N)^(1/SKEW), a power law of in-degree."""
_SLOT = re.compile(r'"@@N(\d+)@@"|@@O(\d+)@@|@@S@@')
"""The slots of a template's text: an object as a number (``numeric-id``), as an id, the subject's id."""
SIZE_EXPONENT = -0.5
"""A template is drawn with probability ∝ its size^-½: the real entities here are richer than Wikidata's
average (countries, cities), and so weighted the mean generated entity is ~11 KB of JSON with ~7
entity-valued statements, near Wikidata's ~13 KB and ~8 (1.5 TB of JSON, ~1.6 G statements, 115 M)."""
DUMP_DATE = "20260101"
STREAM_BYTES = 8 * 2**20
"""JSON bytes per bz2 stream of the generated dump (lbzip2 and pbzip2 write streams of about this order)."""


@dataclass(frozen=True)
class Template:
    """A real item as text with slots: its id, and the object of each entity-valued statement."""

    segments: tuple[str, ...]  # text between slots
    slots: tuple[str, ...]  # "S" (the subject id) or "O<k>" (object k as an id) or "N<k>" (as a number)
    objects: int
    properties: tuple[str, ...]  # the property of each object slot, in order


def _open(path: Path):
    return (bz2.open if path.suffix == ".bz2" else gzip.open)(path, "rt", encoding="utf-8")


def _slotted(entity: dict) -> Template:
    """``entity`` with its id and each entity-valued mainsnak's object replaced by slot markers."""
    properties = []
    for prop, statements in (entity.get("claims") or {}).items():
        for statement in statements:
            value = (statement.get("mainsnak") or {}).get("datavalue") or {}
            if (
                value.get("type") == "wikibase-entityid"
                and value["value"].get("entity-type", "item") == "item"
            ):
                k = len(properties)
                value["value"] = {"entity-type": "item", "numeric-id": f"@@N{k}@@", "id": f"@@O{k}@@"}
                properties.append(prop)
            if isinstance(statement.get("id"), str) and "$" in statement["id"]:
                statement["id"] = "@@S@@$" + statement["id"].split("$", 1)[1]
    entity["id"] = "@@S@@"
    text = json.dumps(entity, ensure_ascii=False, separators=(",", ":"))
    segments, slots, position = [], [], 0
    for match in _SLOT.finditer(text):
        segments.append(text[position : match.start()])
        slots.append("S" if match[0] == "@@S@@" else ("N" if match[1] else "O") + (match[1] or match[2]))
        position = match.end()
    segments.append(text[position:])
    return Template(tuple(segments), tuple(slots), len(properties), tuple(properties))


@functools.cache
def templates() -> tuple[list[Template], list[str]]:
    """The real items as templates, and the real property entities as JSON lines."""
    items: list[Template] = []
    properties: list[str] = []
    seen: set[str] = set()
    for path in _template_files():
        with _open(path) as handle:
            for line in handle:
                line = line.strip().rstrip(",")
                if not line.startswith("{"):
                    continue
                entity = json.loads(line)
                if entity.get("id") in seen:
                    continue
                seen.add(entity.get("id"))
                if entity.get("type") == "property":
                    properties.append(json.dumps(entity, ensure_ascii=False, separators=(",", ":")))
                elif entity.get("type") == "item" and entity.get("claims"):
                    items.append(_slotted(entity))
    return items, properties


@functools.cache
def _weights() -> list[float]:
    """Cumulative template weights, each ∝ its size^-½ (see :data:`SIZE_EXPONENT`)."""
    items, _ = templates()
    return list(itertools.accumulate(sum(map(len, t.segments)) ** SIZE_EXPONENT for t in items))


def _plan(i: int, n: int, seed: int) -> tuple[Template, list[int]]:
    """Entity ``Q<i>``'s template and the numbers of its statements' objects."""
    items, _ = templates()
    rng = random.Random(seed * 1_000_003 + i)
    template = rng.choices(items, cum_weights=_weights())[0]
    return template, [1 + int(n * rng.random() ** SKEW) for _ in range(template.objects)]


def entity_line(i: int, n: int, seed: int) -> str:
    template, objects = _plan(i, n, seed)
    parts = [template.segments[0]]
    for slot, segment in zip(template.slots, template.segments[1:], strict=True):
        if slot == "S":
            parts.append(f"Q{i}")
        elif slot[0] == "O":
            parts.append(f"Q{objects[int(slot[1:])]}")
        else:
            parts.append(str(objects[int(slot[1:])]))
        parts.append(segment)
    return "".join(parts)


def generated_edges(n: int, seed: int = 0) -> Iterator[tuple[str, str, str, int]]:
    """``(subject, property, object, row)`` of every entity-valued statement of the dump of ``n`` entities
    (what :func:`write_dump` writes, without writing it)."""
    row = 0
    for i in range(1, n + 1):
        template, objects = _plan(i, n, seed)
        for prop, number in zip(template.properties, objects, strict=True):
            yield f"Q{i}", prop, f"Q{number}", row
            row += 1


def generated_edge_batches(n: int, seed: int = 0, batch: int = 1_000_000) -> Iterator[pa.Table]:
    """:func:`generated_edges` in tables of ``batch`` statements, as :func:`assets.wikidata.write_graph`
    reads them."""
    from assets.wikidata import edge_table

    pending: list[tuple[str, str, str, int]] = []
    for edge in generated_edges(n, seed):
        pending.append(edge)
        if len(pending) >= batch:
            yield edge_table(pending)
            pending = []
    if pending:
        yield edge_table(pending)


def _json_pieces(n: int, seed: int, properties: list[str], sizes: list[int]) -> Iterator[bytes]:
    """The dump's JSON (``[``, one entity a line ending in ``,`` but the last, ``]``) in pieces of about
    :data:`STREAM_BYTES`; the bytes of each piece are appended to ``sizes``."""
    lines = itertools.chain(properties, (entity_line(i, n, seed) for i in range(1, n + 1)))
    last = len(properties) + n - 1
    pending, size = [b"[\n"], 2
    for number, line in enumerate(lines):
        data = (line + (",\n" if number < last else "\n")).encode()
        pending.append(data)
        size += len(data)
        if number % 100_000 == 0 and number:
            log(f"wikidata dump n={n:,}: {number:,} entities")
        if size >= STREAM_BYTES:
            sizes.append(size)
            yield b"".join(pending)
            pending, size = [], 0
    pending.append(b"]\n")
    sizes.append(size + 2)
    yield b"".join(pending)


def _compress_stream(data: bytes) -> bytes:
    return bz2.compress(data, 9)


def write_dump(n: int, seed: int = 0, out: Path | None = None, threads: int = 2) -> dict:
    """Write the dump of ``n`` entities (skipped when ``stats.json`` says it is there); its stats."""
    folder = out or WORK_DIR / "wikidata" / f"n{n}-s{seed}"
    path = folder / f"wikidata-{DUMP_DATE}-all.json.bz2"
    stats_file = folder / "stats.json"
    if stats_file.is_file() and path.is_file():
        return json.loads(stats_file.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    _, properties = templates()
    started = time.perf_counter()
    sizes: list[int] = []
    workers = max(1, threads)
    with open(path.with_suffix(".tmp"), "wb") as sink, ProcessPoolExecutor(workers) as pool:
        in_flight: collections.deque = collections.deque()
        for piece in _json_pieces(n, seed, properties, sizes):
            in_flight.append(pool.submit(_compress_stream, piece))
            if len(in_flight) > 2 * workers:  # bounded: at most 2 pieces per worker held
                sink.write(in_flight.popleft().result())
        while in_flight:
            sink.write(in_flight.popleft().result())
    path.with_suffix(".tmp").replace(path)
    stats = {
        "entities": n + len(properties),
        "items": n,
        "properties": len(properties),
        "json_bytes": sum(sizes),
        "bz2_bytes": path.stat().st_size,
        "seed": seed,
        "skew": SKEW,
        "templates": len(templates()[0]),
        "seconds": round(time.perf_counter() - started, 1),
        "file": str(path),
    }
    stats_file.write_text(json.dumps(stats, indent=2) + "\n")
    return stats
