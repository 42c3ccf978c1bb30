"""The `judge` flow: another judge model for a stored run's answers (`engine.judges`), then
the tables with each judge's scores and their agreement. Nothing is asked of the evaluated
models again."""

from __future__ import annotations

from prefect import flow

from evalfleet.engine.judges import judge_request, resolve_stored
from evalfleet.engine.run.outcome import RunFailed
from evalfleet.engine.run.request import Blank
from evalfleet.flows.control_plane import attached, failed_state
from evalfleet.flows.pipeline import whole_job_state
from evalfleet.storage import open_store


@flow(name="judge", log_prints=True)
def judge(
    run_id: str,
    judge: str,
    store: Blank = "",
    s3_endpoint_url: Blank = "",
    simulator_url: Blank = "",
):
    """Judge the stored answers of a run with another judge model, and write the tables
    again with every judge's scores and how far the judges agree.

    Args:
        run_id: the run whose answers to judge (`evalfleet runs` lists them)
        judge: the judge model, provider/model (in the model registry), or
            a simulated one such as anthropic/sim-0.9 against the simulator
        store: where the run is (empty: the store the deployments were served with,
            $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ... (empty: AWS)
        simulator_url: where `evalfleet simulate` listens, for a simulated judge (empty: the
            run's own)
    """
    with attached():
        opened = open_store(store or None, s3_endpoint_url=s3_endpoint_url or None)
        try:
            run = resolve_stored(
                judge_request(opened, run_id, judge, simulator_url or None), opened
            )
            return whole_job_state(run, retry_errors=True)
        except RunFailed as exc:
            return failed_state(exc)
