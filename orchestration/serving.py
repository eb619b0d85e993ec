"""``kiltpipe serve``: the search API of :mod:`assets.indexes.server` over a snapshot's indices."""

from __future__ import annotations

import argparse
import os
import sys

from orchestration.commands import _data_dir

ADMIN_TOKEN_ENV = "KILT_ADMIN_TOKEN"


def cmd_serve(args: argparse.Namespace) -> int:
    from assets import params
    from assets.build_state import read_record
    from assets.indexes.retrieval import IndexSettings, Retriever
    from assets.indexes.searchers import servable_types
    from assets.indexes.server import SearchApp, SearchService, bind, is_loopback, server_for
    from assets.storage import resolve_snapshot

    data_dir = _data_dir(args)
    indexes = args.index or servable_types(
        resolve_snapshot(data_dir, args.snapshot), params.load_params().indexes.build
    )
    if not indexes:
        raise FileNotFoundError(
            f"no index of this snapshot is built under {data_dir.resolve()}; build one (`kiltpipe build`)"
        )

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

    admin_token = args.admin_token or os.environ.get(ADMIN_TOKEN_ENV) or None
    service = load()
    app = SearchApp(service, load=load, version=version, admin_token=admin_token)
    sock = bind(args.host, args.port)
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
