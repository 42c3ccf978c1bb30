"""The Prefect server a command starts for itself: Prefect's own app under uvicorn, on
127.0.0.1. `python -m stack.prefect_app PORT [DATABASE KEEP]` starts it in a new process; a
command that has already imported Prefect forks it instead (`stack.children.ForkedChild`),
and the server then skips that import (two seconds of CPU). Given its database, it first
trims the history there to the newest KEEP flow runs (`evalfleet.stack.prefect_history`).

Its port is one the command holds (`stack.services.reserve_port`): the server listens on it
beside that hold (both set SO_REUSEPORT), so no other program can take it in between.

Its imports run with the collector held back (`core.collector`): about a second less before
it answers.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from evalfleet.core import collector


def create_app():
    """uvicorn's factory: Prefect's app (its settings read from this process's environment)."""
    from prefect.server.api.server import create_app as create_prefect_app

    app = create_prefect_app()
    collector.imported()
    return app


def serve(port: int, database: Path | None = None, keep: int = 0) -> None:
    """Serve until stopped; with `database`, trim its history first to `keep` runs."""
    if database is not None:
        trim_history(database, keep)
    collector.while_importing()
    if "prefect.context" in sys.modules:  # forked: Prefect read its settings in the parent
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
    import uvicorn

    sock = listen(port)
    config = uvicorn.Config(
        "evalfleet.stack.prefect_app:create_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
    if not server.started:
        sys.exit(3)  # what uvicorn.run exits with when the app did not start


def listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port`, beside the command's hold on it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    return sock


def trim_history(database: Path, keep: int) -> None:
    """Trim, saying what went in the server's log; a file that cannot be trimmed (locked
    past the wait, damaged) is served as it is."""
    import sqlite3

    from evalfleet.stack.prefect_history import trim

    try:
        done = trim(database, keep)
    except sqlite3.Error as exc:
        print(f"the history in {database} was not trimmed: {exc}", file=sys.stderr, flush=True)
        return
    if done.flow_runs or done.events:
        compacted = ", compacted" if done.compacted else ""
        print(
            f"trimmed {database}: {done.flow_runs} flow runs and {done.events} events deleted, "
            f"the newest {keep} kept{compacted}",
            file=sys.stderr,
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) == 4:
        serve(int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
    else:
        serve(int(sys.argv[1]))
