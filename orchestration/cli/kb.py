"""The knowledge-base verbs of ``kiltpipe``: an entity with its statements, its ``kb`` passages, the
shortest KB paths between two entities, and the entity mentions of a text, through the snapshot's
provenance store (:attr:`assets.reading.Snapshot.kb`)."""

from __future__ import annotations

import argparse

from assets.limits import DEFAULT_HOPS, LimitExceeded
from orchestration.cli.arguments import positive_int
from orchestration.cli.common import EXIT_NOT_FOUND, Verb, add_snapshot, emit, fail, open_snapshot

__all__ = ["VERBS", "cmd_entity", "cmd_facts", "cmd_kb_path", "cmd_link"]


def _key_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("entity", help="a QID (Q916), a page id, a page title or a label (Angola)")
    add_snapshot(parser)


def _shown(key: str) -> str:
    """A key as a message quotes it: at most 80 characters."""
    return repr(key) if len(key) <= 80 else f"{key[:80]!r}... ({len(key):,} characters)"


def cmd_entity(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        try:
            found = snapshot.kb.entity(args.entity)
        except LimitExceeded as error:
            return fail(str(error))
        snapshot_id = snapshot.snapshot_id
    if found is None:
        return fail(f"no entity {_shown(args.entity)} in the KB of snapshot {snapshot_id}", EXIT_NOT_FOUND)
    emit(found)
    return 0


def cmd_facts(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        try:
            entity, passages = snapshot.kb.facts(args.entity)
        except LimitExceeded as error:
            return fail(str(error))
        snapshot_id = snapshot.snapshot_id
    if entity is None:
        return fail(f"no entity {_shown(args.entity)} in the KB of snapshot {snapshot_id}", EXIT_NOT_FOUND)
    emit(
        {
            "id": entity["id"],
            "label": entity["label"] or entity["label_en"] or entity["sitelink"],
            "wikipedia_id": entity["wikipedia_id"],
            "passages": passages,
        }
    )
    return 0


def _path_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a QID, page id, title or label")
    parser.add_argument("target", help="a QID, page id, title or label")
    parser.add_argument(
        "--max-hops",
        type=positive_int,
        default=None,
        help=f"statements per path, at most (default {DEFAULT_HOPS}; limits.wikidata.max_hops bounds it)",
    )
    parser.add_argument(
        "--properties", nargs="+", metavar="PID", help="walk only these properties (P36 P17 ...)"
    )
    add_snapshot(parser)


def cmd_kb_path(args: argparse.Namespace) -> int:
    from assets.wikidata import UnknownEntity

    with open_snapshot(args) as snapshot:
        try:
            found = snapshot.kb.paths_between(args.source, args.target, args.max_hops, args.properties)
        except UnknownEntity as error:
            return fail(str(error), EXIT_NOT_FOUND)
        except (LimitExceeded, ValueError) as error:
            return fail(str(error))
    emit(found)
    return 0 if found["paths"] else EXIT_NOT_FOUND


def _link_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help="a question or any text (limits.wikidata.max_text_chars)")
    parser.add_argument("--candidates", type=positive_int, default=5, help="entities per mention")
    add_snapshot(parser)


def cmd_link(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        try:
            mentions = snapshot.kb.link(args.text, args.candidates)
        except LimitExceeded as error:
            return fail(str(error))
    emit({"text": args.text, "mentions": mentions})
    return 0


VERBS = (
    Verb(
        "entity",
        "Print a Wikidata entity of the snapshot's KB with its statements (values as text).",
        cmd_entity,
        _key_options,
    ),
    Verb("facts", "Print an entity's kb passages (its statements written as text).", cmd_facts, _key_options),
    Verb(
        "kb-path",
        "Print every shortest path of statements between two entities (either direction), as statement "
        "ids and as text.",
        cmd_kb_path,
        _path_options,
    ),
    Verb(
        "link",
        "Print the entity mentions of a text with their candidates (page, QID, p(entity | mention)).",
        cmd_link,
        _link_options,
    ),
)
