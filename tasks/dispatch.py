"""Feed work items to the worker actors with bounded concurrency, per model and overall.

Items go to a worker in chunks (`CompletionWorker.submit`) and come back in chunks as they
land (`collect`, one outstanding per worker): a few actor calls per dozens of items. Models
take turns, so one slow or rate-limited model never starves the others. Judgements join the
queue as the answers they grade arrive (`follow_up`). A stop request (Ctrl-C, SIGTERM) ends
submission at once; calls already in flight get `drain_s` seconds to land (their records are
checkpointed by the workers), then the rest are cancelled.

A worker lost with its node is replaced, and the items it had in flight are sent again
marked `recheck`: the new worker first looks for a record the lost one may have stored, so
nothing stored is asked twice. A budget (`--max-cost-usd`) stops submission before the
spend plus what is in flight could pass it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
import ray.exceptions

from core.types import Part
from storage.layout import ItemKey
from tasks.pool import Crew
from tasks.work import WorkItem
from tasks.worker import ClaimLost, Outcome

ProgressCallback = Callable[[list[Outcome]], None]
FollowUp = Callable[[Outcome], list[tuple[WorkItem, list[Part]]]]
log = logging.getLogger("evalfleet.dispatch")

WORKER_LOST = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
CHUNK = 64  # items per submit
POLL_S = 0.2  # how often the loop looks at a stop request when nothing lands


class Budget:
    """What a run may still spend: stops submission before spend + in flight passes the cap."""

    def __init__(self, cap_usd: float, spent_usd: float, cost_of: Callable[[WorkItem], float]):
        self.cap_usd = cap_usd
        self.spent_usd = spent_usd
        self._cost_of = cost_of
        self._in_flight: dict[Any, float] = {}
        self.in_flight_usd = 0.0  # the sum of `_in_flight`, kept as calls come and go
        self._seen: dict[str, tuple[float, int]] = {}  # caller -> (USD, calls) this run

    def expected(self, item: WorkItem) -> float:
        """The mean cost of this caller's calls so far (once there are a few), else the
        a-priori estimate."""
        total, calls = self._seen.get(item.key.caller, (0.0, 0))
        return total / calls if calls >= 3 else self._cost_of(item)

    def admit(self, item: WorkItem) -> float | None:
        """The expected cost of sending `item`, or None if it could pass the cap."""
        cost = self.expected(item)
        if self.spent_usd + self.in_flight_usd + cost > self.cap_usd:
            return None
        return cost

    def track(self, ref: Any, cost: float) -> None:
        self._in_flight[ref] = cost
        self.in_flight_usd += cost

    def settle(self, ref: Any, outcome: Outcome | None) -> None:
        self.in_flight_usd -= self._in_flight.pop(ref, 0.0)
        if outcome is None:  # lost with its worker: sent again, paid when it lands
            return
        self.spent_usd += outcome.cost_usd
        if outcome.status in ("ok", "failed"):
            total, calls = self._seen.get(outcome.key.caller, (0.0, 0))
            self._seen[outcome.key.caller] = (total + outcome.cost_usd, calls + 1)


@dataclass
class Dispatched:
    """What happened, in counts: the outcomes themselves are handed to `on_progress` and
    `follow_up` as they land and not kept (a run of a million items would hold them all)."""

    submitted: int = 0  # outcomes received
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # terminal errors by kind
    cost_usd: Counter[str] = field(default_factory=Counter)  # by stage
    stopped: bool = False  # a stop was requested before everything was submitted
    abandoned: int = 0  # in flight when the drain time ran out (nothing stored for them)
    not_started: int = 0
    redispatched: int = 0  # sent again after their worker was lost
    budget_reached: bool = False

    def count(self, outcomes: list[Outcome]) -> None:
        self.submitted += len(outcomes)
        for outcome in outcomes:
            self.statuses[outcome.status] += 1
            if outcome.error_kind:
                self.errors[outcome.error_kind] += 1
            self.cost_usd[outcome.key.stage] += outcome.cost_usd


@dataclass
class _Worker:
    actor: Any
    outstanding: dict[ItemKey, tuple[WorkItem, Any]] = field(default_factory=dict)


def dispatch(
    jobs: Sequence[tuple[WorkItem, Any]],
    crew: Crew,
    workers: list[Any],
    *,
    max_in_flight: int,
    per_model_limit: dict[str, int],
    on_progress: ProgressCallback | None = None,
    follow_up: FollowUp | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    drain_s: float = 10.0,
    budget: Budget | None = None,
) -> Dispatched:
    """Run every job on the crew's `workers` (claimed, see `tasks.pool`); never more than
    the limits in flight. The workers, replacements included, are ended with the crew.

    A job is (item, prompt): the prompt is a sample's index in the workers' `samples` or,
    for a judgement, the list of its parts itself.
    """
    pool = [_Worker(w) for w in workers]
    queues: dict[str, deque[tuple[WorkItem, Any]]] = {}

    def enqueue(item: WorkItem, prompt: Any, front: bool = False) -> None:
        queue = queues.setdefault(item.key.caller, deque())
        (queue.appendleft if front else queue.append)((item, prompt))

    for item, prompt in jobs:
        enqueue(item, prompt)
    busy: Counter[str] = Counter()  # in flight per model
    retired: list[Any] = []  # replaced workers, ended with the others
    collecting: dict[Any, int] = {}  # a collect call in flight -> its worker
    result = Dispatched()

    def in_flight() -> int:
        return sum(len(w.outstanding) for w in pool)

    def fill() -> None:
        """Take items, models in turn, up to the limits; send them in chunks, each to the
        least busy worker."""
        room = max_in_flight - in_flight()
        picked: list[tuple[WorkItem, Any]] = []
        progressed = True
        while progressed and room > 0 and not result.budget_reached:
            progressed = False
            for model, queue in queues.items():
                if not queue or busy[model] >= per_model_limit.get(model, 1 << 30):
                    continue
                item, prompt = queue[0]
                cost = budget.admit(item) if budget is not None else 0.0
                if cost is None:
                    result.budget_reached = True
                    break
                queue.popleft()
                if budget is not None:
                    budget.track(item.key, cost)
                picked.append((item, prompt))
                busy[model] += 1
                room -= 1
                progressed = True
                if room <= 0:
                    break
        for start in range(0, len(picked), CHUNK):
            chunk = picked[start : start + CHUNK]
            worker = min(pool, key=lambda w: len(w.outstanding))
            for item, prompt in chunk:
                worker.outstanding[item.key] = (item, prompt)
            # its outcomes come back through `collect`
            worker.actor.submit.remote(crew.claim, chunk)

    def lost(index: int, exc: Exception) -> None:
        """The worker died (node lost) or no longer serves the run's claim: replace it and
        send its items again, rechecked."""
        worker = pool[index]
        if isinstance(exc, ClaimLost) or _is_dead(worker.actor):
            log.warning("a worker was lost (%s); starting a replacement", type(exc).__name__)
            pool[index] = _Worker(crew.new())
            retired.append(worker.actor)
            for item, prompt in worker.outstanding.values():
                busy[item.key.caller] -= 1
                if budget is not None:
                    budget.settle(item.key, None)
                enqueue(dataclasses.replace(item, recheck=True), prompt, front=True)
                result.redispatched += 1
        else:  # only unavailable for a moment: its items are still in it
            pool[index].outstanding = worker.outstanding

    def landed(index: int, outcomes: list[Outcome]) -> None:
        worker = pool[index]
        for outcome in outcomes:
            worker.outstanding.pop(outcome.key, None)
            busy[outcome.key.caller] -= 1
            if budget is not None:
                budget.settle(outcome.key, outcome)
        result.count(outcomes)
        if follow_up is not None:
            for outcome in outcomes:
                for item, parts in follow_up(outcome):
                    enqueue(item, parts)
        if on_progress is not None and outcomes:
            on_progress(outcomes)

    def collect(timeout: float) -> None:
        # One collect in flight per worker, even an idle one: it keeps the claim alive.
        for index, worker in enumerate(pool):
            if index not in collecting.values():
                collecting[worker.actor.collect.remote(crew.claim)] = index
        if not collecting:
            return
        ready, _ = ray.wait(list(collecting), num_returns=1, timeout=timeout)
        if ready:
            more, _ = ray.wait(list(collecting), num_returns=len(collecting), timeout=0)
            ready = list(dict.fromkeys([*ready, *more]))
        for ref in ready:
            index = collecting.pop(ref)
            try:
                outcomes = ray.get(ref)
            except WORKER_LOST as exc:
                lost(index, exc)
                continue
            except ray.exceptions.RayTaskError as exc:
                if not isinstance(exc.cause, ClaimLost):
                    raise
                lost(index, exc.cause)
                continue
            landed(index, outcomes)

    try:
        if not stop_requested():
            fill()
        while in_flight() and not stop_requested():
            collect(timeout=POLL_S)
            if not stop_requested():
                fill()
        left = sum(len(q) for q in queues.values())
        result.stopped = bool(in_flight() or (left and not result.budget_reached))
        if in_flight():
            deadline = time.monotonic() + drain_s
            while in_flight() and time.monotonic() < deadline:
                collect(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))
            result.abandoned = in_flight()
        result.not_started = sum(len(q) for q in queues.values())
    finally:
        for ref in collecting:
            ray.cancel(ref)
        crew.end([*(w.actor for w in pool), *retired])
    return result


def _is_dead(actor: Any) -> bool:
    """Whether an actor is gone for good (a plain call fails at once with RayActorError)."""
    try:
        ray.get(actor.ready.remote(), timeout=5)
        return False
    except WORKER_LOST:
        return True
    except ray.exceptions.GetTimeoutError:
        return False
