"""``kiltpipe serve``: the search API of :mod:`assets.indexes.server` over a snapshot's indices."""

from __future__ import annotations

import argparse
import sys

from orchestration.commands import _data_dir


def cmd_serve(args: argparse.Namespace) -> int:
    from assets import params
    from assets.build_state import read_record
    from assets.indexes.retrieval import IndexSettings, Retriever
    from assets.indexes.server import SearchApp, SearchService, bind, server_for
    from assets.storage import resolve_snapshot

    data_dir = _data_dir(args)
    indexes = args.index or [name for name in ("bm25", "dense") if name in params.load_params().indexes.build]

    def load() -> SearchService:
        """The snapshot as it is now (the newest complete one unless --snapshot), opened and warm."""
        retriever = Retriever(resolve_snapshot(data_dir, args.snapshot), IndexSettings.from_params())
        try:
            return SearchService(retriever, indexes)
        except BaseException:
            retriever.close()
            raise

    def version(service: SearchService) -> str | None:
        return (read_record(data_dir, service.snapshot_id) or {}).get("version")

    service = load()
    app = SearchApp(service, load=load, version=version)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    loaded = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in service.load_seconds.items())
    print(
        f"kiltpipe: serving {service.snapshot_id} ({loaded}) on http://{host}:{port}/search "
        "(/docs, /metrics; SIGHUP or POST /admin/reload loads a rebuilt snapshot; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server_for(app, sock).run(sockets=[sock])
    finally:
        app.current.service.close()
        sock.close()
    return 0
