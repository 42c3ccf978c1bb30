"""`evaluate-and-aggregate`: the whole job as one Prefect flow, and how the CLI runs it."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows import heartbeat
from flows.aggregate import aggregate_run, aggregate_task
from flows.evaluate import evaluate_run, evaluate_steps
from flows.interrupts import STOP
from flows.leaderboard import refresh
from flows.outcome import Interrupted, finished_state, interrupted_message
from flows.request import EvalRequest


@flow(name="evaluate-and-aggregate", log_prints=True)
def evaluate_and_aggregate(request: EvalRequest, retry_errors: bool = True):
    """The whole job, the flow a deployment or the UI starts: evaluate (resuming the run id
    if it exists), then score and write the tables.

    Args:
        request: what to evaluate, how, and where to keep it
        retry_errors: on a resume, request again the items that ended in an error
    """
    with heartbeat.beating(final="finished"):
        evaluated = evaluate_steps(request, retry_errors)
        if evaluated.get("stopped"):
            return finished_state(evaluated, request)
        if evaluated.get("batch_jobs_open"):
            return batches_left(evaluated)
        result = aggregate_task(evaluated["run_id"], request.store, request.s3_endpoint_url)
        refresh(request.store, request.s3_endpoint_url)
        return with_budget(result, evaluated)


def run_without_prefect(request: EvalRequest, *, retry_errors: bool = True) -> dict[str, Any]:
    """The same steps with no Prefect server: what the CLI falls back to when it is lost."""
    with heartbeat.beating(final="finished"):
        with STOP.handling():
            evaluated = evaluate_run(request, retry_errors=retry_errors)
        if evaluated.get("stopped"):
            raise Interrupted(interrupted_message(evaluated))
        if evaluated.get("batch_jobs_open"):
            return batches_left(evaluated)
        result = aggregate_run(evaluated["run_id"], request.store, request.s3_endpoint_url)
        refresh(request.store, request.s3_endpoint_url, in_flow=False)
        return with_budget(result, evaluated)


def with_budget(result: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, Any]:
    """A run stopped by its cost cap says so beside the tables of what it has."""
    if evaluated.get("budget_reached"):
        return {**result, "budget_reached": evaluated["budget_reached"]}
    return result


def batches_left(evaluated: dict[str, Any]) -> dict[str, Any]:
    """Submitted without waiting: the poll-batches flow writes the tables once they end."""
    heartbeat.finish_all("batches open")
    return {**evaluated, "store": None}
