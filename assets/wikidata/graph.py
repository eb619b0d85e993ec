"""Shortest paths between Wikidata entities through their statements, in either direction.

The statements between two entities are built once per snapshot into a compressed adjacency
(:func:`write_graph`, ``<snapshot>/wikidata/graph/``): the entities as sorted integer codes (``Q42`` ->
84, ``P31`` -> 63: ``2n`` for items, ``2n+1`` for properties), and per entity the slice of its edges
(``indptr``), each edge's other end, property, statement row and direction: every statement is stored
both ways, so a search walks it forward (subject to object) and back. Numpy arrays, memory-mapped when
opened: a graph of 1M entities opens in milliseconds and a search touches only the slices it walks.

:class:`PathFinder` finds every shortest path between two entities of at most ``max_hops`` statements
(bidirectional breadth-first search, one whole level at a time in numpy, the smaller side first), with an
optional set of properties to walk. A search is bounded: the hops by ``limits.wikidata.max_hops``, the
entities and edges it may touch by ``max_visited`` (a refusal, not a slow answer), the paths it returns by
``max_paths`` (the rest counted).

Pure module: no Dagster import.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assets.files import write_bytes_atomic
from assets.limits import DEFAULT_HOPS, LimitExceeded, WikidataLimits
from assets.wikidata.values import ID_DIGITS, is_entity_id

__all__ = [
    "KbPath",
    "PathFinder",
    "PathSearch",
    "UnknownEntity",
    "edge_table",
    "entity_code",
    "entity_id",
    "write_graph",
]

ARRAYS = ("nodes", "indptr", "targets", "properties", "rows", "forward")


class UnknownEntity(KeyError):
    """An entity id the graph does not hold (no statement names it)."""

    def __str__(self) -> str:
        return str(self.args[0])


def entity_code(entity: str) -> int | None:
    """``Q42`` -> 84, ``P31`` -> 63; None for what is not an item or property id."""
    if not is_entity_id(entity, "QP"):
        return None
    return int(entity[1:]) * 2 + (entity[0] == "P")


def entity_id(code: int) -> str:
    return f"{'P' if code % 2 else 'Q'}{code // 2}"


def _save(folder: Path, name: str, array: np.ndarray) -> None:
    from io import BytesIO

    buffer = BytesIO()
    np.save(buffer, array, allow_pickle=False)
    write_bytes_atomic(folder / f"{name}.npy", buffer.getvalue())


def _codes(ids: pa.Array) -> np.ndarray:
    """:func:`entity_code` of an array of ids that are all ``Q<n>`` or ``P<n>``."""
    numbers = pc.cast(pc.utf8_slice_codeunits(ids, 1), pa.int64()).to_numpy(zero_copy_only=False)
    return numbers * 2 + pc.starts_with(ids, "P").to_numpy(zero_copy_only=False)


def _is_entity(ids: pa.Array) -> pa.Array:
    """:func:`~assets.wikidata.values.is_entity_id` (items and properties) of each id: what fits the
    graph's int64 codes; a longer number is no edge of the graph (its statement stays in the table)."""
    return pc.fill_null(pc.match_substring_regex(ids, rf"^[QP][1-9][0-9]{{0,{ID_DIGITS - 1}}}$"), False)


def write_graph(folder: Path, edges: Iterable[pa.RecordBatch | pa.Table]) -> int:
    """Write the adjacency of ``edges`` (batches of ``subject``, ``property``, ``object`` and ``row``, the
    statement's row in the statements table) to ``folder``; returns the statements stored (those between
    two item/property ids). Memory: 28 bytes per statement stored while it sorts them (the ids are read
    as integer codes, never as Python objects)."""
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[tuple[np.ndarray, ...]] = []
    for batch in edges:
        keep = pc.and_(
            pc.and_(_is_entity(batch.column("subject")), _is_entity(batch.column("object"))),
            _is_entity(batch.column("property")),
        )
        kept = batch.filter(keep)
        parts.append(
            (
                _codes(kept.column("subject")),
                _codes(kept.column("object")),
                (_codes(kept.column("property")) // 2).astype(np.int32),
                kept.column("row").to_numpy(zero_copy_only=False).astype(np.int64),
            )
        )
    subjects, objects, props, rows = (
        np.concatenate([part[i] for part in parts]) if parts else np.zeros(0, np.int64) for i in range(4)
    )
    props = props.astype(np.int32)
    nodes = np.unique(np.concatenate([subjects, objects]))
    s_index = np.searchsorted(nodes, subjects)
    o_index = np.searchsorted(nodes, objects)
    del subjects, objects
    sources = np.concatenate([s_index, o_index])
    order = np.argsort(sources, kind="stable")
    indptr = np.zeros(len(nodes) + 1, np.int64)
    np.cumsum(np.bincount(sources, minlength=len(nodes)), out=indptr[1:])
    del sources
    _save(folder, "nodes", nodes)
    _save(folder, "indptr", indptr)
    _save(folder, "targets", np.concatenate([o_index, s_index])[order].astype(np.int32))
    _save(folder, "properties", np.concatenate([props, props])[order])
    _save(folder, "rows", np.concatenate([rows, rows])[order])
    forward = np.concatenate([np.ones(len(props), np.int8), np.zeros(len(props), np.int8)])
    _save(folder, "forward", forward[order])
    return len(props)


def edge_table(edges: Iterable[tuple[str, str, str, int]]) -> pa.Table:
    """``(subject, property, object, row)`` tuples as the one batch :func:`write_graph` reads."""
    columns = list(zip(*edges, strict=True)) or [[], [], [], []]
    return pa.table(
        {
            "subject": pa.array(columns[0], pa.string()),
            "property": pa.array(columns[1], pa.string()),
            "object": pa.array(columns[2], pa.string()),
            "row": pa.array(columns[3], pa.int64()),
        }
    )


@dataclass(frozen=True, slots=True)
class KbPath:
    """One path: the entities from source to target and, between each two, the statement walked
    (its row in the statements table, and whether it was walked from subject to object)."""

    entities: tuple[str, ...]
    properties: tuple[str, ...]
    rows: tuple[int, ...]
    forward: tuple[bool, ...]

    @property
    def hops(self) -> int:
        return len(self.rows)


@dataclass(slots=True)
class PathSearch:
    """The answer of one search: its paths (every shortest one, up to ``max_paths``)."""

    source: str
    target: str
    max_hops: int
    paths: list[KbPath] = field(default_factory=list)
    hops: int | None = None
    """The length of the shortest paths; None: none within ``max_hops``."""
    more_paths: int = 0
    """Shortest paths found beyond ``limits.wikidata.max_paths`` (not returned)."""
    visited: int = 0


class _Side:
    """One side of the bidirectional search: the level it reached, its frontier, and per level the edges
    that reached each new entity (sorted by that entity: ``children``, ``parents``, ``edges``)."""

    def __init__(self, number: int, start: int) -> None:
        self.number, self.start = number, start
        self.frontier = np.array([start], np.int64)
        self.level = 0
        self.levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def parents_of(self, node: int, depth: int) -> list[tuple[int, int]]:
        children, parents, edges = self.levels[depth - 1]
        low, high = np.searchsorted(children, [node, node + 1])
        return list(zip(parents[low:high].tolist(), edges[low:high].tolist(), strict=True))


class PathFinder:
    """Shortest paths over the graph in ``folder`` (written by :func:`write_graph`)."""

    def __init__(self, folder: Path, limits: WikidataLimits | None = None) -> None:
        self.folder = Path(folder)
        missing = [name for name in ARRAYS if not (self.folder / f"{name}.npy").is_file()]
        if missing:
            raise FileNotFoundError(
                f"{self.folder} holds no KB graph ({', '.join(missing)}.npy missing); build the snapshot's "
                "wikidata_statements first"
            )
        arrays = {name: np.load(self.folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS}
        self.nodes, self.indptr, self.targets = arrays["nodes"], arrays["indptr"], arrays["targets"]
        self.properties, self.rows, self.forward = arrays["properties"], arrays["rows"], arrays["forward"]
        self.limits = limits or WikidataLimits()
        self.lock = threading.Lock()  # one search at a time: it marks the entities it reaches in place
        self._seen: np.ndarray | None = None
        self._depth: np.ndarray = np.zeros((2, 0), np.int8)
        self._stamp = 0

    @property
    def entities(self) -> int:
        return len(self.nodes)

    @property
    def statements(self) -> int:
        return len(self.targets) // 2

    def index_of(self, entity: str) -> int:
        code = entity_code(entity)
        if code is not None:
            at = int(np.searchsorted(self.nodes, code))
            if at < len(self.nodes) and int(self.nodes[at]) == code:
                return at
        raise UnknownEntity(f"{entity[:80]!r} is not in the KB graph (no kept statement names it)")

    def degree(self, entity: str) -> int:
        at = self.index_of(entity)
        return int(self.indptr[at + 1] - self.indptr[at])

    def shortest_paths(
        self,
        source: str,
        target: str,
        max_hops: int = DEFAULT_HOPS,
        properties: Iterable[str] | None = None,
    ) -> PathSearch:
        """Every shortest path from ``source`` to ``target`` of at most ``max_hops`` statements (walking
        only ``properties`` when given: ``P36`` ...)."""
        if max_hops < 1 or max_hops > self.limits.max_hops:
            raise LimitExceeded(
                f"max_hops {max_hops} is outside 1..{self.limits.max_hops}", "wikidata.max_hops"
            )
        allowed = None
        if properties:
            codes = [entity_code(p) for p in properties]
            if any(code is None or code % 2 == 0 for code in codes):
                raise ValueError(f"properties must be property ids (P31 ...), got {list(properties)}")
            allowed = np.array(sorted(code // 2 for code in codes if code is not None), np.int32)
        start, goal = self.index_of(source), self.index_of(target)
        search = PathSearch(source, target, max_hops)
        if start == goal:
            search.hops = 0
            search.paths = [KbPath((source,), (), (), ())]
            return search
        with self.lock:
            return self._search(search, start, goal, max_hops, allowed)

    def _search(
        self, search: PathSearch, start: int, goal: int, max_hops: int, allowed: np.ndarray | None
    ) -> PathSearch:
        if self._seen is None:
            self._seen = np.zeros((2, len(self.nodes)), np.int32)
            self._depth = np.zeros((2, len(self.nodes)), np.int8)
        self._stamp += 1
        sides = (_Side(0, start), _Side(1, goal))
        for side in sides:
            self._seen[side.number, side.start] = self._stamp
            self._depth[side.number, side.start] = 0
        budget = [self.limits.max_visited]
        while sides[0].level + sides[1].level < max_hops:
            side, other = sorted(sides, key=lambda s: (len(s.frontier), s.number))
            if not len(side.frontier):
                break
            meeting = self._expand(side, other, allowed, budget)
            if len(meeting):
                totals = self._depth[side.number, meeting].astype(int) + self._depth[other.number, meeting]
                best = int(totals.min())
                search.hops = best
                self._collect(search, sides, sorted(meeting[totals == best].tolist()))
                break
        search.visited = self.limits.max_visited - budget[0]
        return search

    def _expand(self, side: _Side, other: _Side, allowed: np.ndarray | None, budget: list[int]) -> np.ndarray:
        """Walk one level from ``side``'s frontier; the new entities the other side has reached."""
        frontier = side.frontier
        starts, stops = self.indptr[frontier], self.indptr[frontier + 1]
        counts = stops - starts
        total = int(counts.sum())
        budget[0] -= total + len(frontier)
        if budget[0] < 0:
            raise LimitExceeded(
                f"a path search from {len(frontier):,} entities would walk {total:,} more edges",
                "wikidata.max_visited",
            )
        edges = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(total)
        sources = np.repeat(frontier, counts)
        if allowed is not None:
            keep = np.isin(self.properties[edges], allowed)
            edges, sources = edges[keep], sources[keep]
        neighbours = self.targets[edges].astype(np.int64)
        fresh = self._seen[side.number, neighbours] != self._stamp
        edges, sources, neighbours = edges[fresh], sources[fresh], neighbours[fresh]
        order = np.argsort(neighbours, kind="stable")
        side.levels.append((neighbours[order], sources[order], edges[order]))
        side.level += 1
        new = np.unique(neighbours)
        self._seen[side.number, new] = self._stamp
        self._depth[side.number, new] = side.level
        side.frontier = new
        return new[self._seen[other.number, new] == self._stamp]

    def _walks(self, side: _Side, node: int, limit: int) -> list[list[tuple[int, int]]]:
        """The walks from ``side``'s start to ``node``: lists of ``(entity, edge into it)``, start first."""
        depth = int(self._depth[side.number, node])
        if depth == 0:
            return [[]]
        walks: list[list[tuple[int, int]]] = []
        for parent, edge in side.parents_of(node, depth):
            for walk in self._walks(side, parent, limit - len(walks)):
                walks.append([*walk, (node, edge)])
                if len(walks) >= limit:
                    return walks
        return walks

    def _collect(self, search: PathSearch, sides: tuple[_Side, _Side], meets: list[int]) -> None:
        cap = self.limits.max_paths
        source_side, target_side = sides
        found: list[KbPath] = []
        for meet in meets:
            for head in self._walks(source_side, meet, cap + 1):
                for tail in self._walks(target_side, meet, cap + 1):
                    if len(found) > cap:
                        search.more_paths += 1
                        continue
                    found.append(self._path(source_side.start, head, target_side.start, tail))
        found.sort(key=lambda p: (p.entities, p.properties, p.rows))
        search.more_paths += max(0, len(found) - cap)
        search.paths = found[:cap]

    def _path(
        self, start: int, head: list[tuple[int, int]], goal: int, tail: list[tuple[int, int]]
    ) -> KbPath:
        """The path ``start`` -> ``head`` -> the meeting entity -> ``tail`` reversed -> ``goal``."""
        nodes = [start, *(node for node, _ in head)]
        edges = [edge for _, edge in head]
        forward = [bool(self.forward[edge]) for edge in edges]
        # the target side walked from ``goal`` to the meeting entity: back along it, each edge reverses
        for index in range(len(tail) - 1, -1, -1):
            edges.append(tail[index][1])
            forward.append(not bool(self.forward[tail[index][1]]))
            nodes.append(tail[index - 1][0] if index else goal)
        return KbPath(
            tuple(entity_id(int(self.nodes[n])) for n in nodes),
            tuple(f"P{int(self.properties[e])}" for e in edges),
            tuple(int(self.rows[e]) for e in edges),
            tuple(forward),
        )
