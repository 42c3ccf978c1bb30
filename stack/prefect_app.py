"""The Prefect server a command starts for itself: Prefect's own app under uvicorn, on
127.0.0.1. `python -m stack.prefect_app PORT` starts it in a new process; a command that has
already imported Prefect forks it instead (`stack.children.ForkedChild`), and the server
then skips that import (two seconds of CPU).

Its imports run with the collector held back (`core.collector`): about a second less before
it answers.
"""

from __future__ import annotations

import sys

from core import collector


def create_app():
    """uvicorn's factory: Prefect's app (its settings read from this process's environment)."""
    from prefect.server.api.server import create_app as create_prefect_app

    app = create_prefect_app()
    collector.imported()
    return app


def serve(port: int) -> None:
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


if __name__ == "__main__":
    serve(int(sys.argv[1]))
