"""Aggregating: read a run's records, score them, compute each benchmark's metrics, write
versioned tables. `aggregate_run` is the work; the `aggregate` flow wraps it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows import runs
from flows.logs import logger
from flows.request import default_store
from storage import open_store


def aggregate_run(
    run_id: str, store: str = "./runs", s3_endpoint_url: str | None = None
) -> dict[str, Any]:
    """Score every stored record of a run and write its tables under a new results version."""
    from flows.scoring import score_run
    from flows.tables import markdown, summaries, write_results

    log = logger()
    target = open_store(store, s3_endpoint_url=s3_endpoint_url)
    run = runs.load_run(target, run_id)
    states = Counter(run.answer_state.state.values())
    unreadable = len(run.answer_state.undecodable) + len(run.judge_state.undecodable)
    log.info(
        "run %s: %d answers done, %d failed, %d stale, %d missing, %d unreadable",
        run_id,
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        unreadable,
    )
    scored = score_run(run)
    tables = summaries(scored, {name: d.benchmark for name, d in run.data.items()})
    version, written = write_results(target, run_id, scored, tables)
    judge_states = Counter(run.judge_state.state.values())
    return {
        "run_id": run_id,
        "store": store,
        "version": version,
        "summaries": {name: _records(t) for name, t in tables.items()},
        "usage": _records(scored.usage),
        "markdown": "\n\n".join(f"### {n}\n\n{markdown(t)}" for n, t in tables.items()),
        "written": written,
        "missing": states["missing"],
        "stale": states["stale"],
        "unreadable": unreadable,
        "judgements": dict(judge_states),
    }


def _records(frame) -> list[dict[str, Any]]:
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def publish_artifacts(result: dict[str, Any]) -> None:
    """Tables in the Prefect UI (best effort: the tables are in the store either way)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    run_id = result["run_id"]
    try:
        for name, records in result["summaries"].items():
            key = f"summary-{run_id}-{name}".lower().replace("_", "-").replace(".", "-")
            create_table_artifact(
                table=records, key=key[:100], description=f"{name} summary of run {run_id}"
            )
        create_markdown_artifact(
            markdown=result["markdown"] or "_no records scored yet_",
            description=f"evalfleet run {run_id}",
        )
    except Exception as exc:
        logger().warning("could not publish artifacts: %s", exc)


DEFAULT_STORE = default_store()


@task(name="score-and-write-tables", cache_policy=NO_CACHE, persist_result=False)
def aggregate_task(run_id: str, store: str, s3_endpoint_url: str | None) -> dict[str, Any]:
    result = aggregate_run(run_id, store, s3_endpoint_url)
    publish_artifacts(result)
    return result


@flow(name="aggregate", log_prints=True)
def aggregate(run_id: str, store: str = DEFAULT_STORE, s3_endpoint_url: str | None = None) -> dict:
    """Score every stored record of a run and write its result tables under results/.

    Args:
        run_id: the run to score (`evalfleet runs` lists them)
        store: where the run is: an absolute directory, or s3://bucket/prefix
        s3_endpoint_url: for MinIO, R2, Ceph, ... (empty: AWS)
    """
    from flows.leaderboard import refresh

    result = aggregate_task(run_id, store, s3_endpoint_url)
    refresh(store, s3_endpoint_url)
    return result
