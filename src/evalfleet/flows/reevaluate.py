"""The `reevaluate` flow. Mode "new": evaluate, one run each, the models the providers list
that this store has not evaluated yet (`evalfleet.engine.reevaluate` decides which), then
refresh the leaderboard. Mode "ranked": re-run what the leaderboard ranks on the item sets it
was ranked on (`evalfleet.reports.ranked`), refresh the leaderboard and run drift, notifying
the configured webhook. Meant for a schedule (see deployments/serve.py)."""

from __future__ import annotations

from datetime import UTC, datetime
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
    """Evaluate the models the providers list that were not evaluated before, or (mode
    "ranked") re-run what is ranked and report what drifted.

    Args:
        request: which providers and names to watch, what to run them on, where to keep it
    """
    with attached():
        store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
        if request.mode == "ranked":
            return rerun_ranked(request, store)
        job = Reevaluation(request, store)
        job.discover()
        if job.baseline_only():
            return job.report(baseline=True)
        for candidate in job.candidates():
            try:
                result: Any = evaluate_and_aggregate(job.eval_request(candidate))  # a JobResult
                job.done(candidate, result)
            except RunFailed as exc:  # kept pending: the next reevaluation resumes its run
                print(f"{candidate.model_id} was not evaluated: {exc}")
        if job.evaluated:
            refresh(store)
        return job.report()


def rerun_ranked(request: ReevaluateRequest, store: Any) -> dict[str, Any]:
    """Each ranked model again (asked fresh), the leaderboard, then drift and its webhook."""
    from evalfleet.reports import drift
    from evalfleet.reports.ranked import ranked_requests

    stamp = datetime.now(UTC).strftime("%Y%m%d")
    where = {"store": request.store, "s3_endpoint_url": request.s3_endpoint_url}
    runs = []
    for asked in ranked_requests(store, request.models, stamp):
        try:
            evaluate_and_aggregate(asked.model_copy(update=where))
            runs.append(asked.run_id)
        except RunFailed as exc:  # the same run id resumes it on a retry of this flow run
            print(f"{asked.run_id} did not finish: {exc}")
    refresh(store)
    rows = drift.drift_rows(store)
    drift.write_drift(store, rows)
    doc = drift.document(store, rows)
    send_drift(doc, request.notify_url, request.notify_block)
    return {"runs": runs, "flagged": doc["flagged"]}


def send_drift(
    doc: dict[str, Any], notify_url: str | None = None, notify_block: str | None = None
) -> None:
    """Drift's document to the webhook URL, and to the Prefect block named BLOCK-TYPE/NAME: a
    `Webhook` block (prefect.blocks.webhook) gets the document itself as JSON, one POST; a
    notification block (custom-webhook, slack-webhook, ...) its text. Nothing when nothing is
    flagged."""
    from evalfleet.reports import drift

    if notify_url:
        drift.notify(notify_url, doc)
    if not (notify_block and doc["flagged"]):
        return
    from prefect.blocks.core import Block
    from prefect.blocks.webhook import Webhook
    from prefect.utilities.asyncutils import run_coro_as_sync

    block: Any = Block.load(notify_block)  # loaded sync
    if isinstance(block, Webhook):
        response: Any = run_coro_as_sync(block.call(doc))
        if response.status_code >= 400:
            raise drift.NotifyError(
                f"the {notify_block} block's webhook answered HTTP {response.status_code}: "
                f"check the block; the drift table was written to {drift.DRIFT_KEY}"
            )
    else:
        block.notify(doc["text"], subject="evalfleet drift")
