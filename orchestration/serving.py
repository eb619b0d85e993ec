"""``kiltpipe serve``: the search API of :mod:`assets.indexes.server` over a snapshot's indices."""

from __future__ import annotations

import argparse
import sys

from orchestration.commands import _retriever


def cmd_serve(args: argparse.Namespace) -> int:
    from assets.indexes.server import SearchService, make_server

    indexes = args.index or ["bm25", "dense"]
    with _retriever(args) as retriever:
        service = SearchService(retriever, indexes)
        server = make_server(service, args.host, args.port)
        host, port = server.server_address[:2]
        loaded = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in service.load_seconds.items())
        print(
            f"kiltpipe: serving {retriever.paths.snapshot_id} ({loaded}) on http://{host}:{port}/search "
            "(Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    return 0
