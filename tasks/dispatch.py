"""Feed work items to the worker actors with bounded concurrency, per model and overall.

Judgements join the queue as the answers they grade arrive (`follow_up`). A stop request
(Ctrl-C, SIGTERM) ends submission at once; calls already in flight get `drain_s` seconds to
land (their records are checkpointed by the workers), then the rest are cancelled.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from core.types import Part
from tasks.work import WorkItem
from tasks.worker import Outcome

ProgressCallback = Callable[[list[Outcome]], None]
FollowUp = Callable[[Outcome], list[tuple[WorkItem, list[Part]]]]


@dataclass
class Dispatched:
    outcomes: list[Outcome] = field(default_factory=list)
    stopped: bool = False  # a stop was requested before everything was submitted
    abandoned: int = 0  # in flight when the drain time ran out (nothing stored for them)
    not_started: int = 0


def dispatch(
    jobs: Sequence[tuple[WorkItem, Any]],
    workers: Sequence[Any],
    *,
    max_in_flight: int,
    per_model_limit: dict[str, int],
    on_progress: ProgressCallback | None = None,
    follow_up: FollowUp | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    drain_s: float = 10.0,
) -> Dispatched:
    """Submit one actor call per job; never more than the limits in flight; collect outcomes.

    A job is (item, prompt): the prompt is the ObjectRef of a sample's parts (fetched once
    per worker) or, for a judgement, the list of its parts itself.

    Models take turns (by the model each call goes to) so that one slow or rate-limited model
    never starves the others.
    """
    queues: dict[str, deque[tuple[WorkItem, list[Any]]]] = {}

    def enqueue(item: WorkItem, holder: list[Any]) -> None:
        queues.setdefault(item.key.caller, deque()).append((item, holder))

    for item, prompt in jobs:
        enqueue(item, [prompt])
    in_flight_per_model: dict[str, int] = {}
    pending: dict[Any, str] = {}
    result = Dispatched()
    worker_cycle = itertools.cycle(workers)

    def fill() -> None:
        progressed = True
        while progressed and len(pending) < max_in_flight:
            progressed = False
            for model, queue in queues.items():
                busy = in_flight_per_model.get(model, 0)
                if not queue or busy >= per_model_limit.get(model, 1 << 30):
                    continue
                item, holder = queue.popleft()
                ref = next(worker_cycle).run.remote(item, holder)
                pending[ref] = model
                in_flight_per_model[model] = busy + 1
                progressed = True
                if len(pending) >= max_in_flight:
                    return

    def collect(timeout: float) -> None:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
        if not ready:
            return
        # Take everything else that is already done too, without waiting.
        more, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        ready = list(dict.fromkeys([*ready, *more]))
        done = ray.get(ready)
        for ref in ready:
            in_flight_per_model[pending.pop(ref)] -= 1
        result.outcomes.extend(done)
        if follow_up is not None:
            for outcome in done:
                for item, parts in follow_up(outcome):
                    enqueue(item, [parts])
        if on_progress is not None:
            on_progress(done)

    if not stop_requested():
        fill()
    while pending and not stop_requested():
        collect(timeout=0.2)
        if not stop_requested():
            fill()
    result.not_started = sum(len(q) for q in queues.values())
    result.stopped = bool(pending or result.not_started)
    if result.stopped:
        deadline = time.monotonic() + drain_s
        while pending and time.monotonic() < deadline:
            collect(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
        result.abandoned = len(pending)
        for ref in pending:
            ray.cancel(ref)
    return result
