"""How a run that did not finish says so: stopped by a signal (what was kept, how to resume),
or failed (a record it could not store, a model every call to which failed)."""

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


class RunFailed(Exception):
    """The run did not do its job: a record could not be stored, or every call to a model
    failed. The message says what failed; the same command resumes it once that is fixed."""

    exit_code = 4


def check_done(result: dict[str, Any]) -> None:
    """Raise RunFailed when the evaluation stopped on a record it could not store, or a model
    every call to which failed (`tasks.dispatch`); nothing is aggregated then."""
    run_id = result.get("run_id", "")
    problems = []
    if result.get("store_failed"):
        unstored = (result.get("statuses") or {}).get("write_failed", 0)
        problems.append(
            f"a record could not be stored ({result['store_failed']}): nothing more was sent, "
            f"the calls in flight landed, {unstored} answers paid for were not stored; fix the "
            "store"
        )
    for caller, why in (result.get("endpoints_down") or {}).items():
        problems.append(
            f"every call to {caller} at {why} failed: it was not asked again; check that the "
            "endpoint is up and its key is right"
        )
    if problems:
        raise RunFailed(
            f"run {run_id} stopped: {'; '.join(problems)}; then run the same command again: it "
            "asks only what is not stored"
        )


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
