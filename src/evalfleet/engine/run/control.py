"""What an orchestrator lends a run while it works on it, without the engine knowing which.

The engine never imports Prefect. A flow attaches a `ControlPlane` for the time it runs (see
`flows/control_plane.py`): the id of its flow run, kept in the run's heartbeat, and where the
progress percentage goes besides the terminal (a Prefect progress artifact). Without one the
run is the same, only quieter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol


class ProgressSink(Protocol):
    def push(self, percent: float) -> None:
        """Show the run's progress; may raise when the orchestrator cannot be reached."""


@dataclass(frozen=True)
class ControlPlane:
    run_label: str | None = None  # the orchestrator's id of the work (a flow run id)
    progress: Callable[[str], ProgressSink] | None = None  # description -> a sink


NONE = ControlPlane()
_current: ContextVar[ControlPlane | None] = ContextVar("evalfleet_control_plane", default=None)


def current() -> ControlPlane:
    return _current.get() or NONE


@contextlib.contextmanager
def attached(plane: ControlPlane) -> Iterator[ControlPlane]:
    token = _current.set(plane)
    try:
        yield plane
    finally:
        _current.reset(token)
