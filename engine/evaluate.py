"""The evaluation as steps: plan the run, ask what the store lacks online, then the batch
rounds. `evaluate_run` runs them here; the Prefect flows run the same steps as tasks."""

from __future__ import annotations

import logging
from typing import Any

from engine import heartbeat
from engine.batches import run_batches
from engine.generation import generate
from engine.interrupts import STOP
from engine.outcome import check_done
from engine.plan import RunPlan, plan, report_plan
from engine.request import EvalRequest
from engine.resolve import resolved

log = logging.getLogger("evalfleet")


def plan_step(request: EvalRequest, retry_errors: bool = True, answers: bool = True) -> RunPlan:
    """Resolve the request (or take the resolution the command line made), open the run and
    find what is left to ask (with `answers` off, only judgements)."""
    run_plan = plan(resolved(request), retry_errors=retry_errors, answers=answers)
    report_plan(run_plan)
    return run_plan


def generate_step(run_plan: RunPlan) -> dict[str, Any]:
    """Ask the online part on Ray; every record is checkpointed as it lands."""
    return {"run_id": run_plan.run.run_id, **generate(run_plan)}


def batch_step(run_plan: RunPlan, retry_errors: bool = True) -> dict[str, Any]:
    """The batch-mode items of the run, after the online ones (see engine/batches.py)."""
    request = run_plan.run.request
    return run_batches(
        run_plan.run, wait=request.batch_wait, after_online=True, retry_errors=retry_errors
    )


def needs_batches(request: EvalRequest, generated: dict[str, Any]) -> bool:
    """After the online step: whether the batch rounds follow (the cost cap ends the run, and
    so do a record that could not be stored and a model whose every call failed)."""
    if generated.get("budget_reached"):
        heartbeat.finish_all("budget reached")
        return False
    if generated.get("store_failed") or generated.get("endpoints_down"):
        return False
    return request.uses_batches() and not generated.get("stopped")


def evaluate_run(
    request: EvalRequest, *, retry_errors: bool = True, answers: bool = True
) -> dict[str, Any]:
    """The whole evaluation without Prefect."""
    with STOP.handling():
        run_plan = plan_step(request, retry_errors, answers)
        if STOP.requested():
            return {"run_id": run_plan.run.run_id, "submitted": 0, "stopped": True}
        result = generate_step(run_plan)
        if needs_batches(request, result):
            result.update(batch_step(run_plan, retry_errors))
        check_done(result)
        return result
