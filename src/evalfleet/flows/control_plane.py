"""What a flow lends the engine while it runs (`engine.run.control`): its flow run id for the
run's heartbeat, a progress artifact, and the engine's log lines in the flow run's logs."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from evalfleet.core import settings
from evalfleet.engine.pipeline import JobResult
from evalfleet.engine.run import control
from evalfleet.engine.run.outcome import RunFailed, RunOutcome, interrupted_message


class ProgressArtifact:
    """The run's progress as a Prefect progress artifact (created on the first push)."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.artifact_id: Any = None  # its UUID once made (Prefect types the call sync or async)

    def push(self, percent: float) -> None:
        from prefect.artifacts import create_progress_artifact, update_progress_artifact

        if self.artifact_id is None:
            self.artifact_id = create_progress_artifact(
                progress=percent, key="evaluate-progress", description=self.description
            )
        else:
            update_progress_artifact(self.artifact_id, percent)


def _forward_engine_logs() -> None:
    """The engine logs to the `evalfleet` logger; inside a flow run those lines go to the flow
    run's logs in the UI too."""
    from prefect.context import FlowRunContext, TaskRunContext
    from prefect.logging.handlers import APILogHandler

    class RunLogs(APILogHandler):
        """Prefect's API handler for the records made within a flow or task run only (the
        same process also logs outside one: `evalfleet aggregate` after a run)."""

        def emit(self, record: logging.LogRecord) -> None:
            if FlowRunContext.get() is not None or TaskRunContext.get() is not None:
                super().emit(record)

    engine_log = logging.getLogger("evalfleet")
    engine_log.setLevel(logging.INFO)
    if not any(type(h).__name__ == "RunLogs" for h in engine_log.handlers):
        engine_log.addHandler(RunLogs())


@contextlib.contextmanager
def attached() -> Iterator[None]:
    """The body of a flow: the engine reports to this flow run while it works. A bad
    EVALFLEET_* setting where the flow runs fails it at once, in one line."""
    from prefect.runtime import flow_run

    settings.check_all()
    _forward_engine_logs()
    plane = control.ControlPlane(run_label=flow_run.id, progress=ProgressArtifact)
    with control.attached(plane):
        yield


def failed_state(exc: RunFailed):
    """A run that did not do its job ends its flow run Failed with the one line that says why
    (raised, Prefect would log a traceback); its result raises `exc` again."""
    from prefect.states import Failed

    return Failed(message=str(exc), data=exc)


def evaluated_state(outcome: RunOutcome):
    """The `evaluate` flow's return value: a Cancelled state if a stop was requested."""
    if outcome.stopped:
        from prefect.states import Cancelled

        return Cancelled(message=interrupted_message(outcome))
    return outcome


def job_state(result: JobResult):
    """A whole job's return value: a Cancelled state if a stop was requested, else the
    result (the tables, or the batch jobs it left open)."""
    if result.outcome.stopped:
        return evaluated_state(result.outcome)
    return result
