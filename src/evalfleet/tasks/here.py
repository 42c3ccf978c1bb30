"""A small run's items, asked in this process: the worker of `tasks.completions` on this
process's event loop, fed as `tasks.dispatch` feeds its actors.

What a run too small to pay for a cluster does (`engine.generation.here`): the same worker, the
same records, the same limits (per model, overall, the cost cap, a model whose endpoint is
down, a record that cannot be stored, a stop request), without Ray.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from evalfleet.tasks.budget import Budget
from evalfleet.tasks.completions import CompletionWorker, Outcome
from evalfleet.tasks.endpoints import Endpoints
from evalfleet.tasks.work import WorkItem

Job = tuple[WorkItem, Any]
POLL_S = 0.2  # how often the loop looks at a stop request when nothing lands
CLAIM = "here"


@dataclass
class Dispatched:
    """What happened, in the counts `tasks.dispatch.Dispatched` keeps (a run in this process
    loses no worker and no Ray head: those stay at zero)."""

    submitted: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    cost_usd: Counter[str] = field(default_factory=Counter)
    stopped: bool = False
    abandoned: int = 0
    not_started: int = 0
    redispatched: int = 0
    budget_reached: bool = False
    write_failed: str = ""
    down: dict[str, str] = field(default_factory=dict)
    head_lost: str = ""

    def count(self, outcomes: list[Outcome]) -> None:
        self.submitted += len(outcomes)
        for outcome in outcomes:
            self.statuses[outcome.status] += 1
            if outcome.error_kind:
                self.errors[outcome.error_kind] += 1
            self.cost_usd[outcome.key.stage] += outcome.cost_usd


def dispatch_here(
    jobs: Iterable[Job],
    worker: CompletionWorker,
    *,
    max_in_flight: Callable[[], int],
    per_model_limit: dict[str, int],
    on_progress: Callable[[list[Outcome]], None] | None = None,
    follow_up: Callable[[Outcome], list[Job]] | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    drain_s: float = 10.0,
    budget: Budget | None = None,
) -> Dispatched:
    """Ask every job on `worker` (claimed as `CLAIM`), never more than the limits in flight;
    `max_in_flight` is read before each fill (a retune takes effect at once)."""
    return asyncio.run(
        _Here(
            jobs,
            worker,
            max_in_flight,
            per_model_limit,
            on_progress,
            follow_up,
            stop_requested,
            drain_s,
            budget,
        ).run()
    )


class _Here:
    def __init__(
        self,
        jobs,
        worker,
        max_in_flight,
        per_model_limit,
        on_progress,
        follow_up,
        stop_requested,
        drain_s,
        budget,
    ) -> None:
        self.source = iter(jobs)
        self.worker: CompletionWorker = worker
        self.max_in_flight = max_in_flight
        self.per_model_limit = per_model_limit
        self.on_progress = on_progress
        self.follow_up = follow_up
        self.stop_requested = stop_requested
        self.drain_s = drain_s
        self.budget: Budget | None = budget
        self.queues: dict[str, deque[Job]] = {}
        self.busy: Counter[str] = Counter()
        self.in_flight: dict[Any, Job] = {}
        self.endpoints = Endpoints()
        self.result = Dispatched()
        self.exhausted = False

    def enqueue(self, job: Job) -> None:
        item = job[0]
        if item.key.caller in self.result.down:
            self.result.not_started += 1
            return
        self.queues.setdefault(item.key.caller, deque()).append(job)

    def limit(self, model: str) -> int:
        most = self.per_model_limit.get(model, 1 << 30)
        probe = self.budget.limit(model) if self.budget is not None else None
        return most if probe is None else min(most, probe)

    def pick(self) -> list[Job]:
        """Items, models in turn, up to the limits (as `tasks.dispatch` takes them)."""
        room = self.max_in_flight() - len(self.in_flight)
        picked: list[Job] = []
        refused: set[str] = set()
        while room > 0:
            progressed = False
            for model, queue in self.queues.items():
                if not queue or model in refused or self.busy[model] >= self.limit(model):
                    continue
                item, prompt = queue[0]
                if self.budget is not None and not self.budget.reserve(item, prompt):
                    refused.add(model)
                    continue
                picked.append(queue.popleft())
                self.busy[model] += 1
                room -= 1
                progressed = True
                if room <= 0:
                    break
            if progressed:
                continue
            if refused or self.exhausted:
                break
            more = list(itertools.islice(self.source, max(room, 256)))
            self.exhausted = not more
            for job in more:
                self.enqueue(job)
        if refused and not picked and not self.in_flight:
            self.result.budget_reached = True
        return picked

    async def fill(self) -> None:
        picked = self.pick()
        for job in picked:
            self.in_flight[job[0].key] = job
        if picked:
            await self.worker.submit(CLAIM, picked)

    def landed(self, outcomes: list[Outcome]) -> None:
        result = self.result
        for outcome in outcomes:
            self.in_flight.pop(outcome.key, None)
            caller = outcome.key.caller
            self.busy[caller] -= 1
            if self.budget is not None:
                self.budget.settle(outcome.key, (outcome.status, outcome.cost_usd))
            if outcome.status == "write_failed" and not result.write_failed:
                result.write_failed = f"{outcome.store_key}: {outcome.error}"
            if self.endpoints.land(caller, outcome.status, outcome.error_kind, outcome.error):
                result.down[caller] = self.endpoints.down()[caller]
                result.not_started += len(self.queues.pop(caller, ()))
        result.count(outcomes)
        if self.follow_up is not None:
            for outcome in outcomes:
                for job in self.follow_up(outcome):
                    self.enqueue(job)
        if self.on_progress is not None and outcomes:
            self.on_progress(outcomes)

    def sending(self) -> bool:
        return not (self.stop_requested() or self.result.write_failed)

    async def run(self) -> Dispatched:
        result = self.result
        try:
            if self.sending():
                await self.fill()
            while self.in_flight and not self.stop_requested():
                self.landed(await self.worker.collect(CLAIM, POLL_S))
                if self.sending():
                    await self.fill()
            left = sum(len(q) for q in self.queues.values())
            left += 0 if self.exhausted else sum(1 for _ in self.source)
            ended = result.budget_reached or bool(result.write_failed)
            result.stopped = bool(self.in_flight or (left and not ended))
            deadline = time.monotonic() + self.drain_s
            while self.in_flight and time.monotonic() < deadline:
                self.landed(await self.worker.collect(CLAIM, POLL_S))
            if self.in_flight:
                never = len(await self.worker.unsent(CLAIM, list(self.in_flight)))
                result.not_started += never
                result.abandoned += len(self.in_flight) - never
            result.not_started += left
            result.down.update(self.endpoints.down())
        finally:
            await self.worker.unclaim(CLAIM)
        return result
