"""Shortest KB paths over the real statements of tests/data's 788 entities: the same answers as networkx's
``all_shortest_paths`` on the same graph, real multi-hop paths (Angola and Algeria through the
organisations both are members of), and bounded searches (self-loops, cycles, an unknown QID, too many
hops, a hub that would be walked whole)."""

from __future__ import annotations

import time
from pathlib import Path

import networkx as nx
import pytest

from assets.limits import LimitExceeded, WikidataLimits
from assets.wikidata import (
    Entity,
    PathFinder,
    UnknownEntity,
    Value,
    edge_table,
    embedded_entity_files,
    iter_entities,
    mapping,
    snak_value,
    write_graph,
)


def _edges() -> list[tuple[str, str, str, int]]:
    """``(subject, property, object, row)`` of every entity-valued statement of the real entities."""
    edges = []
    seen: set[str] = set()
    for entity in (e for path in embedded_entity_files() for e in iter_entities(path, Entity)):
        if entity.id in seen:
            continue  # an entity in two files: the first one read, as the build does
        seen.add(entity.id)
        for statements in mapping(entity.claims).values():
            for statement in statements:
                value = snak_value(statement.mainsnak)
                if isinstance(value, Value) and value.kind == "entity" and statement.rank != "deprecated":
                    edges.append((entity.id, statement.mainsnak.property, value.value, len(edges)))
    return edges


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str, str, int]]]:
    folder = tmp_path_factory.mktemp("graph")
    edges = _edges()
    between_items = [e for e in edges if e[0][0] in "QP" and e[2][0] in "QP"]  # lexemes: not in the graph
    assert write_graph(folder, [edge_table(edges)]) == len(between_items)
    return folder, edges


def _networkx(edges: list[tuple[str, str, str, int]]) -> nx.Graph:
    graph = nx.Graph()
    graph.add_edges_from((s, o) for s, _, o, _ in edges if s != o and s[0] in "QP" and o[0] in "QP")
    return graph


def test_the_same_answers_as_networkx(graph) -> None:
    folder, edges = graph
    finder = PathFinder(folder)
    reference = _networkx(edges)
    pairs = [
        ("Q916", "Q262"),
        ("Q30", "Q916"),
        ("Q42", "Q1"),
        ("Q31", "Q183"),
        ("Q64", "Q84"),
        ("Q22", "Q145"),
    ]
    pairs = [(s, t) for s, t in pairs if s in reference and t in reference]  # the entities the files name
    assert len(pairs) >= 3 and ("Q916", "Q262") in pairs
    for source, target in pairs:
        found = finder.shortest_paths(source, target, max_hops=4)
        try:
            expected = {tuple(p) for p in nx.all_shortest_paths(reference, source, target)}
        except nx.NetworkXNoPath:
            expected = set()
        expected = {p for p in expected if len(p) - 1 <= 4}
        assert {p.entities for p in found.paths} == expected, (source, target)
        assert found.hops == (len(next(iter(expected))) - 1 if expected else None)


def test_angola_and_algeria_through_what_both_are_members_of(graph) -> None:
    folder, edges = graph
    found = PathFinder(folder).shortest_paths("Q916", "Q262", max_hops=3)
    assert found.hops == 2
    by_row = {row: (s, p, o) for s, p, o, row in edges}
    african_union = [path for path in found.paths if path.entities == ("Q916", "Q7159", "Q262")]
    assert african_union, "Angola and Algeria are both members (P463) of the African Union (Q7159)"
    for path in african_union:
        assert [by_row[row] for row in path.rows] == [("Q916", "P463", "Q7159"), ("Q262", "P463", "Q7159")]
        assert path.forward == (True, False)  # walked Angola -> AU, then AU <- Algeria
    only_members = PathFinder(folder).shortest_paths("Q916", "Q262", 3, properties=["P463"])
    assert only_members.paths and all(set(p.properties) == {"P463"} for p in only_members.paths)


def test_self_loops_cycles_and_unknown_entities(tmp_path: Path, graph) -> None:
    _, edges = graph
    looped = [*edges, ("Q916", "P47", "Q916", len(edges)), ("Q262", "P47", "Q916", len(edges) + 1)]
    write_graph(tmp_path, [edge_table(looped)])
    finder = PathFinder(tmp_path)
    assert finder.shortest_paths("Q916", "Q916").hops == 0
    found = finder.shortest_paths("Q916", "Q262")
    assert found.hops == 1 and all(len(set(p.entities)) == len(p.entities) for p in found.paths)
    with pytest.raises(UnknownEntity, match="Q999999999"):
        finder.shortest_paths("Q916", "Q999999999")
    with pytest.raises(LimitExceeded, match=r"wikidata\.max_hops"):
        finder.shortest_paths("Q916", "Q262", max_hops=10)
    with pytest.raises(ValueError, match="property ids"):
        finder.shortest_paths("Q916", "Q262", properties=["Q5"])


def test_ids_the_graph_cannot_hold_are_no_edges(tmp_path: Path, graph) -> None:
    """Real edges with ids beside them that would overflow the graph's int64 codes (once ``ArrowInvalid``
    and no KB): a 19-digit object, a 500-digit property, a property that is no id. They are no edges; the
    real ones are all there, and a search naming the long id is an unknown entity, not a crash."""
    _, edges = graph
    n = len(edges)
    hostile = [
        ("Q916", "P463", "Q" + "9" * 19, n),
        ("Q916", "P" + "1" * 500, "Q262", n + 1),
        ("Q916", "not-a-property", "Q262", n + 2),
    ]
    between_items = [e for e in edges if e[0][0] in "QP" and e[2][0] in "QP"]
    assert write_graph(tmp_path, [edge_table([*edges, *hostile])]) == len(between_items)
    with pytest.raises(UnknownEntity):
        PathFinder(tmp_path).shortest_paths("Q916", "Q" + "9" * 19)


def test_a_dense_graph_is_refused_in_bounded_time(tmp_path: Path, graph) -> None:
    """Every real entity joined to every other through one hub: a search that would walk the whole graph
    stops at ``max_visited`` with a refusal naming it, quickly and in bounded memory."""
    _, edges = graph
    ids = sorted({e for s, _, o, _ in edges for e in (s, o) if e.startswith("Q")})
    star = [(qid, "P31", "Q5", row) for row, qid in enumerate(ids)]
    write_graph(tmp_path, [edge_table(star)])
    finder = PathFinder(tmp_path, WikidataLimits(max_visited=len(ids) // 2))
    started = time.perf_counter()
    with pytest.raises(LimitExceeded, match=r"wikidata\.max_visited"):
        finder.shortest_paths(ids[0], ids[1], max_hops=3)
    assert time.perf_counter() - started < 1
    capped = PathFinder(tmp_path, WikidataLimits(max_paths=3))
    assert capped.shortest_paths(ids[0], ids[1]).hops == 2
