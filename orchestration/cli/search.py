"""``kiltpipe search`` (one query or a topics file) and ``kiltpipe serve`` (the search API of
:mod:`assets.reading.serving.server` over a snapshot's indices)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from assets import params
from assets.limits import LimitExceeded, check_query
from assets.storage import read_record, resolve_snapshot
from orchestration.cli.arguments import port, positive_int
from orchestration.cli.common import (
    Verb,
    add_indexes_and_collections,
    add_snapshot,
    data_dir_of,
    emit,
    fail,
    snapshot_for,
)

__all__ = ["ADMIN_TOKEN_ENV", "VERBS", "cmd_search", "cmd_serve"]


ADMIN_TOKEN_ENV = "KILT_ADMIN_TOKEN"


def _search_options(parser: argparse.ArgumentParser) -> None:
    from assets.indexes import DEFAULT_COLLECTION, collection_names, index_names

    parser.add_argument("query", nargs="?", help="the query text (or use --topics)")
    parser.add_argument("--index", choices=index_names(), default="bm25")
    parser.add_argument(
        "--collection",
        choices=collection_names(),
        default=DEFAULT_COLLECTION,
        help="text passages (default, KILT-comparable), structured ones (tables, infoboxes) or both",
    )
    parser.add_argument(
        "--k", type=positive_int, default=10, help="hits per query (default 10; at most limits.search.max_k)"
    )
    add_snapshot(parser)
    parser.add_argument("--topics", help="queries: TSV id<TAB>text, KILT JSONL (id, input) or DPR QA TSV")
    parser.add_argument(
        "--topics-format", choices=["tsv", "kilt", "dpr"], help="default: .jsonl = kilt, else tsv"
    )
    parser.add_argument("--output", help="where the batch results go")
    parser.add_argument(
        "--format",
        choices=["kilt", "trec"],
        default="kilt",
        help="kilt: one record per topic with ranked provenance; trec: qid Q0 docid rank score tag",
    )
    parser.add_argument("--threads", type=positive_int, help="BM25 search threads (default: params.yaml)")


def cmd_search(args: argparse.Namespace) -> int:
    from assets.indexes import searcher_key, write_kilt_output, write_trec_run
    from assets.topics import read_topics

    if (args.query is None) == (args.topics is None):
        return fail("give either a QUERY or --topics FILE")
    every = params.load_params().limits
    limits = every.search
    with snapshot_for(args) as snapshot:  # its retriever checks --k and the query against limits.search first
        retriever = snapshot.retriever
        key = searcher_key(args.index, args.collection)
        if args.query is not None:
            hits = retriever.search(args.index, args.query, args.k, collection=args.collection)
            _report_cuts(retriever.query_cuts(key, [args.query]))
            emit([hit.to_dict() for hit in hits])
            return 0
        if not args.output:
            return fail("--topics needs --output FILE (KILT JSONL or TREC run)")
        topics = read_topics(
            args.topics, args.topics_format, params.load_params().limits.input.max_line_bytes
        )
        for topic in topics:
            try:
                check_query(topic.text, limits)
            except LimitExceeded as error:
                return fail(f"{Path(args.topics).resolve()}: topic {topic.id}: {error}")
        retriever.open(key)
        _report_cuts(retriever.query_cuts(key, [t.text for t in topics]))
        started = time.perf_counter()
        ranked = retriever.batch_search(key, [t.text for t in topics], args.k, threads=args.threads)
        seconds = time.perf_counter() - started
        results = {topic.id: hits for topic, hits in zip(topics, ranked, strict=True)}
        if args.format == "trec":
            write_trec_run(results, args.output, tag=f"kilt-{key.replace('@', '-')}")
        else:
            write_kilt_output(topics, results, args.output, retriever.paths)
    emit(
        {
            "snapshot_id": retriever.paths.snapshot_id,
            "index": args.index,
            "collection": args.collection,
            "topics": len(topics),
            "k": args.k,
            "output": str(args.output),
            "format": args.format,
            "seconds": round(seconds, 3),
            "queries_per_second": round(len(topics) / seconds, 1) if seconds else None,
        }
    )
    return 0


def _report_cuts(cuts: list[dict[str, int] | None]) -> None:
    """One stderr line when the index cut queries to ``limits.search.max_query_terms`` terms."""
    cut = [c for c in cuts if c]
    if cut:
        most = max(c["of"] for c in cut)
        print(
            f"kiltpipe: {len(cut):,} quer{'y' if len(cut) == 1 else 'ies'} cut to "
            f"{max(c['terms'] for c in cut):,} distinct terms at most (of up to {most:,}; "
            "limits.search.max_query_terms)",
            file=sys.stderr,
        )


def _serve_options(parser: argparse.ArgumentParser) -> None:
    add_indexes_and_collections(
        parser,
        indexes="default: bm25 and dense, those indexes.build makes",
        collections="default: text, and the others where the snapshot has their indices",
    )
    add_snapshot(parser)
    parser.add_argument(
        "--host",
        help="address to bind (default limits.network.bind_host, 127.0.0.1: this machine; 0.0.0.0 or :: for "
        "every interface)",
    )
    parser.add_argument("--port", type=port, default=8080, help="port (default 8080; 0 = any free port)")
    parser.add_argument(
        "--admin-token",
        help="clients other than this machine may call /admin/reload with 'Authorization: Bearer TOKEN' "
        "(default: $KILT_ADMIN_TOKEN; without one, admin routes answer loopback clients only)",
    )


def _served_indexes(args: argparse.Namespace, data_dir: Path) -> list[str]:
    """The searcher keys ``serve`` loads: ``--index`` (default: every servable type built) over each
    ``--collection`` (default: all) whose index is built; none is an error naming the data dir."""
    from assets.indexes import (
        DEFAULT_COLLECTION,
        collection_built,
        collection_names,
        searcher_key,
        servable_types,
    )

    paths = resolve_snapshot(data_dir, args.snapshot)
    types = args.index or servable_types(paths, params.load_params().indexes.build)
    indexes = [
        searcher_key(index, collection)
        for collection in args.collection or collection_names()
        for index in types
        if collection == DEFAULT_COLLECTION or collection_built(paths, index, collection)
    ]
    if not indexes:
        raise FileNotFoundError(
            f"no index of this snapshot is built under {data_dir.resolve()}; build one (`kiltpipe build`)"
        )
    return indexes


def cmd_serve(args: argparse.Namespace) -> int:
    from assets.indexes import split_searcher_key
    from assets.reading import Snapshot
    from assets.reading.serving import SearchApp, SearchService, bind, is_loopback, server_for

    limits = params.load_params().limits
    host = args.host or limits.network.bind_host
    try:
        sock = bind(host, args.port)  # before the indices load: a bad --host or a busy port fails at once
    except OSError as error:
        return fail(f"--host {host} --port {args.port}: {error}")
    data_dir = data_dir_of(args)
    try:
        indexes = _served_indexes(args, data_dir)
    except BaseException:
        sock.close()
        raise

    def load() -> SearchService:
        """The snapshot as it is now (the newest complete one unless --snapshot), opened and warm."""
        snapshot = Snapshot(resolve_snapshot(data_dir, args.snapshot))
        try:
            answers = any(split_searcher_key(key)[1] == "qa" for key in indexes)  # /answer: the QA-pair KB's
            return SearchService.of(snapshot, indexes, answers=answers)
        except BaseException:
            snapshot.close()
            raise

    def version(service: SearchService) -> str | None:
        return (read_record(data_dir, service.snapshot_id) or {}).get("version")

    admin_token = args.admin_token or os.environ.get(ADMIN_TOKEN_ENV) or None
    try:
        service = load()
    except BaseException:
        sock.close()
        raise
    app = SearchApp(service, load=load, version=version, limits=limits, admin_token=admin_token)
    host, port = sock.getsockname()[:2]
    if not is_loopback(host) and not admin_token:
        print(
            f"kiltpipe: serving beyond this machine ({host}); /admin/reload answers loopback clients only "
            f"(give --admin-token or ${ADMIN_TOKEN_ENV} to allow others)",
            file=sys.stderr,
        )
    loaded = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in service.load_seconds.items())
    print(
        f"kiltpipe: serving {service.snapshot_id} ({loaded}) on http://{host}:{port}/search "
        "(/docs, /metrics; SIGHUP or POST /admin/reload loads a rebuilt snapshot; Ctrl-C or SIGTERM stops)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server_for(app, sock).run(sockets=[sock])
    finally:
        app.current.service.close()
        sock.close()
    return 0


VERBS = (
    Verb(
        "search",
        "Search a snapshot's BM25, dense, hybrid or rerank index: one QUERY (JSON hits) or a topics file "
        "(KILT JSONL or TREC run).",
        cmd_search,
        _search_options,
    ),
    Verb(
        "serve",
        "Serve a snapshot's indices over HTTP, each loaded once: GET /search?q=...&index=...&k=..., "
        "POST /search {queries, index, k}, GET /health.",
        cmd_serve,
        _serve_options,
    ),
)
"""The verbs of this module, with their options, in the order ``kiltpipe --help`` lists them."""
