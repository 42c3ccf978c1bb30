"""The `reevaluate` flow: evaluate, one run each, the models the providers list that this
store has not evaluated yet (`evalfleet.engine.reevaluate` decides which), then refresh the
leaderboard. Meant for a schedule (see deployments/serve.py)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from evalfleet.engine.reevaluate import ReevaluateRequest, Reevaluation
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.flows.control_plane import attached
from evalfleet.flows.leaderboard import refresh
from evalfleet.flows.pipeline import evaluate_and_aggregate
from evalfleet.storage import open_store


@flow(name="reevaluate", log_prints=True)
def reevaluate(request: ReevaluateRequest) -> dict[str, Any]:
    """Evaluate the models the providers list that were not evaluated before.

    Args:
        request: which providers and names to watch, what to run them on, where to keep it
    """
    with attached():
        store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
        job = Reevaluation(request, store)
        job.discover()
        if job.baseline_only():
            return job.report(baseline=True)
        for candidate in job.candidates():
            try:
                job.done(candidate, evaluate_and_aggregate(job.eval_request(candidate)))
            except RunFailed as exc:  # kept pending: the next reevaluation resumes its run
                print(f"{candidate.model_id} was not evaluated: {exc}")
        if job.evaluated:
            refresh(store)
        return job.report()
