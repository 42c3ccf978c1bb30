"""Feed work items to the worker actors with bounded concurrency, per model and overall.

Judgements join the queue as the answers they grade arrive (`follow_up`). A stop request
(Ctrl-C, SIGTERM) ends submission at once; calls already in flight get `drain_s` seconds to
land (their records are checkpointed by the workers), then the rest are cancelled.

A worker lost with its node is replaced, and the items it had in flight are sent again
marked `recheck`: the new worker first looks for a record the lost one may have stored, so
nothing stored is asked twice. A budget (`--max-cost-usd`) stops submission before the
spend plus what is in flight could pass it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
import ray.exceptions

from core.types import Part
from tasks.work import WorkItem
from tasks.worker import Outcome

ProgressCallback = Callable[[list[Outcome]], None]
FollowUp = Callable[[Outcome], list[tuple[WorkItem, list[Part]]]]
log = logging.getLogger("evalfleet.dispatch")

WORKER_LOST = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


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
    outcomes: list[Outcome] = field(default_factory=list)
    stopped: bool = False  # a stop was requested before everything was submitted
    abandoned: int = 0  # in flight when the drain time ran out (nothing stored for them)
    not_started: int = 0
    redispatched: int = 0  # sent again after their worker was lost
    budget_reached: bool = False


@dataclass
class _InFlight:
    model: str
    item: WorkItem
    holder: list[Any]
    worker: int


def dispatch(
    jobs: Sequence[tuple[WorkItem, Any]],
    make_worker: Callable[[], Any],
    workers: int,
    *,
    max_in_flight: int,
    per_model_limit: dict[str, int],
    on_progress: ProgressCallback | None = None,
    follow_up: FollowUp | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    drain_s: float = 10.0,
    budget: Budget | None = None,
    started_workers: list[Any] | None = None,
) -> Dispatched:
    """Submit one actor call per job; never more than the limits in flight; collect outcomes.

    A job is (item, prompt): the prompt is the ObjectRef of a sample's parts (fetched once
    per worker) or, for a judgement, the list of its parts itself.

    Models take turns (by the model each call goes to) so that one slow or rate-limited model
    never starves the others.
    """
    pool = list(started_workers or [make_worker() for _ in range(workers)])
    queues: dict[str, deque[tuple[WorkItem, list[Any]]]] = {}

    def enqueue(item: WorkItem, holder: list[Any], front: bool = False) -> None:
        queue = queues.setdefault(item.key.caller, deque())
        (queue.appendleft if front else queue.append)((item, holder))

    for item, prompt in jobs:
        enqueue(item, [prompt])
    in_flight_per_model: dict[str, int] = {}
    pending: dict[Any, _InFlight] = {}
    result = Dispatched()
    turn = 0

    def fill() -> None:
        nonlocal turn
        progressed = True
        while progressed and len(pending) < max_in_flight and not result.budget_reached:
            progressed = False
            for model, queue in queues.items():
                busy = in_flight_per_model.get(model, 0)
                if not queue or busy >= per_model_limit.get(model, 1 << 30):
                    continue
                item, holder = queue[0]
                cost = budget.admit(item) if budget is not None else 0.0
                if cost is None:
                    result.budget_reached = True
                    return
                queue.popleft()
                index = turn % len(pool)
                turn += 1
                ref = pool[index].run.remote(item, holder)
                if budget is not None:
                    budget.track(ref, cost)
                pending[ref] = _InFlight(model, item, holder, index)
                in_flight_per_model[model] = busy + 1
                progressed = True
                if len(pending) >= max_in_flight:
                    return

    def lost(ref: Any, flight: _InFlight, exc: Exception) -> None:
        """The worker died (node lost): replace it and send its item again, rechecked."""
        if _is_dead(pool[flight.worker]):
            log.warning("a worker was lost (%s); starting a replacement", type(exc).__name__)
            pool[flight.worker] = make_worker()
        enqueue(dataclasses.replace(flight.item, recheck=True), flight.holder, front=True)
        result.redispatched += 1

    def collect(timeout: float) -> None:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
        if not ready:
            return
        # Take everything else that is already done too, without waiting.
        more, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        done: list[Outcome] = []
        for ref in dict.fromkeys([*ready, *more]):
            flight = pending.pop(ref)
            in_flight_per_model[flight.model] -= 1
            try:
                outcome = ray.get(ref)
            except WORKER_LOST as exc:
                if budget is not None:
                    budget.settle(ref, None)
                lost(ref, flight, exc)
                continue
            if budget is not None:
                budget.settle(ref, outcome)
            done.append(outcome)
        result.outcomes.extend(done)
        if follow_up is not None:
            for outcome in done:
                for item, parts in follow_up(outcome):
                    enqueue(item, [parts])
        if on_progress is not None and done:
            on_progress(done)

    try:
        if not stop_requested():
            fill()
        while pending and not stop_requested():
            collect(timeout=0.2)
            if not stop_requested():
                fill()
        left = sum(len(q) for q in queues.values())
        result.stopped = bool(pending or (left and not result.budget_reached))
        if pending:
            deadline = time.monotonic() + drain_s
            while pending and time.monotonic() < deadline:
                collect(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            result.abandoned = len(pending)
            for ref in pending:
                ray.cancel(ref)
        result.not_started = sum(len(q) for q in queues.values())
    finally:
        for worker in pool:
            ray.kill(worker)
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
