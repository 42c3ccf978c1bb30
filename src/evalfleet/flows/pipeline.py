"""`evaluate-and-aggregate`: the whole job (`engine.pipeline.whole_job`) as one Prefect flow,
what a deployment and the UI start; `evalfleet run` starts the same flow on the run it
resolved itself (`evalfleet.flows.in_process`)."""

from __future__ import annotations

from prefect import flow

from evalfleet.engine.pipeline import whole_job
from evalfleet.engine.prepare.resolve import ResolvedRun, resolve
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.engine.run.request import EvalRequest
from evalfleet.flows.control_plane import attached, failed_state, job_state
from evalfleet.flows.steps import prefect_steps

NAME = "evaluate-and-aggregate"


@flow(name=NAME, log_prints=True)
def evaluate_and_aggregate(request: EvalRequest, retry_errors: bool = True):
    """The whole job, the flow a deployment or the UI starts: evaluate (resuming the run id
    if it exists), then score and write the tables.

    Args:
        request: what to evaluate, how, and where to keep it
        retry_errors: on a resume, request again the items that ended in an error
    """
    with attached():
        try:
            return whole_job_state(resolve(request), retry_errors)
        except RunFailed as exc:
            return failed_state(exc)


def whole_job_state(run: ResolvedRun, retry_errors: bool = True):
    """The whole job on a resolved run, within a flow run: its result, or the state that
    says it was stopped."""
    return job_state(whole_job(run, prefect_steps(run.run_id), retry_errors))
