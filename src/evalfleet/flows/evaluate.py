"""The `evaluate` flow: the engine's evaluation (`engine.pipeline.evaluate`) with its steps
as Prefect tasks: plan the run, ask what the store lacks, then the batch rounds."""

from __future__ import annotations

from prefect import flow

from evalfleet.engine.pipeline import evaluate as evaluate_run
from evalfleet.engine.prepare.resolve import resolve
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.engine.run.request import EvalRequest
from evalfleet.engine.store import heartbeat
from evalfleet.flows.control_plane import attached, evaluated_state, failed_state
from evalfleet.flows.steps import prefect_steps


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
            run = resolve(request)
            with heartbeat.beating(final="evaluated"):
                return evaluated_state(evaluate_run(run, prefect_steps(), retry_errors))
        except RunFailed as exc:
            return failed_state(exc)
