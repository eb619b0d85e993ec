"""The lookup verbs of ``kiltpipe``: a page (by title, id or Wikidata QID), a page's QID, a passage, a
span, a record's provenance and the records citing a page, all through the snapshot's provenance store."""

from __future__ import annotations

import argparse

from orchestration.cli.common import EXIT_NOT_FOUND, data_dir_of, emit, fail

__all__ = ["cmd_cites", "cmd_page", "cmd_passage", "cmd_provenance", "cmd_qid", "cmd_span"]


def cmd_page(args: argparse.Namespace) -> int:
    from assets.datasets.queries import open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        match = store.page(args.title_or_id, by=args.by)
        snapshot_id = store.paths.snapshot_id
    if match is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.title_or_id!r}", EXIT_NOT_FOUND)
    record = match.record
    if match.redirected_from:
        record = {**record, "redirected_from": match.redirected_from}
    emit(record)
    return 0


def cmd_passage(args: argparse.Namespace) -> int:
    from assets.datasets.queries import open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        passage = store.passage(args.passage_id)
        snapshot_id = store.paths.snapshot_id
    if passage is None:
        return fail(f"passage not found in snapshot {snapshot_id}: {args.passage_id!r}", EXIT_NOT_FOUND)
    emit(passage)
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from assets.datasets.queries import open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        match = store.page(args.title_or_id)
        passages = store.structured_passages(match.record["wikipedia_id"]) if match else []
        snapshot_id, built = store.paths.snapshot_id, store.has_structured
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


def cmd_span(args: argparse.Namespace) -> int:
    from assets.datasets.queries import open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        span = store.span(
            args.wikipedia_id, args.start_paragraph, args.start_char, args.end_paragraph, args.end_char
        )
        snapshot_id = store.paths.snapshot_id
    if span is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.wikipedia_id!r}", EXIT_NOT_FOUND)
    emit(span)
    return 0


def cmd_provenance(args: argparse.Namespace) -> int:
    from assets.datasets.queries import DatasetQueries, open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        found = DatasetQueries(store).provenance(args.record_id, dataset=args.dataset)
    if found is None:
        return fail(f"record not found: {args.record_id!r}", EXIT_NOT_FOUND)
    emit(found)
    return 0


def cmd_cites(args: argparse.Namespace) -> int:
    from assets.datasets.queries import DatasetQueries, open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        found = DatasetQueries(store).cites(args.title_or_id)
    if found is None:
        return fail(f"page not found: {args.title_or_id!r}", EXIT_NOT_FOUND)
    emit(found)
    return 0


def cmd_qid(args: argparse.Namespace) -> int:
    from assets.datasets.queries import open_store

    with open_store(data_dir_of(args), args.snapshot) as store:
        found = store.qid(args.title_or_id, by=args.by)
        snapshot_id = store.paths.snapshot_id
        coverage = store.qid_coverage() if found is not None and found["wikidata_id"] is None else None
    if found is None:
        return fail(f"page not found in snapshot {snapshot_id}: {args.title_or_id!r}", EXIT_NOT_FOUND)
    if coverage is not None and coverage["pages_with_qid"] == 0:
        found["note"] = f"snapshot {snapshot_id} was built without a page_props table: no page has a QID"
    emit(found)
    return 0 if found["wikidata_id"] else EXIT_NOT_FOUND
