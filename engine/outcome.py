"""How a run that a signal stopped says so: what was kept, and how to resume."""

from __future__ import annotations

from typing import Any

from engine.interrupts import STOP


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
