"""The `limits` flow: retune a live run from the Prefect UI, as `evalfleet limits RUN` does."""

from __future__ import annotations

from prefect import flow

from evalfleet.engine.run.request import Blank
from evalfleet.storage import open_store


@flow(name="limits", log_prints=True)
def limits(
    run_id: str,
    rpm: tuple[str, ...] = (),
    tpm: tuple[str, ...] = (),
    max_in_flight: int = 0,
    store: Blank = "",
    s3_endpoint_url: Blank = "",
) -> str:
    """Retune a running run: its requests and tokens per minute, per model or for every
    model, and how many calls it keeps in flight. Every worker of the run applies them within
    a few seconds; a figure left empty keeps its last value.

    Args:
        run_id: the run to retune (it is running, or about to resume)
        rpm: requests per minute: N for every model of the run, or MODEL=N for one
        tpm: tokens per minute: N for every model of the run, or MODEL=N for one
        max_in_flight: calls in flight at most, for the whole run (0: keep the last value)
        store: the run's store: a directory, or s3://bucket/prefix (empty: the store the
            deployments were served with, $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ... (empty: AWS)
    """
    from evalfleet.engine.retune import retune

    where = open_store(store or None, s3_endpoint_url=s3_endpoint_url or None)
    said = retune(where, run_id, list(rpm), list(tpm), max_in_flight or None)
    print(said)
    return said
