"""Flow `aggregate`: read a run's completions, score them, compute metrics, write tables."""

from __future__ import annotations

from collections import Counter
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows import plan as planning
from flows.scoring import score_run
from flows.tables import summary_markdown, write_tables
from storage import open_store
from tasks.records import decode_record


@task(name="load-records", cache_policy=NO_CACHE, persist_result=False)
def load_records(run_id: str, store_url: str, s3_endpoint_url: str | None):
    logger = get_run_logger()
    store = open_store(store_url, s3_endpoint_url=s3_endpoint_url)
    run = planning.load_run(store, run_id)
    request, loaded, reconciled = run.request, run.loaded, run.reconciled
    blobs = store.get_many(list(reconciled.record_key.values()))
    records: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    unreadable = 0
    for ident, key in reconciled.record_key.items():
        record = decode_record(blobs.get(key) or b"")
        if record is None:
            unreadable += 1
            continue
        records[ident] = record
    states = Counter(reconciled.state.values())
    logger.info(
        "run %s: %d records read (%d done, %d failed), %d stale, %d missing, %d unreadable",
        run_id,
        len(records),
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        unreadable,
    )
    return request, loaded, records, states, unreadable


@flow(name="aggregate", log_prints=True)
def aggregate(run_id: str, store: str = "./runs", s3_endpoint_url: str | None = None) -> dict:
    """Score every stored completion of a run and write its result tables under results/."""
    request, loaded, records, states, unreadable = load_records(run_id, store, s3_endpoint_url)
    samples_df, summary_df = score_run(request, loaded, records)
    target = open_store(store, s3_endpoint_url=s3_endpoint_url)
    written = write_tables(target, run_id, samples_df, summary_df)
    markdown = summary_markdown(summary_df)
    try:
        create_table_artifact(
            table=summary_df.astype(object).where(summary_df.notna(), None).to_dict("records"),
            key=f"summary-{run_id}".lower().replace("_", "-").replace(".", "-"),
            description=f"evalfleet summary of run {run_id}",
        )
        create_markdown_artifact(markdown=markdown, description=f"evalfleet run {run_id}")
    except Exception as exc:  # artifacts are a convenience; the tables are in the store
        get_run_logger().warning("could not publish artifacts: %s", exc)
    return {
        "run_id": run_id,
        "store": store,
        "summary": summary_df.astype(object).where(summary_df.notna(), None).to_dict("records"),
        "markdown": markdown,
        "written": written,
        "missing": states["missing"],
        "stale": states["stale"],
        "unreadable": unreadable,
    }
