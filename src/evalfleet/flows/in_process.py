"""Running a flow in this process, as `evalfleet run` (`evaluate-and-aggregate`) and
`evalfleet judge` (`judge`) do, on the run the command line resolved, and telling a lost
Prefect server from a failed run."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from typing import Any

from prefect import flow

from evalfleet.engine.pipeline import JobResult
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.outcome import Interrupted, RunFailed
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store.heartbeat import FLOW_RUN_BEAT_S
from evalfleet.flows.control_plane import attached, failed_state
from evalfleet.flows.pipeline import whole_job_state


class PrefectLost(Exception):
    """The Prefect server could not be reached to finish the flow run (the work went on)."""


def run_flow_here(run: ResolvedRun, retry_errors: bool, prefect_url: str | None) -> JobResult:
    """The whole job on `run` as a flow run of this process (`judge` for a judge added to a
    stored run, `evaluate-and-aggregate` otherwise). The flow's parameter is the request, as
    a deployment's is; the resolved run itself is handed to the flow's body, never sent to
    the server. Raises Interrupted on a signal, PrefectLost when the server went away (the
    caller finishes the same steps without it), or the flow's own exception."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        temporary_settings,
    )

    @flow(name="evaluate-and-aggregate" if run.answers else "judge", log_prints=True)
    def here(request: EvalRequest, retry_errors: bool = True):
        with attached():
            try:
                return whole_job_state(run, retry_errors)
            except RunFailed as exc:
                return failed_state(exc)

    updates: dict[Any, Any]
    if prefect_url:  # the command's own temporary server: no automation watches heartbeats
        updates = {PREFECT_API_URL: prefect_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    else:  # a stack's server, whose crash automation expects a beat every 30 s
        updates = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: FLOW_RUN_BEAT_S}
    with temporary_settings(updates):
        try:
            state: Any = here(run.request, retry_errors, return_state=True)  # a State (sync)
        except Exception as exc:
            if not prefect_lost(exc):
                raise
            raise PrefectLost(type(exc).__name__) from exc
        finally:
            drain_prefect()
    lost = _lost_in_state(state)
    if lost is not None:
        raise PrefectLost(type(lost).__name__) from lost
    if state.is_cancelled():
        raise Interrupted(state.message or "interrupted")
    return state.result()


def load_what_follows_the_work(ready: Callable[[], bool] = lambda: False) -> None:
    """Import what the flow run uses after the work (the scoring, the tables, the leaderboard's
    plots: about a second of CPU) while the command's own Prefect server starts, rather than
    after the work, when the run waits on this one process. (With its own server, nothing
    else rebuilds the leaderboard.) Each only while `ready()` is false: once the server
    answers, the run does not wait for them (they are imported when used)."""
    import fastapi.encoders  # noqa: F401  (a flow run's parameters are encoded with it)
    import prefect.task_engine  # noqa: F401  (the flow's first task needs it)

    for name in (
        "matplotlib",
        "matplotlib.pyplot",
        "evalfleet.engine.scoring.aggregate",
        "evalfleet.reports.leaderboard",
    ):
        if ready():
            return
        importlib.import_module(name)
        if name == "matplotlib":
            sys.modules[name].use("Agg")


def drain_prefect() -> None:
    """Send the logs and events Prefect still holds while its server is up (best effort)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogHandler

    with contextlib.suppress(Exception):
        APILogHandler.flush()  # type: ignore[call-arg]  # a classmethod at run time
    with contextlib.suppress(Exception):
        EventsWorker.drain_all(timeout=5)


def _lost_in_state(state) -> BaseException | None:
    if state.is_failed() or state.is_crashed():
        try:
            state.result()
        except Exception as exc:
            return exc if prefect_lost(exc) else None
    return None


def prefect_lost(exc: BaseException) -> bool:
    """Whether an exception says the Prefect API cannot be reached."""
    import httpx

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.TransportError):
            return True
        current = current.__cause__ or current.__context__
    return False


def say_lost(reason: str) -> None:
    print(
        f"the Prefect flow run could not be finished ({reason}): completing the run and its "
        "tables without Prefect",
        file=sys.stderr,
    )
