"""Flow `evaluate`: plan the run, skip what the store already holds, fan the rest out on Ray."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import ray
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows import plan as planning
from flows.progress import Progress
from flows.request import EvalRequest
from flows.runtime import ensure_ray
from providers.registry import ModelConfig
from providers.retry import RetryPolicy
from storage import open_store
from tasks.dispatch import dispatch
from tasks.work import WorkItem
from tasks.worker import CompletionWorker


@dataclass
class RunPlan:
    run_id: str
    configs: dict[str, ModelConfig]
    loaded: planning.Loaded
    items: list[WorkItem]
    todo: list[WorkItem]
    reconciled: planning.Reconciled
    new_run: bool


def prepare(request: EvalRequest, *, retry_errors: bool = True) -> RunPlan:
    """Everything that can fail before money is spent: models, keys, data, modalities, run id."""
    run_id = request.resolved_run_id()
    configs = planning.resolve_models(request)
    planning.collect_keys(configs)
    loaded = planning.load_benchmarks(request)
    planning.check_modalities(configs, loaded)
    items = planning.build_items(request, run_id, configs, loaded)
    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    manifest = planning.build_manifest(request, run_id, configs, loaded)
    new_run = planning.open_run(store, manifest)
    reconciled = planning.reconcile(store, run_id, items)
    todo = reconciled.todo(items, retry_errors=retry_errors)
    return RunPlan(run_id, configs, loaded, items, todo, reconciled, new_run)


@task(name="plan-run", cache_policy=NO_CACHE, persist_result=False)
def plan_run(request: EvalRequest, retry_errors: bool = True) -> RunPlan:
    logger = get_run_logger()
    run_plan = prepare(request, retry_errors=retry_errors)
    states = Counter(run_plan.reconciled.state.values())
    logger.info(
        "run %s (%s): %d items — %d done, %d failed, %d stale, %d missing; %d to request",
        run_plan.run_id,
        "new" if run_plan.new_run else "resumed",
        len(run_plan.items),
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        len(run_plan.todo),
    )
    if states["stale"]:
        logger.warning(
            "%d stored completions answered a different request (prompt, settings or dataset "
            "revision changed): they are kept and requested again",
            states["stale"],
        )
    return run_plan


@task(name="generate-completions", cache_policy=NO_CACHE, persist_result=False)
def generate_completions(request: EvalRequest, run_plan: RunPlan) -> dict[str, Any]:
    logger = get_run_logger()
    if not run_plan.todo:
        logger.info("nothing to request: every item already has a stored completion")
        return {"submitted": 0, "statuses": {}, "elapsed_s": 0.0}
    ensure_ray()
    keys = planning.collect_keys(run_plan.configs)
    retry = RetryPolicy(max_attempts=request.max_attempts, max_total_s=request.max_retry_seconds)
    workers = [
        CompletionWorker.options(max_concurrency=max(64, request.max_in_flight)).remote(
            request.store, request.s3_endpoint_url, run_plan.configs, keys, retry
        )
        for _ in range(request.workers)
    ]
    needed = {(item.benchmark, item.sample_id) for item in run_plan.todo}
    parts_refs = {
        (benchmark, sample.id): ray.put(sample.parts)
        for benchmark, samples in run_plan.loaded.samples.items()
        for sample in samples
        if (benchmark, sample.id) in needed
    }
    ray.get([worker.ready.remote() for worker in workers])
    progress = Progress(
        total=len(run_plan.items),
        already_done=len(run_plan.items) - len(run_plan.todo),
        description=f"evaluate {run_plan.run_id}",
    )
    started = time.monotonic()
    try:
        outcomes = dispatch(
            run_plan.todo,
            parts_refs,
            workers,
            max_in_flight=request.max_in_flight,
            per_model_limit={m: c.max_concurrency for m, c in run_plan.configs.items()},
            on_progress=progress.update,
        )
    finally:
        progress.close()
        ray.get([w.close.remote() for w in workers])
        for worker in workers:
            ray.kill(worker)
    elapsed = time.monotonic() - started
    statuses = Counter(o.status for o in outcomes)
    errors = Counter(o.error_kind for o in outcomes if o.error_kind)
    logger.info(
        "requested %d items in %.1f s (%.1f items/s): %s",
        len(outcomes),
        elapsed,
        len(outcomes) / elapsed if elapsed else 0.0,
        dict(statuses),
    )
    if errors:
        logger.warning("terminal errors by kind: %s", dict(errors))
    if statuses.get("write_failed"):
        logger.error(
            "%d completions could not be checkpointed; they stay missing and a resume will "
            "request them again",
            statuses["write_failed"],
        )
    return {
        "submitted": len(outcomes),
        "statuses": dict(statuses),
        "errors": dict(errors),
        "elapsed_s": elapsed,
        "cost_usd": sum(o.cost_usd for o in outcomes),
    }


@flow(name="evaluate", retries=1, retry_delay_seconds=10, log_prints=True)
def evaluate(request: EvalRequest, retry_errors: bool = True) -> dict[str, Any]:
    """Plan the run, request only what the store lacks, checkpoint each completion on arrival.

    Safe to retry or re-run with the same run id: stored completions are never requested again.
    """
    run_plan = plan_run(request, retry_errors)
    result = generate_completions(request, run_plan)
    return {"run_id": run_plan.run_id, "store": request.store, **result}
