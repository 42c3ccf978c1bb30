"""The Prefect server a command starts for itself: Prefect's own app under uvicorn, on
127.0.0.1. `python -m stack.prefect_app PORT [DATABASE KEEP]` starts it in a new process; a
command that has already imported Prefect forks it instead (`stack.children.ForkedChild`),
and the server then skips that import (two seconds of CPU). Given its database, it first
trims the history there to the newest KEEP flow runs (`stack.prefect_history`).

Its imports run with the collector held back (`core.collector`): about a second less before
it answers.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core import collector


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

    uvicorn.run(
        "stack.prefect_app:create_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="on",
    )


def trim_history(database: Path, keep: int) -> None:
    """Trim, saying what went in the server's log; a file that cannot be trimmed (locked
    past the wait, damaged) is served as it is."""
    import sqlite3

    from stack.prefect_history import trim

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
