"""Running a flow in this process, as `evalfleet run` (`evaluate-and-aggregate`) and
`evalfleet judge` (`judge`) do, and telling a lost Prefect server from a failed run."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from engine.heartbeat import FLOW_RUN_BEAT_S
from engine.outcome import Interrupted
from engine.request import EvalRequest
from flows.judge import judge
from flows.pipeline import evaluate_and_aggregate


class PrefectLost(Exception):
    """The Prefect server could not be reached to finish the flow run (the work went on)."""


def run_flow_here(
    request: EvalRequest, retry_errors: bool, prefect_url: str | None, *, answers: bool = True
) -> dict[str, Any]:
    """The flow's result (`judge` when `answers` is off: only the judges are asked); raises
    Interrupted on a signal, PrefectLost when the server went away (the caller finishes the
    same steps without it), or the flow's own exception (a ConfigError is one line)."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        temporary_settings,
    )

    if prefect_url:  # the command's own temporary server: no automation watches heartbeats
        updates = {PREFECT_API_URL: prefect_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    else:  # a stack's server, whose crash automation expects a beat every 30 s
        updates = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: FLOW_RUN_BEAT_S}
    with temporary_settings(updates):
        try:
            if answers:
                state = evaluate_and_aggregate(request, retry_errors, return_state=True)
            else:
                added = request.judges()[-1]
                state = judge(
                    request.run_id,
                    added,
                    request.store,
                    request.s3_endpoint_url,
                    request.simulator_url,
                    return_state=True,
                )
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


def load_what_follows_the_work() -> None:
    """Import what the flow run uses after the work (Prefect's engines, the scoring, the
    tables, the leaderboard's plots: about a second of CPU) while the command's own Prefect
    server starts, rather than after the work, when the run waits on this one process. (With
    its own server, nothing else rebuilds the leaderboard.)"""
    import fastapi.encoders  # noqa: F401  (a flow run's parameters are encoded with it)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import prefect.task_engine  # noqa: F401

    import engine.aggregate  # noqa: F401
    import reports.leaderboard  # noqa: F401
    import reports.tables  # noqa: F401


def drain_prefect() -> None:
    """Send the logs and events Prefect still holds while its server is up (best effort)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogHandler

    with contextlib.suppress(Exception):
        APILogHandler.flush()
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
