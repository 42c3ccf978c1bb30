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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalfleet.tasks.budget import Budget
from evalfleet.tasks.completions import CompletionWorker, Outcome
from evalfleet.tasks.endpoints import Endpoints
from evalfleet.tasks.turns import Dispatched, Job, Turns

POLL_S = 0.2  # how often the loop looks at a stop request when nothing lands
CLAIM = "here"


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
    here = _Here(
        source=iter(jobs),
        worker=worker,
        max_in_flight=max_in_flight,
        turns=Turns(per_model_limit, budget),
        on_progress=on_progress,
        follow_up=follow_up,
        stop_requested=stop_requested,
        drain_s=drain_s,
    )
    return asyncio.run(here.run())


@dataclass
class _Here:
    source: Iterator[Job]
    worker: CompletionWorker
    max_in_flight: Callable[[], int]
    turns: Turns
    on_progress: Callable[[list[Outcome]], None] | None
    follow_up: Callable[[Outcome], list[Job]] | None
    stop_requested: Callable[[], bool]
    drain_s: float
    in_flight: dict[Any, Job] = field(default_factory=dict)
    endpoints: Endpoints = field(default_factory=Endpoints)
    result: Dispatched = field(default_factory=Dispatched)
    exhausted: bool = False

    def enqueue(self, job: Job) -> None:
        item = job[0]
        if item.key.caller in self.result.down:
            self.result.not_started += 1
            return
        self.turns.push(job)

    def take(self, room: int) -> bool:
        """Queue up to `room` (at least 256) more jobs; False when none are left."""
        more = list(itertools.islice(self.source, max(room, 256)))
        self.exhausted = not more
        for job in more:
            self.enqueue(job)
        return bool(more)

    async def fill(self) -> None:
        """Items, models in turn, up to the limits (as `tasks.dispatch` takes them)."""
        room = self.max_in_flight() - len(self.in_flight)
        picked, refused = self.turns.pick(room, self.take)
        if refused and not picked and not self.in_flight:
            self.result.budget_reached = True
        for job in picked:
            self.in_flight[job[0].key] = job
        if picked:
            await self.worker.submit(CLAIM, picked)

    def landed(self, outcomes: list[Outcome]) -> None:
        result = self.result
        for outcome in outcomes:
            self.in_flight.pop(outcome.key, None)
            caller = outcome.key.caller
            self.turns.settle(outcome.key, (outcome.status, outcome.cost_usd))
            if outcome.status == "write_failed" and not result.write_failed:
                result.write_failed = f"{outcome.store_key}: {outcome.error}"
            if self.endpoints.land(caller, outcome.status, outcome.error_kind, outcome.error):
                result.down[caller] = self.endpoints.down()[caller]
                result.not_started += len(self.turns.drop(caller))
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
            left = self.turns.queued()
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
