"""The `leaderboard` flow: every run of a store side by side (`evalfleet.reports.leaderboard`), its
tables and plots as artifacts; and `refresh`, which the other flows call after they write
tables."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prefect import flow

from evalfleet.core.escape import markdown_cell
from evalfleet.engine.run.request import Blank
from evalfleet.flows.control_plane import attached
from evalfleet.storage import Store, open_store

if TYPE_CHECKING:  # the tables and plots load pandas and matplotlib: imported when used
    from evalfleet.reports.leaderboard import Board

log = logging.getLogger("evalfleet")
DEPLOYMENT = "leaderboard/leaderboard"


def publish_artifacts(board: Board, where: str) -> None:
    """The leaderboard's page and plots in the Prefect UI (best effort: they are in the
    store); the page escapes what it shows, the path and description are escaped here
    (`evalfleet.core.escape`)."""
    from prefect.artifacts import create_markdown_artifact

    from evalfleet.reports.board_page import markdown_page

    try:
        images = "\n\n".join(
            f"![{name}](data:image/png;base64,{base64.b64encode(blob).decode()})"
            for name, blob in sorted(board.files.items())
            if name.endswith(".png")
        )
        create_markdown_artifact(
            markdown=f"{markdown_page(board)}\n\nFiles: {markdown_cell(where)}\n\n{images}",
            key="leaderboard",
            description=markdown_cell(f"evalfleet leaderboard ({where})"),
        )
    except Exception as exc:
        log.warning("could not publish the leaderboard artifacts: %s", exc)


@flow(name="leaderboard", log_prints=True)
def leaderboard(store: Blank = "", s3_endpoint_url: Blank = "") -> dict:
    """Put every run of the store side by side: the latest complete result per (model,
    benchmark, scoring), with intervals, coverage, tokens and cost; tables and plots under
    `{store}/leaderboard/` and as artifacts.

    Args:
        store: the store whose runs to compare: a directory, or s3://bucket/prefix (empty:
            the store the deployments were served with, $EVALFLEET_STORE, else ./runs)
        s3_endpoint_url: for MinIO, R2, Ceph, ... (empty: AWS)
    """
    from evalfleet.reports.leaderboard import update

    with attached():
        board, where = update(open_store(store or None, s3_endpoint_url=s3_endpoint_url or None))
        publish_artifacts(board, where)
        for line in board.new:
            print(line)
        return {"where": where, "rows": len(board.table), "runs": board.runs, "new": board.new}


def refresh(store: Store, run_id: str | None = None) -> None:
    """Bring the leaderboard up to date after an aggregation (of `run_id`: only its rows are
    read again, `reports.leaderboard.update`); never fails the caller.

    Where the stack serves the leaderboard deployment, it rebuilds it as a flow run of its
    own: its plots take a second or more that the run need not wait for. Elsewhere it is
    rebuilt here, its artifacts published by the caller's flow run.
    """
    try:
        if not (_started_elsewhere(store) or _started_where_served(store)):
            from evalfleet.reports.leaderboard import new_lines_of_run, update

            # Within the caller's flow run: a subflow run of its own costs about a second.
            board, where = update(store, run_id)
            publish_artifacts(board, where)
            for line in board.new if run_id is None else new_lines_of_run(board, run_id):
                log.info("%s", line)
    except Exception as exc:
        log.warning("the leaderboard was not updated: %s", exc)


_starter: Callable[[str, str | None], int | None] | None = None


def rebuild_with(starter: Callable[[str, str | None], int | None]) -> None:
    """Have `refresh` start rebuilds with `starter(store_url, endpoint_url)`, which returns
    the pid of the rebuilding process, or None where it could not start one (the stack's
    launcher, in a command it forked: `evalfleet.cli.launcher`)."""
    global _starter
    _starter = starter


def _started_elsewhere(store: Store) -> bool:
    pid = _starter(store.url, store.endpoint_url) if _starter is not None else None
    if pid is not None:
        log.info("the leaderboard is being rebuilt by the stack's launcher (pid %d)", pid)
    return pid is not None


def _started_where_served(store: Store) -> bool:
    """Start the served leaderboard deployment, if it is served (its runner polls)."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    try:
        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name(DEPLOYMENT)
    except ObjectNotFound:
        return False
    if str(getattr(deployment.status, "value", deployment.status)).upper() != "READY":
        return False
    parameters = {"store": store.url, "s3_endpoint_url": store.endpoint_url or ""}
    # called from sync code, so a FlowRun (Prefect's type says a coroutine or a FlowRun)
    run: Any = run_deployment(DEPLOYMENT, parameters=parameters, timeout=0, as_subflow=False)
    log.info("the leaderboard is being rebuilt by the served deployment (%s)", run.name)
    return True
