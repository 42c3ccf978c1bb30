"""The `evaluate` flow: plan the run, ask what the store lacks (online on Ray, and in batch
jobs for models in batch mode), checkpoint every record on arrival. The work itself is in
`flows.generation` and `flows.batches`; here it is wrapped in coarse Prefect tasks.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows import heartbeat
from flows.batches import run_batches
from flows.generation import Prepared, RunPlan, checked, generate, plan, report_plan
from flows.interrupts import STOP
from flows.request import EvalRequest


def evaluate_run(request: EvalRequest, *, retry_errors: bool = True) -> dict[str, Any]:
    """The whole evaluation without Prefect (the flow below runs the same steps as tasks)."""
    run_plan = plan(checked(request), retry_errors=retry_errors)
    report_plan(run_plan)
    result = {"run_id": run_plan.prepared.run_id, **generate(run_plan)}
    if result.get("budget_reached"):
        heartbeat.finish_all("budget reached")
    elif request.uses_batches() and not result.get("stopped"):
        result.update(batches(run_plan.prepared, retry_errors))
    return result


def batches(prepared: Prepared, retry_errors: bool) -> dict[str, Any]:
    """The batch-mode items of the run, after the online ones (see flows/batches.py)."""
    request = prepared.request
    return run_batches(
        prepared, wait=request.batch_wait, after_online=True, retry_errors=retry_errors
    )


# --- Prefect ---------------------------------------------------------------------------------


def transient(task, task_run, state) -> bool:
    """Retry a task only for infrastructure trouble (a Ray worker or node lost, a dropped
    connection); a configuration or input error fails at once."""
    import ray.exceptions

    exc = state.data if isinstance(state.data, BaseException) else None
    return isinstance(
        exc,
        ray.exceptions.RayActorError
        | ray.exceptions.RaySystemError
        | ray.exceptions.ObjectLostError
        | ConnectionError
        | TimeoutError,
    )


@task(name="plan-run", cache_policy=NO_CACHE, persist_result=False)
def plan_task(request: EvalRequest, retry_errors: bool = True) -> RunPlan:
    run_plan = plan(checked(request), retry_errors=retry_errors)
    report_plan(run_plan)
    return run_plan


@task(
    name="generate",
    cache_policy=NO_CACHE,
    persist_result=False,
    retries=2,
    retry_delay_seconds=5,
    retry_condition_fn=transient,
)
def generate_task(run_plan: RunPlan) -> dict[str, Any]:
    return {"run_id": run_plan.prepared.run_id, **generate(run_plan)}


@task(name="batch-rounds", cache_policy=NO_CACHE, persist_result=False)
def batch_task(prepared: Prepared, retry_errors: bool = True) -> dict[str, Any]:
    return batches(prepared, retry_errors)


def evaluate_steps(request: EvalRequest, retry_errors: bool = True) -> dict[str, Any]:
    """The flow body shared by `evaluate` and `evaluate-and-aggregate`."""
    with STOP.handling():
        run_plan = plan_task(request, retry_errors)
        if STOP.requested():
            return {"run_id": run_plan.prepared.run_id, "submitted": 0, "stopped": True}
        result = generate_task(run_plan)
        if result.get("budget_reached"):
            heartbeat.finish_all("budget reached")
        elif request.uses_batches() and not result.get("stopped"):
            result = {**result, **batch_task(run_plan.prepared, retry_errors)}
        return result


@flow(name="evaluate", log_prints=True)
def evaluate(request: EvalRequest, retry_errors: bool = True):
    """Plan the run, request only what the store lacks, checkpoint each record on arrival.

    Safe to retry or re-run with the same run id: stored records are never requested again.

    Args:
        request: what to evaluate, how, and where to keep it
        retry_errors: on a resume, request again the items that ended in an error
    """
    from flows.outcome import finished_state

    with heartbeat.beating(final="evaluated"):
        return finished_state(evaluate_steps(request, retry_errors), request)
