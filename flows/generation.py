"""Generating a run's records: check everything, open the run, ask only what the store lacks,
checkpoint every answer and judgement as it lands.

Plain functions (`preflight`, `plan`, `generate`): the Prefect flows of `flows.evaluate` wrap
them in coarse tasks, the batch rounds of `flows.batches` call them again as jobs end, and the
CLI runs them without Prefect when the Prefect server goes away mid-run.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from core.types import Part
from flows import heartbeat, runs
from flows import plan as planning
from flows.interrupts import STOP
from flows.logs import logger
from flows.request import EvalRequest
from providers.registry import ModelConfig
from storage import layout, open_store
from storage.base import Store
from tasks import batch_jobs
from tasks.secrets import Secret
from tasks.work import WorkItem

DRAIN_S = 8.0  # how long calls in flight may take to land after a stop
ITEMS_PER_WORKER = 32  # a run of fewer items starts one worker actor


@dataclass
class Prepared:
    """A request that passed every check; nothing is written yet."""

    request: EvalRequest
    run_id: str
    store: Store
    configs: dict[str, ModelConfig]
    keys: dict[str, Secret]
    data: dict[str, planning.BenchmarkData]
    manifest: dict[str, Any]

    @property
    def api_models(self) -> dict[str, str]:
        return {m: c.api_model for m, c in self.configs.items()}


@dataclass
class RunPlan:
    prepared: Prepared
    event: str  # new, resumed, extended
    answers: list[WorkItem]
    todo: list[WorkItem]
    judge_todo: list[tuple[WorkItem, list[Part]]]
    states: Counter[str]
    judge_states: Counter[str] = field(default_factory=Counter)
    quarantined: int = 0
    spent_usd: float = 0.0  # what the stored records cost (read only when a cap is set)
    jobs: list[batch_jobs.Job] = field(default_factory=list)  # the run's batch jobs

    def online_part(self) -> RunPlan:
        """The items to ask online: all of them, but those of models in batch mode (a failed
        batch line goes online when the request says so)."""
        request = self.prepared.request
        attempts = batch_jobs.attempts_so_far(self.jobs)

        def online(item: WorkItem) -> bool:
            return not request.batched(item.key.caller, attempts.get(item.request_hash, 0))

        return replace(
            self,
            todo=[i for i in self.todo if online(i)],
            judge_todo=[(j, p) for j, p in self.judge_todo if online(j)],
        )

    def batch_part(self) -> list[tuple[WorkItem, list[Part]]]:
        """The items to send in batch jobs, each with its prompt."""
        online = self.online_part()
        asked = {i.request_hash for i in online.todo}
        asked |= {j.request_hash for j, _ in online.judge_todo}
        data = self.prepared.data
        items = [(i, data[i.key.benchmark].by_id[i.key.sample_id].parts) for i in self.todo]
        items += self.judge_todo
        return [(i, p) for i, p in items if i.request_hash not in asked]


# Checks the CLI already ran in this process, reused by the flow it then starts.
_checked: dict[str, Prepared] = {}


def quick_checks(request: EvalRequest) -> tuple[Store, dict[str, ModelConfig]]:
    """The checks that take milliseconds: models, keys, the store's writability."""
    store = open_store(request.store, s3_endpoint_url=request.s3_endpoint_url)
    configs = planning.resolve_models(request)
    planning.collect_keys(configs)
    store.check_writable()
    return store, configs


def preflight(request: EvalRequest) -> Prepared:
    """Everything that can fail before money is spent: models, keys, the store, the data,
    modalities, the run id. Writes nothing; every failure is one ConfigError line."""
    run_id = request.resolved_run_id()
    request = request.model_copy(update={"run_id": run_id})
    store, configs = quick_checks(request)
    keys = planning.collect_keys(configs)
    configs = planning.describe_endpoints(configs, keys)
    data = planning.load_benchmarks(request)
    planning.check_modalities(request, configs, data)
    check_batch_modes(request, configs)
    manifest = runs.build_manifest(request, run_id, configs, data)
    runs.precheck_run(store, manifest, request.extend)
    prepared = Prepared(request, run_id, store, configs, keys, data, manifest)
    _checked[_cache_key(request)] = prepared
    return prepared


def check_batch_modes(request: EvalRequest, configs: dict[str, ModelConfig]) -> None:
    """Every model asked in batch mode has a provider batch API (one line if not)."""
    if not request.uses_batches():
        return
    from providers.batch import check_batch_support

    for model_id, config in configs.items():
        if request.batched(model_id):
            check_batch_support(config)


def _cache_key(request: EvalRequest) -> str:
    return request.model_dump_json()


def checked(request: EvalRequest) -> Prepared:
    """The preflight of this request: the one the CLI just ran, or a fresh one."""
    request = request.model_copy(update={"run_id": request.resolved_run_id()})
    return _checked.pop(_cache_key(request), None) or preflight(request)


def plan(prepared: Prepared, *, retry_errors: bool = True) -> RunPlan:
    """Open (or resume) the run and find what is left to ask.

    On a local store every record counted as done is read back; undecodable ones are moved
    to quarantine/ and asked again. On S3 the listing's sizes catch empty records
    (`evalfleet status` reads them all).
    """
    event = runs.open_run(prepared.store, prepared.manifest, prepared.data, prepared.request.extend)
    heartbeat.start(prepared.store, prepared.run_id)
    return plan_items(prepared, event, retry_errors=retry_errors)


def plan_items(prepared: Prepared, event: str, *, retry_errors: bool = True) -> RunPlan:
    """What is left to ask of an open run, from one listing of the store. Items in batch jobs
    that have not ended are not left: they are being answered."""
    request, store, run_id = prepared.request, prepared.store, prepared.run_id
    answers = planning.answer_items(request, run_id, prepared.api_models, prepared.data)
    judged = planning.judged_benchmarks(request, prepared.data)
    stages = (layout.ANSWER, layout.JUDGE) if judged else (layout.ANSWER,)
    listing = runs.list_records(store, run_id, stages)
    read = store.writes_are_local
    state = runs.reconcile(store, listing, answers, read=read)
    if judged and not read:  # the judgements to plan need the stored answers' texts
        keys = [k for a, k in state.record_key.items() if a.benchmark in judged]
        blobs = store.get_many(keys)
        state.records.update(
            {k: r for k, b in blobs.items() if (r := runs.decode_record(b or b"")) is not None}
        )
    judge_items = runs.planned_judgements(
        request, run_id, prepared.api_models, prepared.data, state
    )
    judge_state = runs.reconcile(store, listing, [j for j, _ in judge_items], read=read)
    bad = [*state.undecodable, *judge_state.undecodable]
    runs.quarantine(store, run_id, bad)
    wanted = {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}
    spent = runs.stored_spend(store, listing) if request.max_cost_usd is not None else 0.0
    jobs = batch_jobs.read_jobs(store, run_id) if request.uses_batches() else []
    busy = batch_jobs.in_open_jobs(jobs)
    return RunPlan(
        prepared=prepared,
        event=event,
        answers=answers,
        todo=[i for i in state.todo(answers, retry_errors) if i.request_hash not in busy],
        judge_todo=[
            (j, p)
            for j, p in judge_items
            if judge_state.state[j.key] in wanted and j.request_hash not in busy
        ],
        states=Counter(state.state.values()),
        judge_states=Counter(judge_state.state.values()),
        quarantined=len(bad),
        spent_usd=spent,
        jobs=jobs,
    )


def report_plan(run_plan: RunPlan) -> None:
    log = logger()
    states = run_plan.states
    log.info(
        "run %s (%s): %d answers — %d done, %d failed, %d stale, %d missing; %d to request",
        run_plan.prepared.run_id,
        run_plan.event,
        len(run_plan.answers),
        states["done"],
        states["failed"],
        states["stale"],
        states["missing"],
        len(run_plan.todo),
    )
    if run_plan.judge_states or run_plan.judge_todo:
        log.info(
            "judgements of stored answers: %d done, %d to request",
            run_plan.judge_states["done"],
            len(run_plan.judge_todo),
        )
    if states["stale"]:
        log.warning(
            "%d stored answers were asked differently (prompt, settings or dataset changed): "
            "they are kept and asked again",
            states["stale"],
        )
    if run_plan.quarantined:
        log.warning(
            "%d stored records were undecodable: moved to quarantine/ and asked again",
            run_plan.quarantined,
        )


def generate(run_plan: RunPlan) -> dict[str, Any]:
    """Fan the remaining items out on Ray and collect their outcomes.

    Answers of judged benchmarks come back with their text, and their judgements join the
    queue at once. A stop request (first Ctrl-C or SIGTERM) ends submission; see `dispatch`.
    """
    import ray

    from flows.progress import Progress
    from flows.runtime import ensure_ray
    from providers.retry import RetryPolicy
    from tasks.dispatch import Budget, dispatch
    from tasks.worker import CompletionWorker

    run_plan = run_plan.online_part()
    prepared, request = run_plan.prepared, run_plan.prepared.request
    log = logger()
    total = len(run_plan.todo) + len(run_plan.judge_todo)
    if not total:
        log.info("nothing to request: every item already has a stored record")
        return {"submitted": 0, "statuses": {}, "elapsed_s": 0.0, "stopped": False}
    ensure_ray()
    retry = RetryPolicy(
        max_attempts=request.max_attempts,
        max_total_s=request.max_retry_seconds,
        max_rate_limited_s=request.max_rate_limited_seconds,
    )
    budgets = join_rate_budgets(prepared)
    spread = os.environ.get("EVALFLEET_WORKER_PLACEMENT", "SPREAD")

    def make_worker():
        # SPREAD: on a cluster the workers go to different nodes, so one node lost stops
        # only part of the run (its items are sent again to a replacement).
        return CompletionWorker.options(
            max_concurrency=max(64, request.max_in_flight), scheduling_strategy=spread
        ).remote(
            prepared.store.url,
            request.s3_endpoint_url,
            prepared.configs,
            prepared.keys,
            retry,
            budgets,
        )

    # A small run needs no second worker: each starts a process and imports the SDKs.
    count = min(request.workers, -(-total // ITEMS_PER_WORKER))
    workers = [make_worker() for _ in range(count)]
    needed = {(i.key.benchmark, i.key.sample_id) for i in run_plan.todo}
    parts_refs = {
        (name, sample.id): ray.put(sample.parts)
        for name, bench_data in prepared.data.items()
        for sample in bench_data.samples
        if (name, sample.id) in needed
    }
    ray.get([worker.ready.remote() for worker in workers])
    done_before = len(run_plan.answers) - len(run_plan.todo) + run_plan.judge_states["done"]
    progress = Progress(
        total=done_before + total, already_done=done_before, description=f"run {prepared.run_id}"
    )

    def follow_up(outcome):
        if outcome.response is None or outcome.status not in ("ok", "exists"):
            return []
        if request.judge_model and request.batched(request.judge_model):
            return []  # judged in a batch job: the batch rounds plan it
        made = planning.judge_item(
            request,
            prepared.run_id,
            prepared.api_models,
            prepared.data[outcome.key.benchmark],
            outcome.key,
            outcome.store_key,
            outcome.response,
        )
        if made is None:
            return []
        progress.grow(1)
        return [made]

    jobs = [(i, parts_refs[(i.key.benchmark, i.key.sample_id)]) for i in run_plan.todo]
    budget = None
    if request.max_cost_usd is not None:
        budget = Budget(request.max_cost_usd, run_plan.spent_usd, item_cost_model(prepared))
    started = time.monotonic()
    try:
        dispatched = dispatch(
            [*jobs, *run_plan.judge_todo],
            make_worker,
            count,
            started_workers=workers,
            max_in_flight=request.max_in_flight,
            per_model_limit={m: c.max_concurrency for m, c in prepared.configs.items()},
            on_progress=progress.update,
            follow_up=follow_up,
            stop_requested=STOP.requested,
            drain_s=DRAIN_S,
            budget=budget,
        )
    finally:
        progress.close()
        for worker in workers:
            ray.kill(worker)
    summary = summarize_outcomes(dispatched, time.monotonic() - started)
    if dispatched.budget_reached and budget is not None:
        summary["budget_reached"] = (
            f"spent {budget.spent_usd:.4f} USD of {budget.cap_usd:.4f}; "
            f"{dispatched.not_started} items not asked"
        )
        log.warning("run %s: budget reached: %s", prepared.run_id, summary["budget_reached"])
    return summary


def join_rate_budgets(prepared: Prepared) -> dict[str, Any]:
    """The cluster's shared rate budget of each limited model, joined with this run's limits.

    A budget is per (provider, API model, key fingerprint): another run on the cluster using
    the same key shares it, and when its limits are stricter they apply to both (said here).
    """
    from tasks.limiter import BudgetId, join, key_fingerprint, shared_limit

    log = logger()
    budgets: dict[str, Any] = {}
    for model, config in prepared.configs.items():
        if config.rpm is None and config.tpm is None:
            continue
        budget = BudgetId(
            config.provider, config.api_model, key_fingerprint(prepared.keys[model].reveal())
        )
        note = join(budget, prepared.run_id, config.rpm, config.tpm)
        if note:
            log.warning("%s: %s", model, note)
        budgets[model] = shared_limit(budget)
    return budgets


def item_cost_model(prepared: Prepared):
    """Expected USD of one item, for the budget: the mean cost of this model's calls so far
    in the run once there are some, else the a-priori estimate from the registry's prices."""
    from providers.pricing import expected_item_cost_usd, expected_output_tokens

    configs = prepared.configs
    samples = {
        (name, sample.id): sample.parts
        for name, data in prepared.data.items()
        for sample in data.samples
    }
    cache: dict[tuple[str, str, str], float] = {}

    def cost_of(item: WorkItem) -> float:
        key = (item.key.caller, item.key.benchmark, item.key.sample_id)
        cost = cache.get(key)
        if cost is None:
            parts = samples.get((item.key.benchmark, item.key.sample_id), [])
            config = configs[item.key.caller]
            output, _ = expected_output_tokens(config, item.decoding)
            cost = cache[key] = expected_item_cost_usd(config, parts, item.decoding, output)
        return cost

    return cost_of


def summarize_outcomes(dispatched, elapsed: float) -> dict[str, Any]:
    log = logger()
    outcomes = dispatched.outcomes
    statuses = Counter(o.status for o in outcomes)
    errors = Counter(o.error_kind for o in outcomes if o.error_kind)
    cost = Counter()
    for outcome in outcomes:
        cost[outcome.key.stage] += outcome.cost_usd
    log.info(
        "requested %d items in %.1f s (%.1f items/s): %s",
        len(outcomes),
        elapsed,
        len(outcomes) / elapsed if elapsed else 0.0,
        dict(statuses),
    )
    if errors:
        log.warning("terminal errors by kind: %s", dict(errors))
    if statuses.get("write_failed"):
        log.error(
            "%d records could not be checkpointed; they stay missing and a resume will "
            "request them again",
            statuses["write_failed"],
        )
    return {
        "submitted": len(outcomes),
        "statuses": dict(statuses),
        "errors": dict(errors),
        "elapsed_s": elapsed,
        "cost_usd": round(cost[layout.ANSWER], 6),
        "judge_cost_usd": round(cost[layout.JUDGE], 6),
        "stopped": dispatched.stopped,
        "abandoned": dispatched.abandoned,
        "not_started": dispatched.not_started,
        "redispatched": dispatched.redispatched,
    }
