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
    waiting = ""
    if result.get("batch_jobs_open"):
        lines, jobs = result.get("batch_lines_open", 0), result["batch_jobs_open"]
        waiting = (
            f"; {lines} {_plural(lines, 'line')} wait in {jobs} open batch "
            f"{_plural(jobs, 'job')} at the provider, which a rerun (or `evalfleet batches "
            "poll`) collects without sending them again"
        )
    return (
        f"run {result['run_id']} interrupted by {STOP.name}: {stored} new records stored, "
        f"{left} items not asked{waiting}; everything stored is kept and a rerun with run id "
        f"{result['run_id']} asks only the rest"
    )


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
