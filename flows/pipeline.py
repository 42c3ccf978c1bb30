"""`evaluate-and-aggregate`: the whole job as one Prefect flow, what a deployment, the UI and
`evalfleet run` start."""

from __future__ import annotations

from typing import Any

from prefect import flow

from engine import heartbeat
from engine.judges import check_graded
from engine.outcome import RunFailed
from engine.request import EvalRequest
from flows.aggregate import aggregate_task
from flows.control_plane import attached, failed_state, finished_state
from flows.evaluate import evaluate_steps
from flows.leaderboard import refresh
from storage import open_store


@flow(name="evaluate-and-aggregate", log_prints=True)
def evaluate_and_aggregate(request: EvalRequest, retry_errors: bool = True):
    """The whole job, the flow a deployment or the UI starts: evaluate (resuming the run id
    if it exists), then score and write the tables.

    Args:
        request: what to evaluate, how, and where to keep it
        retry_errors: on a resume, request again the items that ended in an error
    """
    with attached():
        try:
            return whole_job(request, retry_errors)
        except RunFailed as exc:
            return failed_state(exc)


def whole_job(request: EvalRequest, retry_errors: bool = True, answers: bool = True):
    """Evaluate, then score, write the tables and the report, refresh the leaderboard (the
    body of `evaluate-and-aggregate` and of `judge`, within a flow run)."""
    with heartbeat.beating(final="finished"):
        evaluated = evaluate_steps(request, retry_errors, answers)
        if evaluated.get("stopped"):
            return finished_state(evaluated)
        if evaluated.get("batch_jobs_open"):
            return batches_left(evaluated)
        store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
        if not answers:
            check_graded(store, request, evaluated)
        result = aggregate_task(store, evaluated["run_id"])
        refresh(store)
        return with_budget(result, evaluated)


def with_budget(result: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, Any]:
    """A run stopped by its cost cap says so beside the tables of what it has."""
    if evaluated.get("budget_reached"):
        return {**result, **{k: evaluated.get(k) for k in ("budget_reached", "finish_cap_usd")}}
    return result


def batches_left(evaluated: dict[str, Any]) -> dict[str, Any]:
    """Submitted without waiting: the poll-batches flow writes the tables once they end."""
    heartbeat.finish_all("batches open")
    return {**evaluated, "store": None}
