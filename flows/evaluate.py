"""The `evaluate` flow: the engine's evaluation steps (`engine.evaluate`) as coarse Prefect
tasks: plan the run, ask what the store lacks, then the batch rounds."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from engine import heartbeat
from engine.evaluate import batch_step, generate_step, needs_batches, plan_step
from engine.interrupts import STOP
from engine.outcome import RunFailed, check_done
from engine.plan import RunPlan
from engine.request import EvalRequest
from flows.control_plane import attached, failed_state, finished_state


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
def plan_task(request: EvalRequest, retry_errors: bool = True, answers: bool = True) -> RunPlan:
    return plan_step(request, retry_errors, answers)


@task(
    name="generate",
    cache_policy=NO_CACHE,
    persist_result=False,
    retries=2,
    retry_delay_seconds=5,
    retry_condition_fn=transient,
)
def generate_task(run_plan: RunPlan) -> dict[str, Any]:
    return generate_step(run_plan)


@task(name="batch-rounds", cache_policy=NO_CACHE, persist_result=False)
def batch_task(run_plan: RunPlan, retry_errors: bool = True) -> dict[str, Any]:
    return batch_step(run_plan, retry_errors)


def evaluate_steps(
    request: EvalRequest, retry_errors: bool = True, answers: bool = True
) -> dict[str, Any]:
    """The flow body shared by `evaluate`, `evaluate-and-aggregate` and `judge` (the same
    steps as `engine.evaluate.evaluate_run`, each a task). The plan goes to the next tasks
    quoted: Prefect would otherwise walk every work item in it looking for futures (8 s and
    20 MB for 50,000 items)."""
    with STOP.handling():
        run_plan = plan_task(request, retry_errors, answers)
        if STOP.requested():
            return {"run_id": run_plan.run.run_id, "submitted": 0, "stopped": True}
        result = generate_task(quote(run_plan))
        if needs_batches(request, result):
            result = {**result, **batch_task(quote(run_plan), retry_errors)}
        check_done(result)  # a run that did not do its job fails here, before any table
        return result


@flow(name="evaluate", log_prints=True)
def evaluate(request: EvalRequest, retry_errors: bool = True):
    """Plan the run, request only what the store lacks, checkpoint each record on arrival.

    Safe to retry or re-run with the same run id: stored records are never requested again.

    Args:
        request: what to evaluate, how, and where to keep it
        retry_errors: on a resume, request again the items that ended in an error
    """
    with attached():
        try:
            with heartbeat.beating(final="evaluated"):
                return finished_state(evaluate_steps(request, retry_errors))
        except RunFailed as exc:
            return failed_state(exc)
