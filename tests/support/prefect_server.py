"""A Prefect server for a test session or a perf script, on a copy of the migrated template.

`prefect.testing.utilities.prefect_test_harness` starts the same server on a new SQLite file,
which it then migrates (Prefect's ~150 migrations): 10.4 CPU-seconds before it answers, where
a copy of the template (`evalfleet.stack.prefect_template`, as evalfleet's own servers start)
takes 4.5 (measured one at a time on 2026-11-29, host line 0.37 s). The suite starts one per
perf script that needs one (the suite shares one: tests/support/shared_services.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

STARTUP_TIMEOUT_S = 120  # a loaded 2-core machine
START_ATTEMPTS = 3


@contextmanager
def prefect_server() -> Iterator[str]:
    """Serve Prefect's API from a process of its own, with this process's Prefect settings
    pointed at it while the context lasts; yields the API URL. On the way out the logs and
    events still queued here are sent first, then the server stops and its database goes."""
    import prefect.context
    import prefect.settings as settings
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.server.database.dependencies import temporary_database_interface

    from evalfleet.stack.prefect_template import seed
    from evalfleet.stack.services import free_port

    folder = Path(tempfile.mkdtemp(prefix="evalfleet-test-prefect-"))
    database = folder / "prefect.db"
    seed(database)  # without a template (no cache folder) the server migrates a new file
    try:
        with ExitStack() as stack:
            stack.enter_context(temporary_database_interface())
            stack.enter_context(
                settings.temporary_settings(
                    {
                        settings.PREFECT_SERVER_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{database}"
                    }
                )
            )
            server = _started(SubprocessASGIServer, free_port)
            stack.callback(server.stop)
            # Prefect's code that asks for "the" local server finds this one, not a second
            stack.enter_context(_default_server(SubprocessASGIServer, server))
            stack.enter_context(
                settings.temporary_settings({settings.PREFECT_API_URL: server.api_url})
            )
            # also for code whose context was copied before this (Prefect reads the global one)
            stack.enter_context(
                prefect.context._temporary_global_settings_context(
                    prefect.context.get_settings_context()
                )
            )
            yield server.api_url
            send_what_is_queued()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _started(server_class, free_port):
    """A server answering on a port picked free. Another program may take that port before
    the server binds it: Prefect's start tries another port only when the server says so (exit
    3); when the other program answers first (a CI run saw `illegal request line` from it),
    this tries again on a new port."""
    import httpx

    for attempt in range(1, START_ATTEMPTS + 1):
        server = server_class(port=free_port())
        try:
            server.start(timeout=STARTUP_TIMEOUT_S)
            return server
        except httpx.HTTPError:
            server.stop()
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


@contextmanager
def _default_server(server_class, server) -> Iterator[None]:
    instances = server_class._instances
    before = instances.get(None)
    instances[None] = server
    try:
        yield
    finally:
        if before is None:
            instances.pop(None, None)
        else:
            instances[None] = before


def send_what_is_queued() -> None:
    """Logs and events this process has not sent yet, sent while the server still answers."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def send() -> None:
        try:
            sent = APILogWorker.instance().drain()
            if inspect.isawaitable(sent):
                await sent
        except RuntimeError:  # no log worker was started
            pass
        sent = EventsWorker.drain_all()
        if inspect.isawaitable(sent):
            await sent

    run_coro_as_sync(send())
