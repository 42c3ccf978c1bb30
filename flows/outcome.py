"""How a flow ends: Completed with its result, or Cancelled when a signal stopped the run."""

from __future__ import annotations

from typing import Any

from flows.interrupts import STOP
from flows.request import EvalRequest


class Interrupted(Exception):
    """The run stopped on a signal; the message says what was kept and how to resume."""


def interrupted_message(result: dict[str, Any]) -> str:
    statuses = result.get("statuses") or {}
    stored = sum(statuses.get(s, 0) for s in ("ok", "failed"))
    left = result.get("not_started", 0) + result.get("abandoned", 0)
    return (
        f"run {result['run_id']} interrupted by {STOP.name}: {stored} new records stored, "
        f"{left} items not asked; everything stored is kept and a rerun with run id "
        f"{result['run_id']} asks only the rest"
    )


def finished_state(result: dict[str, Any], request: EvalRequest):
    """The flow's return value: a Cancelled state if a stop was requested, else the result."""
    if result.get("stopped"):
        from prefect.states import Cancelled

        return Cancelled(message=interrupted_message(result))
    return result
