"""Generating a run's records: fan the planned items out on Ray worker actors, checkpoint
every answer and judgement as it lands, and send each answer's judgement as soon as it is
stored. A stop request (first Ctrl-C or SIGTERM) ends submission; see `evalfleet.tasks.dispatch`."""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from evalfleet.core import collector
from evalfleet.engine.prepare.plan import RunPlan
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.run.interrupts import STOP
from evalfleet.engine.run.items import judge_item
from evalfleet.engine.run.outcome import RunOutcome
from evalfleet.storage import layout
from evalfleet.tasks.work import WorkItem

if TYPE_CHECKING:
    from evalfleet.core.types import Part
    from evalfleet.tasks.budget import Budget
    from evalfleet.tasks.completions import Outcome
    from evalfleet.tasks.turns import Dispatched

log = logging.getLogger("evalfleet")
DRAIN_S = 8.0  # how long calls in flight may take to land after a stop
# A run of fewer items starts one worker actor. A worker costs about a CPU-second to start
# (a process, Ray, the SDK) and one answers ~200 items/s from the simulator on this 2-core
# host: the demo's 180 items took 0.9 s on one, 0.75 s on two, for 1.2 CPU-s more.
ITEMS_PER_WORKER = 256
BLOCK_SAMPLES = 256  # samples per object put for the workers ...
BLOCK_BYTES = 8 << 20  # ... or fewer, when their media are this large


def generate(run_plan: RunPlan) -> RunOutcome:
    """Fan the remaining items out on Ray and collect their outcomes.

    Answers of judged benchmarks come back with their text, and their judgements join the
    queue at once. A stop request (first Ctrl-C or SIGTERM) ends submission; see `dispatch`.
    """

    from evalfleet.engine.generation.progress import Progress
    from evalfleet.engine.generation.ray_session import ensure_ray, watch_head
    from evalfleet.providers.retry import RetryPolicy
    from evalfleet.tasks.budget import Budget
    from evalfleet.tasks.dispatch import dispatch
    from evalfleet.tasks.pool import Crew
    from evalfleet.tasks.run_control import Retunes
    from evalfleet.tasks.worker import WorkerSetup

    whole, run_plan = run_plan, run_plan.online_part()
    run, request = run_plan.run, run_plan.run.request
    total = len(run_plan.todo) + len(run_plan.judge_todo)
    if not total:
        log.info(nothing_online(whole))
        return RunOutcome(run.run_id)
    ensure_ray()
    retry = RetryPolicy(
        max_attempts=request.max_attempts,
        max_total_s=request.max_retry_seconds,
        max_rate_limited_s=request.max_rate_limited_seconds,
    )
    # The samples' parts go to the object store once, in blocks; workers get them by place.
    index, parts_refs = run.samples_placed or put_samples(run, run_plan.todo.samples())
    setup = WorkerSetup(
        store_url=run.store.url,
        s3_endpoint_url=request.s3_endpoint_url,
        models=run.configs,
        keys=run.keys,
        retry=retry,
        budgets=join_rate_budgets(run),
        samples=parts_refs,
    )
    crew = Crew(setup, run_apis(run))
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
            if not request.batched(judge)  # judged in a batch job: the batch rounds plan it
            if (
                judgement := judge_item(
                    run, judge, outcome.key, outcome.store_key, outcome.response
                )
            )
        ]
        progress.grow(len(made))
        return made

    # The answers are made as the dispatcher takes them, a block at a time (see `Jobs`).
    jobs = Jobs(
        ((i, index[(i.key.benchmark, i.key.sample_id)]) for i in run_plan.todo),
        len(run_plan.todo),
        run_plan.judge_todo,
    )
    budget = None
    if request.max_cost_usd is not None:
        budget = Budget(request.max_cost_usd, run_plan.spent_usd, item_cost_model(run))
    try:
        with watch_head() as head:  # a head lost ends the run (`evalfleet.tasks.head`)
            # ended by dispatch; a head lost while they start ends the run there at once
            workers = crew.gather(workers_for(request.workers, total), head)
            started = time.monotonic()
            dispatched = dispatch(
                jobs,
                crew,
                workers,
                # `evalfleet limits` may retune it (`tasks.run_control`)
                max_in_flight=Retunes(run.store, run.run_id, request.max_in_flight).max_in_flight,
                per_model_limit={m: c.max_concurrency for m, c in run.configs.items()},
                on_progress=progress.update,
                follow_up=follow_up,
                stop_requested=STOP.requested,
                drain_s=DRAIN_S,
                budget=budget,
                head=head,
            )
    finally:
        progress.close()
    outcome = finished_outcome(run, dispatched, budget, time.monotonic() - started)
    outcome.ray_lost = dispatched.head_lost or None
    return outcome


def finished_outcome(
    run: ResolvedRun, dispatched: Dispatched, budget: Budget | None, elapsed_s: float
) -> RunOutcome:
    """How a dispatch ended, in the run's words (here or on Ray alike): its counts, the cap's
    stop line, a failed store and the endpoints that were down."""
    outcome = summarize_outcomes(run.run_id, dispatched, elapsed_s)
    if dispatched.budget_reached and budget is not None:
        from evalfleet.engine.prepare.capping import budget_stop

        outcome.budget_reached, outcome.finish_cap_usd = budget_stop(
            run, budget.spent_usd, budget.cap_usd
        )
        log.warning("run %s: budget reached: %s", run.run_id, outcome.budget_reached)
    outcome.store_failed = dispatched.write_failed or None
    outcome.endpoints_down = {
        caller: f"{run.configs[caller].endpoint()} ({error})"
        for caller, error in dispatched.down.items()
    }
    return outcome


@collector.paused()  # pickling 40 MB of samples: the GC walked them all again and again
def put_samples(
    run: ResolvedRun, samples: list[tuple[str, str]]
) -> tuple[dict[tuple[str, str], tuple[int, int]], list[Any]]:
    """The parts of `samples` in the object store, in blocks of up to `BLOCK_SAMPLES`
    samples or about `BLOCK_BYTES` of media (a put costs about a millisecond, so 83,000 of
    them held a million-answer run back a minute): each sample's (block, index in it), and
    the blocks' refs."""
    import ray

    where: dict[tuple[str, str], tuple[int, int]] = {}
    refs: list[Any] = []
    block: list[Any] = []
    size = 0
    for name, sample_id in samples:
        parts = run.data[name].by_id[sample_id].parts
        where[(name, sample_id)] = (len(refs), len(block))
        block.append(parts)
        size += sum(len(p.data or b"") + len(p.text or "") for p in parts)
        if len(block) >= BLOCK_SAMPLES or size >= BLOCK_BYTES:
            refs.append(ray.put(block))
            block, size = [], 0
    if block:
        refs.append(ray.put(block))
    return where, refs


class Jobs:
    """What a run asks, for `dispatch`: the judgements of stored answers, then its answers as
    an iterator (made one at a time) with their number."""

    def __init__(
        self,
        answers: Iterator[tuple[WorkItem, Any]],
        count: int,
        judgements: list[tuple[WorkItem, Any]],
    ) -> None:
        self.answers, self.count, self.judgements = answers, count, judgements

    def __len__(self) -> int:
        return self.count + len(self.judgements)

    def __iter__(self) -> Iterator[tuple[WorkItem, Any]]:
        return itertools.chain(self.judgements, self.answers)


def workers_for(requested: int, items: int) -> int:
    """A small run needs fewer workers: each one started costs a process and the SDKs."""
    return max(1, min(requested, -(-items // ITEMS_PER_WORKER)))


def prestart_workers(run: ResolvedRun) -> None:
    """Start the run's worker actors now, without waiting, so that their start-up (a
    process, Ray, the SDK imports) overlaps the flow run's creation and the planning.
    `generate` takes them (`tasks.pool`). None on a cluster that keeps warm workers: the run
    claims those."""
    from evalfleet.engine.generation.ray_session import ensure_ray
    from evalfleet.tasks.pool import keeps_warm_workers, prestart

    planned = len(run.models) * sum(len(b.samples) * len(b.decodings) for b in run.data.values())
    ensure_ray()
    if keeps_warm_workers():
        return
    prestart(workers_for(run.request.workers, planned), run_apis(run))


def place_samples(run: ResolvedRun) -> None:
    """Every sample of the run in the object store now, while the command waits for its
    Prefect server (at 83,334 samples, a second or two that otherwise came between the plan
    and the first request); `generate` takes them. All of them: which ones the run still
    needs is known once it is planned, and a resumed run needs nearly all. None for a run
    whose every model answers in batch jobs (it asks nothing online at first)."""
    if all(run.request.batched(model) for model in run.models):
        return
    every = [(name, s.id) for name, data in run.data.items() for s in data.samples]
    run.samples_placed = put_samples(run, every)


def run_apis(run: ResolvedRun) -> list[str]:
    """The wire APIs of a run's models and judges: the SDKs its workers import."""
    return sorted({config.api for config in run.configs.values()})


def join_rate_budgets(run: ResolvedRun) -> dict[str, Any]:
    """The cluster's shared rate budget of each limited model, joined with this run's limits.

    A budget is per (provider, API model, key fingerprint): another run on the cluster using
    the same key shares it, and when its limits are stricter they apply to both (said here).
    """
    from evalfleet.tasks.limiter import BudgetId, join, key_fingerprint, shared_limit

    budgets: dict[str, Any] = {}
    for model, config in run.configs.items():
        if config.rpm is None and config.tpm is None:
            continue
        budget = BudgetId(
            config.provider, config.api_model, key_fingerprint(run.keys[model].reveal())
        )
        note = join(budget, run.run_id, config.rpm, config.tpm)
        if note:
            log.warning("%s: %s", model, note)
        budgets[model] = shared_limit(budget)
    return budgets


def item_cost_model(run: ResolvedRun) -> Callable[[WorkItem, Any], float]:
    """Expected USD of one item before any call of its model landed, for the budget: what
    `evalfleet run --estimate` expects of it (`engine.prepare.estimate.expected_item_cost`)."""
    from evalfleet.engine.prepare.estimate import expected_item_cost

    samples = {
        (name, sample.id): sample.parts
        for name, data in run.data.items()
        for sample in data.samples
    }
    cache: dict[tuple[str, str, str, str], float] = {}

    def cost_of(item: WorkItem, prompt: Any) -> float:
        key = item.key
        if isinstance(prompt, list):  # a judgement: its grader prompt, each one its own
            return expected_item_cost(run, key, prompt, item.decoding)
        cached = (key.caller, key.benchmark, key.sample_id, key.stage)
        cost = cache.get(cached)
        if cost is None:
            parts = samples.get((key.benchmark, key.sample_id), [])
            cost = cache[cached] = expected_item_cost(run, key, parts, item.decoding)
        return cost

    return cost_of


def summarize_outcomes(run_id: str, dispatched: Dispatched, elapsed: float) -> RunOutcome:
    statuses, errors = dispatched.statuses, dispatched.errors
    log.info(
        "requested %d items in %.1f s (%.1f items/s): %s",
        dispatched.submitted,
        elapsed,
        dispatched.submitted / elapsed if elapsed else 0.0,
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
    return RunOutcome(
        run_id,
        submitted=dispatched.submitted,
        statuses=Counter(statuses),
        errors=Counter(errors),
        elapsed_s=elapsed,
        cost_usd=round(dispatched.cost_usd[layout.ANSWER], 6),
        judge_cost_usd=round(dispatched.cost_usd[layout.JUDGE], 6),
        stopped=dispatched.stopped,
        abandoned=dispatched.abandoned,
        not_started=dispatched.not_started,
        redispatched=dispatched.redispatched,
    )


def nothing_online(whole: RunPlan) -> str:
    """What the log says when nothing is left to ask online: either nothing is left at all,
    or what is left goes to the batch API (its models named), which the batch step asks."""
    left = len(whole.todo) + len(whole.judge_todo)
    if not left:
        return "nothing to request: every item already has a stored record"
    models = sorted(
        {i.key.caller for i in whole.todo} | {j.key.caller for j, _ in whole.judge_todo}
    )
    return (
        f"nothing to request online: the {left} items without a record ({len(whole.todo)} "
        f"answers, {len(whole.judge_todo)} judgements) go to the batch API of "
        f"{', '.join(models)}: the batch step asks them next (or collects them from the batch jobs "
        "already open)"
    )
