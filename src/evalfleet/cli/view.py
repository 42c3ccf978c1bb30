"""`evalfleet view [--port N] [--open]`: serve a store's pages on 127.0.0.1, with tags and notes
edited in the page (`evalfleet.reports.view_server`); Ctrl-C stops it (exit 0)."""

from __future__ import annotations

import argparse
import contextlib
import signal

from evalfleet.cli.options import add_store_options, store_from

DEFAULT_PORT = 7580


def add_commands(sub: argparse._SubParsersAction) -> None:
    view = sub.add_parser(
        "view",
        help="serve the store's index, leaderboard and reports on 127.0.0.1; edit tags there",
        description="Serves the store (local or S3) on 127.0.0.1: the store index "
        "(leaderboard/runs.html), the leaderboard and every run's report, whose tags and note "
        "show as they are now and can be edited in the page (written as `evalfleet tag` "
        "writes them, with the token of the printed URL). Nothing else is written. Ctrl-C "
        "stops it.",
    )
    view.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free one)",
    )
    view.add_argument("--open", action="store_true", help="open the store index in a browser")
    add_store_options(view)
    view.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from evalfleet.core.types import ConfigError
    from evalfleet.reports.view_server import ViewServer, check_store

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port: give 1 to 65535, or 0 for any free")
    store = store_from(args)
    check_store(store)
    server = ViewServer(store, args.port)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
    print(f"evalfleet view: {server.url()} (Ctrl-C stops)", flush=True)
    if args.open:
        import webbrowser

        with contextlib.suppress(Exception):
            webbrowser.open(server.url())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
