"""Feed work items to the worker actors with bounded concurrency, per model and overall."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import ray

from tasks.work import WorkItem
from tasks.worker import Outcome

ProgressCallback = Callable[[list[Outcome]], None]


def dispatch(
    items: Sequence[WorkItem],
    parts_refs: dict[tuple[str, str], Any],
    workers: Sequence[Any],
    *,
    max_in_flight: int,
    per_model_limit: dict[str, int],
    on_progress: ProgressCallback | None = None,
) -> list[Outcome]:
    """Submit one actor call per item; never more than the limits in flight; collect outcomes.

    Models take turns so that one slow or rate-limited model never starves the others.
    """
    queues: dict[str, deque[WorkItem]] = {}
    for item in items:
        queues.setdefault(item.model, deque()).append(item)
    in_flight_per_model = dict.fromkeys(queues, 0)
    pending: dict[Any, str] = {}
    outcomes: list[Outcome] = []
    worker_cycle = itertools.cycle(workers)

    def fill() -> None:
        progressed = True
        while progressed and len(pending) < max_in_flight:
            progressed = False
            for model, queue in queues.items():
                if not queue or in_flight_per_model[model] >= per_model_limit.get(model, 1 << 30):
                    continue
                item = queue.popleft()
                ref = next(worker_cycle).run.remote(
                    item, [parts_refs[(item.benchmark, item.sample_id)]]
                )
                pending[ref] = model
                in_flight_per_model[model] += 1
                progressed = True
                if len(pending) >= max_in_flight:
                    return

    fill()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
        if not ready:
            continue
        # Take everything else that is already done too, without waiting.
        more, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        ready = list(dict.fromkeys([*ready, *more]))
        done = ray.get(ready)
        for ref in ready:
            in_flight_per_model[pending.pop(ref)] -= 1
        outcomes.extend(done)
        if on_progress is not None:
            on_progress(done)
        fill()
    return outcomes
