"""The `poll-batches` flow: one batch round for every run of a store with jobs open
(`evalfleet.engine.generation.batches.poll_store`), on a short schedule."""

from __future__ import annotations

from prefect import flow

from evalfleet.engine.generation.batches import poll_store
from evalfleet.engine.run.outcome import RunOutcome
from evalfleet.engine.run.request import Blank
from evalfleet.flows.aggregate import publish_report
from evalfleet.flows.control_plane import attached
from evalfleet.flows.leaderboard import refresh
from evalfleet.reports.report import write_report_or_warn
from evalfleet.storage import open_store


@flow(name="poll-batches", log_prints=True)
def poll_batches(store: Blank = "", s3_endpoint_url: Blank = "") -> dict[str, RunOutcome]:
    """Collect the batch jobs that ended in every run of a store, send what follows them
    (judgements, lines to ask again), and aggregate the runs that are complete.

    Args:
        store: the store (empty: the stack's, $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ...
    """
    with attached():
        opened = open_store(store or None, s3_endpoint_url=s3_endpoint_url or None)
        report = poll_store(opened)
        finished = [run_id for run_id, outcome in report.items() if not outcome.batch_jobs_open]
        for run_id in finished:
            where = write_report_or_warn(opened, run_id)
            if where:
                publish_report(run_id, where)
        if finished:
            refresh(opened)
        return report
