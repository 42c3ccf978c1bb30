"""The `aggregate` flow: score a run and write its tables (`engine.scoring.aggregate`), publish them
as artifacts, and bring the leaderboard up to date."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from evalfleet.core.escape import markdown_cell, markdown_rows
from evalfleet.engine.run.request import Blank
from evalfleet.flows.control_plane import attached
from evalfleet.storage import Store, open_store

log = logging.getLogger("evalfleet")


def publish_artifacts(result: dict[str, Any]) -> None:
    """Tables in the Prefect UI (best effort: the tables are in the store either way). The
    Markdown comes from `evalfleet.core.text_tables.markdown`, which escapes."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    run_id = result["run_id"]
    try:
        for name, records in result["summaries"].items():
            key = f"summary-{run_id}-{name}".lower().replace("_", "-").replace(".", "-")
            create_table_artifact(
                table=markdown_rows(records),
                key=key[:100],
                description=markdown_cell(f"{name} summary of run {run_id}"),
            )
        create_markdown_artifact(
            markdown=result["markdown"] or "_no records scored yet_",
            description=markdown_cell(f"evalfleet run {run_id}"),
        )
    except Exception as exc:
        log.warning("could not publish artifacts: %s", exc)


def publish_report(run_id: str, where: str) -> None:
    """The report's address as a link artifact (best effort)."""
    from prefect.artifacts import create_link_artifact

    link = where if "://" in where else Path(where).as_uri()
    try:
        create_link_artifact(
            link=link, link_text=f"report of run {run_id}", description=f"evalfleet run {run_id}"
        )
    except Exception as exc:
        log.warning("could not publish the report's address: %s", exc)


@task(name="score-and-write-tables", cache_policy=NO_CACHE, persist_result=False)
def aggregate_task(store: Store, run_id: str) -> dict[str, Any]:
    # Scoring loads pandas: imported here, after the run's requests, not while it starts.
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.reports.report import write_report_or_warn

    result = aggregate_run(store, run_id)
    publish_artifacts(result)
    result["report"] = write_report_or_warn(store, run_id, result["version"])
    if result["report"]:
        publish_report(run_id, result["report"])
    return result


@flow(name="aggregate", log_prints=True)
def aggregate(run_id: str, store: Blank = "", s3_endpoint_url: Blank = "") -> dict:
    """Score every stored record of a run and write its result tables under results/.

    Args:
        run_id: the run to score (`evalfleet runs` lists them)
        store: where the run is: a directory, or s3://bucket/prefix (empty: the store the
            deployments were served with, $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ... (empty: AWS)
    """
    from evalfleet.flows.leaderboard import refresh

    with attached():
        opened = open_store(store or None, s3_endpoint_url=s3_endpoint_url or None)
        result = aggregate_task(opened, run_id)
        refresh(opened, run_id)
        return result
