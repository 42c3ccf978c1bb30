"""Progress you can see: a terminal bar, and the control plane's progress (a Prefect progress
artifact when a flow runs the work) kept off the data path.

The dispatch loop only updates numbers. A background thread pushes the percentage at most
once a second; if the orchestrator is slow or gone the loop never waits for it, and a lost
server is reported once.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
from collections import Counter

from tqdm import tqdm

from evalfleet.engine.run import control
from evalfleet.tasks.completions import Outcome

log = logging.getLogger("evalfleet.progress")
PUSH_EVERY_S = 1.0
RETRY_LOST_EVERY_S = 30.0
API_TIMEOUT_S = 5.0


class Progress:
    def __init__(self, total: int, already_done: int, description: str) -> None:
        self.total = total
        self.done = already_done
        self.statuses: Counter[str] = Counter()
        self._bar = tqdm(
            total=total,
            initial=already_done,
            desc=description,
            unit="item",
            file=sys.stderr,
            dynamic_ncols=True,
        )
        self._stop = threading.Event()
        self._publisher = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._publish, description),
            name="progress-artifact",
            daemon=True,
        )
        self._sink = control.current().progress
        if self._sink is not None:  # outside a flow there is nowhere to push it
            self._publisher.start()

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def grow(self, extra: int) -> None:
        """More items joined the run (judgements of answers that just arrived)."""
        self.total += extra
        self._bar.total = self.total
        self._bar.refresh()

    def update(self, outcomes: list[Outcome]) -> None:
        done = sum(o.status != "write_failed" for o in outcomes)  # not stored: not done
        self.done += done
        self.statuses.update(o.status for o in outcomes)
        self._bar.update(done)
        failed = self.statuses.get("failed", 0)
        if failed:
            self._bar.set_postfix(failed=failed, refresh=False)

    def close(self) -> None:
        self._stop.set()
        if self._publisher.is_alive():
            self._publisher.join(timeout=API_TIMEOUT_S + 1)
        self._bar.close()

    def _publish(self, description: str) -> None:
        """Push the percentage until closed (best effort)."""
        sink = None
        lost = False
        pushed = -1.0
        while True:
            closing = self._stop.wait(PUSH_EVERY_S if not lost else RETRY_LOST_EVERY_S)
            percent = self.percent
            if percent != pushed or sink is None:
                try:
                    sink = sink or self._sink(description)  # type: ignore[misc]  # set: started only then
                    sink.push(percent)
                    pushed = percent
                    if lost:
                        log.warning("Prefect server reachable again: progress artifact resumed")
                    lost = False
                except Exception as exc:  # the server is gone
                    if not lost and not self._stop.is_set():
                        log.warning(
                            "Prefect server unreachable (%s): the run goes on; progress is "
                            "shown in this terminal only",
                            type(exc).__name__,
                        )
                    lost = True
            if closing:
                return
