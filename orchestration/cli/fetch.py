"""``kiltpipe fetch``: a Wikimedia dump run fetched into the landing folder, resumed and verified."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assets import params
from assets.disk_space import exception_disk_full_line
from orchestration.cli.arguments import positive_int
from orchestration.cli.common import EXIT_ERROR, EXIT_NOT_FOUND, Verb, emit, fail

__all__ = ["VERBS", "cmd_fetch"]


def _tables(given: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """``--tables``: comma-separated names, ``none``, or the params' default when not given."""
    from assets.wikipedia.fetch import TABLES

    if given is None:
        return default
    names = tuple(t.strip() for t in given.split(",") if t.strip() and t.strip() != "none")
    unknown = [t for t in names if t not in TABLES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"--tables: unknown table {unknown[0]!r} (choose from {', '.join(TABLES)})"
        )
    return names


def _fetch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wiki", help="the wiki's database name, e.g. enwiki (or --wikidata)")
    parser.add_argument(
        "--wikidata",
        action="store_true",
        help="fetch Wikidata's entity dump run (wikidatawiki/entities/) into <landing>/wikidata/ instead; "
        "wikidata.files: [landing] reads the newest one fetched",
    )
    parser.add_argument(
        "--compression", choices=["bz2", "gz"], default="bz2", help="--wikidata: which file of the run"
    )
    parser.add_argument("--date", default="latest", help="YYYYMMDD, or latest (the newest ready run)")
    parser.add_argument(
        "--source",
        action="append",
        help="a dump site or mirror, tried before those of snapshots.releases.sources (repeatable)",
    )
    parser.add_argument(
        "--form",
        choices=["multistream", "parts", "enterprise-html"],
        help="the run's XML in one multistream file or its parts, or its Enterprise HTML dump (no SQL "
        "tables: the records carry QIDs and redirects); default: snapshots.releases.form",
    )
    parser.add_argument(
        "--tables", help="comma-separated SQL tables fetched too (page_props,redirect), or none"
    )
    parser.add_argument("--out", help="the landing folder (default: snapshots.landing_dir)")
    parser.add_argument("--connections", type=positive_int, help="connections per host (default 2)")
    parser.add_argument("--rate-limit", type=positive_int, help="bytes per second over all files")
    parser.add_argument("--contact", help="an e-mail address or URL sent in the User-Agent")
    parser.add_argument("--quiet", action="store_true", help="no progress")


def cmd_fetch(args: argparse.Namespace) -> int:
    from assets.wikipedia.fetch import (
        ENTITY_WIKI,
        Fetcher,
        FetchError,
        FetchSettings,
        ReleaseUnavailable,
        find_entity_release,
        find_wiki_release,
    )

    section = params.load_params().snapshots.releases.replace(
        connections_per_host=args.connections, rate_limit=args.rate_limit, contact=args.contact
    )
    sources = list(dict.fromkeys([*(args.source or []), *section.sources]))
    landing = Path(args.out) if args.out else params.landing_dir()
    fetch_limits = params.load_params().limits.fetch
    fetcher = Fetcher(FetchSettings.from_params(section, fetch_limits))
    try:
        tables = _tables(args.tables, section.tables)
    except argparse.ArgumentTypeError as error:
        return fail(str(error), EXIT_ERROR)
    if bool(args.wiki) == bool(args.wikidata):
        return fail("name a wiki (--wiki enwiki) or --wikidata, one of them", EXIT_ERROR)
    try:
        if args.wikidata:
            release = find_entity_release(
                sources, fetcher.read_text, date=args.date, compression=args.compression
            )
            landing = landing / ENTITY_WIKI
        else:
            release = find_wiki_release(
                args.wiki,
                sources,
                fetcher.read_text,
                fetcher.read_json,
                date=args.date,
                form=args.form or section.form,
                tables=tables,
                limits=fetch_limits,
            )
        landing.mkdir(parents=True, exist_ok=True)
        report = fetcher.fetch(
            release,
            landing,
            progress=not args.quiet and sys.stderr.isatty(),
            on_progress=None if args.quiet else lambda line: print(f"kiltpipe: {line}", file=sys.stderr),
        )
    except ReleaseUnavailable as error:
        return fail(str(error), EXIT_NOT_FOUND)
    except FetchError as error:
        kept = " (run the same command again: the bytes fetched so far are kept)" if error.resumable else ""
        return fail(f"{error}{kept}", EXIT_ERROR)
    except OSError as error:
        full = exception_disk_full_line(error, landing)
        return fail(full or str(error), EXIT_ERROR)
    emit(report.to_dict())
    return 0


VERBS = (
    Verb(
        "fetch",
        "Fetch a Wikimedia dump run (or Wikidata's entity dump, --wikidata) into the landing folder: the "
        "newest run whose jobs are done on the first source that has it, every file resumed after a drop "
        "and verified before it lands.",
        cmd_fetch,
        _fetch_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
