"""One logger call for code that runs both inside Prefect flows and without them."""

from __future__ import annotations

import logging


def logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run logger inside a flow or task run (logs reach the UI), else a plain
    `evalfleet` logger."""
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return logging.getLogger("evalfleet")
    from prefect import get_run_logger

    return get_run_logger()
