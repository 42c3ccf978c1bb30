"""The `poll-batches` flow: one batch round for every run of a store with jobs open
(`engine.batches.poll_store`), on a short schedule."""

from __future__ import annotations

from typing import Any

from prefect import flow

from engine.batches import poll_store
from flows.control_plane import attached
from storage import open_store


@flow(name="poll-batches", log_prints=True)
def poll_batches(store: str | None = None, s3_endpoint_url: str | None = None) -> dict[str, Any]:
    """Collect the batch jobs that ended in every run of a store, send what follows them
    (judgements, lines to ask again), and aggregate the runs that are complete.

    Args:
        store: the store (empty: the stack's, $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ...
    """
    with attached():
        return poll_store(open_store(store, s3_endpoint_url=s3_endpoint_url))
