"""Progress you can see: a terminal bar and a Prefect progress artifact, updated together."""

from __future__ import annotations

import sys
import time
from collections import Counter

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from tqdm import tqdm

from tasks.worker import Outcome


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
        self._artifact = _try(
            lambda: create_progress_artifact(
                progress=self.percent, key="evaluate-progress", description=description
            )
        )
        self._last_push = 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def update(self, outcomes: list[Outcome]) -> None:
        self.done += len(outcomes)
        self.statuses.update(o.status for o in outcomes)
        self._bar.update(len(outcomes))
        failed = self.statuses.get("failed", 0)
        if failed:
            self._bar.set_postfix(failed=failed, refresh=False)
        now = time.monotonic()
        if self._artifact is not None and now - self._last_push >= 1.0:
            self._last_push = now
            _try(lambda: update_progress_artifact(self._artifact, self.percent))

    def close(self) -> None:
        if self._artifact is not None:
            _try(lambda: update_progress_artifact(self._artifact, self.percent))
        self._bar.close()


def _try(call):
    """Artifacts need a Prefect run context; outside one, progress is terminal-only."""
    try:
        return call()
    except Exception:
        return None
