"""The lookup verbs of ``kiltpipe``: a page (by title, id or Wikidata QID), a page's QID, a passage, a
span, a record's provenance and the records citing a page, all through the snapshot's provenance store
(:class:`~assets.reading.Snapshot`)."""

from __future__ import annotations

import argparse
import json

from assets.input_forms import recorded_route
from assets.provenance_store import STRUCTURED_PASSAGES
from orchestration.cli.arguments import non_negative_int
from orchestration.cli.common import EXIT_NOT_FOUND, Verb, add_snapshot, emit, fail, open_snapshot

__all__ = ["VERBS", "cmd_cites", "cmd_page", "cmd_passage", "cmd_provenance", "cmd_qid", "cmd_span"]


def _page_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("title_or_id")
    add_snapshot(parser)
    parser.add_argument(
        "--by",
        choices=["auto", "id", "qid", "title"],
        default="auto",
        help="treat the argument as a page id, a Wikidata QID, a title, or guess (digits = id, Q42 = QID, "
        "each falling back to a title)",
    )


def cmd_page(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        store = snapshot.store
        match = store.page(args.title_or_id, by=args.by)
        snapshot_id = store.paths.snapshot_id
        manifest = store.paths.manifest_file
    if match is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.title_or_id!r}", EXIT_NOT_FOUND)
    record = match.record
    if match.redirected_from:
        record = {**record, "redirected_from": match.redirected_from}
    # the form of the dump the snapshot's text came from: "xml" or "enterprise-html"
    route = recorded_route(json.loads(manifest.read_text(encoding="utf-8")))
    emit({**record, "route": route})
    return 0


def _passage_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "passage_id", help="e.g. 12-0 (wikipedia_id-ordinal), 303-t0.0 (a table's), 303-i0.0 (an infobox's)"
    )
    add_snapshot(parser)


def cmd_passage(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        store = snapshot.store
        passage = store.passage(args.passage_id)
        snapshot_id = store.paths.snapshot_id
    if passage is None:
        return fail(f"passage not found in snapshot {snapshot_id}: {args.passage_id!r}", EXIT_NOT_FOUND)
    emit(passage)
    return 0


def _tables_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("title_or_id")
    add_snapshot(parser)


def cmd_tables(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        store = snapshot.store
        match = store.page(args.title_or_id)
        wikipedia_id = match.record["wikipedia_id"] if match else None
        passages = store.passages_of_page(wikipedia_id, STRUCTURED_PASSAGES) if match else []
        snapshot_id, built = store.paths.snapshot_id, store.holds(STRUCTURED_PASSAGES)
    if match is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.title_or_id!r}", EXIT_NOT_FOUND)
    if not built:
        return fail(
            f"snapshot {snapshot_id} has no structured passages (passages.structured is false, or its "
            f"store predates them): `kiltpipe build --snapshot {snapshot_id} --select "
            '"key:structured_passages or key:provenance_store"`',
            EXIT_NOT_FOUND,
        )
    emit(passages)
    return 0


def _span_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wikipedia_id")
    parser.add_argument("start_paragraph", type=non_negative_int)
    parser.add_argument("start_char", type=non_negative_int)
    parser.add_argument("end_paragraph", type=non_negative_int)
    parser.add_argument("end_char", type=non_negative_int, help="exclusive, as in KILT provenance")
    add_snapshot(parser)


def cmd_span(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        store = snapshot.store
        span = store.span(
            args.wikipedia_id, args.start_paragraph, args.start_char, args.end_paragraph, args.end_char
        )
        snapshot_id = store.paths.snapshot_id
    if span is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.wikipedia_id!r}", EXIT_NOT_FOUND)
    emit(span)
    return 0


def _provenance_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("record_id")
    parser.add_argument("--dataset", help="dataset name when the id occurs in several datasets")
    add_snapshot(parser)


def cmd_provenance(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        found = snapshot.datasets.provenance(args.record_id, dataset=args.dataset)
    if found is None:
        return fail(f"record not found: {args.record_id!r}", EXIT_NOT_FOUND)
    emit(found)
    return 0


def _cites_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("title_or_id")
    add_snapshot(parser)


def cmd_cites(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        found = snapshot.datasets.cites(args.title_or_id)
    if found is None:
        return fail(f"page not found: {args.title_or_id!r}", EXIT_NOT_FOUND)
    emit(found)
    return 0


def _qid_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("title_or_id")
    add_snapshot(parser)
    parser.add_argument("--by", choices=["auto", "id", "title"], default="auto", help="as for `page`")


def cmd_qid(args: argparse.Namespace) -> int:
    with open_snapshot(args) as snapshot:
        store = snapshot.store
        found = store.qid(args.title_or_id, by=args.by)
        snapshot_id = store.paths.snapshot_id
        coverage = store.qid_coverage() if found is not None and found["wikidata_id"] is None else None
    if found is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.title_or_id!r}", EXIT_NOT_FOUND)
    if coverage is not None and coverage["pages_with_qid"] == 0:
        found["note"] = f"snapshot {snapshot_id} was built without a page_props table: no page has a QID"
    emit(found)
    return 0 if found["wikidata_id"] else EXIT_NOT_FOUND


VERBS = (
    Verb(
        "page",
        "Print the KILT page record of a title, page id or Wikidata QID (redirects followed).",
        cmd_page,
        _page_options,
    ),
    Verb(
        "qid",
        "Print the Wikidata QID of a page given by title or id (redirects followed).",
        cmd_qid,
        _qid_options,
    ),
    Verb(
        "passage",
        "Print a passage: text, title and its span coordinates.",
        cmd_passage,
        _passage_options,
    ),
    Verb(
        "tables",
        "Print a page's table and infobox passages, with their wikitext offsets.",
        cmd_tables,
        _tables_options,
    ),
    Verb(
        "span",
        "Print a span's text and the passages covering it (with covered fractions).",
        cmd_span,
        _span_options,
    ),
    Verb(
        "provenance",
        "Print a dataset record, its spans with text and covering passages.",
        cmd_provenance,
        _provenance_options,
    ),
    Verb(
        "cites",
        "List the dataset records whose provenance is on a page.",
        cmd_cites,
        _cites_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
