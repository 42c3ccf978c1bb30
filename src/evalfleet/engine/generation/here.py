"""Generating a small run's records in the command's own process, without Ray.

The step `generate` (`engine.generation.online`) does on a cluster, for a run too small to pay
for one (`SMALL_ITEMS`; `api.launch` decides): the same worker class, the same work items and
judgements, the same records and outcome, on this process's event loop. Rate limits draw on
budgets in this process (`tasks.lease.local_port`), named as the cluster's are.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from evalfleet.engine.generation.online import (
    DRAIN_S,
    Jobs,
    finished_outcome,
    item_cost_model,
    nothing_online,
    run_apis,
)
from evalfleet.engine.prepare.plan import RunPlan
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.items import judge_item
from evalfleet.engine.run.outcome import RunOutcome

if TYPE_CHECKING:
    from evalfleet.core.types import Part
    from evalfleet.tasks.completions import Outcome
    from evalfleet.tasks.work import WorkItem

log = logging.getLogger("evalfleet")
SMALL_ITEMS = 200  # answers and judgements: at most this many, and a run needs no cluster


def generate_here(run_plan: RunPlan) -> RunOutcome:
    """Ask the remaining items in this process and collect their outcomes (see
    `engine.generation.online.generate`, which does the same on Ray)."""
    from evalfleet.engine.generation.progress import Progress
    from evalfleet.providers.retry import RetryPolicy
    from evalfleet.tasks.budget import Budget
    from evalfleet.tasks.completions import CompletionWorker, WorkerSetup
    from evalfleet.tasks.here import CLAIM, dispatch_here
    from evalfleet.tasks.run_control import Retunes

    whole, run_plan = run_plan, run_plan.online_part()
    run, request = run_plan.run, run_plan.run.request
    total = len(run_plan.todo) + len(run_plan.judge_todo)
    if not total:
        log.info(nothing_online(whole))
        return RunOutcome(run.run_id)
    retry = RetryPolicy(
        max_attempts=request.max_attempts,
        max_total_s=request.max_retry_seconds,
        max_rate_limited_s=request.max_rate_limited_seconds,
    )
    index, block = samples_here(run, run_plan.todo.samples())
    setup = WorkerSetup(
        store_url=run.store.url,
        s3_endpoint_url=request.s3_endpoint_url,
        models=run.configs,
        keys=run.keys,
        retry=retry,
        budgets=local_budgets(run),
        samples=[block],
        in_process=True,
    )
    worker = CompletionWorker(run_apis(run), claim=(CLAIM, setup))
    done_before = run_plan.planned - len(run_plan.todo) + run_plan.judge_states["done"]
    progress = Progress(
        total=done_before + total, already_done=done_before, description=f"run {run.run_id}"
    )

    def follow_up(outcome: Outcome) -> list[tuple[WorkItem, list[Part]]]:
        if outcome.response is None or outcome.status not in ("ok", "exists"):
            return []
        made = [
            judgement
            for judge in run.judges
            if not request.batched(judge)
            if (
                judgement := judge_item(
                    run, judge, outcome.key, outcome.store_key, outcome.response
                )
            )
        ]
        progress.grow(len(made))
        return made

    jobs = Jobs(
        ((i, index[(i.key.benchmark, i.key.sample_id)]) for i in run_plan.todo),
        len(run_plan.todo),
        run_plan.judge_todo,
    )
    budget = None
    if request.max_cost_usd is not None:
        budget = Budget(request.max_cost_usd, run_plan.spent_usd, item_cost_model(run))
    retunes = Retunes(run.store, run.run_id, request.max_in_flight)
    started = time.monotonic()
    try:
        dispatched = dispatch_here(
            jobs,
            worker,
            max_in_flight=retunes.max_in_flight,
            per_model_limit={m: c.max_concurrency for m, c in run.configs.items()},
            on_progress=progress.update,
            follow_up=follow_up,
            stop_requested=STOP.requested,
            drain_s=DRAIN_S,
            budget=budget,
        )
    finally:
        progress.close()
    return finished_outcome(run, dispatched, budget, time.monotonic() - started)


def samples_here(
    run: ResolvedRun, samples: list[tuple[str, str]]
) -> tuple[dict[tuple[str, str], tuple[int, int]], list[Any]]:
    """Every sample's parts in one block (the worker reads them in this process)."""
    where: dict[tuple[str, str], tuple[int, int]] = {}
    block: list[Any] = []
    for name, sample_id in samples:
        where[(name, sample_id)] = (0, len(block))
        block.append(run.data[name].by_id[sample_id].parts)
    return where, block


def local_budgets(run: ResolvedRun) -> dict[str, Any]:
    """This process's budget of each limited model, joined with the run's limits (named as
    the cluster's actor would be: a judge and a model sharing a key share it)."""
    from evalfleet.tasks.lease import BudgetId, key_fingerprint, local_port

    budgets: dict[str, Any] = {}
    for model, config in run.configs.items():
        if config.rpm is None and config.tpm is None:
            continue
        fingerprint = key_fingerprint(run.keys[model].reveal())
        port = local_port(BudgetId(config.provider, config.api_model, fingerprint).name)
        port.budget.claim(run.run_id, config.rpm, config.tpm)
        budgets[model] = port
    return budgets


def planned_at_most(request: Any) -> int | None:
    """The most items (answers and judgements) a request can plan, known before its data is
    read: only when it has a --limit (None otherwise)."""
    from evalfleet.benchmarks import registry
    from evalfleet.benchmarks.protocols import Sampling, decodings

    if request.limit is None:
        return None
    sampling = Sampling(request.temperature, request.top_p, request.max_tokens, request.base_seed)
    per_model = 0
    for name in request.benchmarks:
        bench = registry.get(name)
        protocol = request.protocol or bench.protocol
        options = bench.options(request.benchmark_options.get(name))
        per_model += bench.samples_at_most(request.limit, options) * len(
            decodings(protocol, request.epochs or bench.epochs, sampling)
        )
    answers = per_model * len(request.models)
    return answers * (1 + len(request.judges()))
