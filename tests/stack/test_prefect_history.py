"""The temporary Prefect server keeps a bounded history: four commands, each with its own server
(`stack.services.LocalStack`, as `evalfleet run` starts it) keeping 2 flow runs, each running
a flow with a subflow, a task, logs and an artifact; the first also leaves a flow run marked
running, as a killed command does. Prefect's own tables, read after the last command: the two
newest runs and the one still running are left with everything that is theirs, and nothing of
the others. The perf script `perf/prefect_db.py` shows the size staying bounded over 50 runs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evalfleet.core.types import ConfigError
from evalfleet.stack.prefect_history import DEFAULT, ENV, kept_from_env, parse_kept

REPO = Path(__file__).resolve().parents[2]

COMMAND = """
import sys
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.settings import PREFECT_API_URL, temporary_settings
from evalfleet.stack.services import LocalStack

@task
def step(i):
    get_run_logger().info("step of %s", i)

@flow(name="child")
def child(i):
    get_run_logger().info("child of %s", i)
    step(i)

@flow(name="history")
def parent(i):
    create_markdown_artifact(markdown="x" * 5000, key=f"history-{i}")
    child(i)

i = int(sys.argv[1])
stack = LocalStack(flow_runs_kept=2)
stack.start(prefect=True)
stack.wait()
with temporary_settings({PREFECT_API_URL: stack.prefect_url}):
    if i == 1:  # a flow run whose command was killed: still marked running
        from prefect.client.orchestration import get_client
        from prefect.states import Running
        with get_client(sync_client=True) as client:
            client.create_flow_run(parent, name="left-running", state=Running())
    parent.with_options(flow_run_name=f"run-{i}")(i)
    from evalfleet.flows.in_process import drain_prefect
    drain_prefect()
stack.stop()
"""


@pytest.mark.slow  # four Prefect servers, one after the other
def test_the_temporary_server_keeps_the_newest_runs_and_only_theirs(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["EVALFLEET_HOME"] = str(tmp_path / "home")
    for i in range(1, 5):
        done = subprocess.run(
            [sys.executable, "-c", COMMAND, str(i)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # the server ends with the command: no "View at http://127.0.0.1:PORT/runs/..." link
        assert "View at" not in done.stdout + done.stderr
        assert "Beginning flow run 'run-" in done.stdout + done.stderr

    with sqlite3.connect(tmp_path / "home" / "prefect-runs.db") as db:

        def rows(sql: str) -> list[tuple]:
            return sorted(db.execute(sql).fetchall())

        runs = dict(db.execute("SELECT id, name FROM flow_run WHERE parent_task_run_id IS NULL"))
        assert sorted(runs.values()) == ["left-running", "run-3", "run-4"]
        children = rows(
            "SELECT parent.name FROM flow_run AS sub JOIN task_run ON sub.parent_task_run_id = "
            "task_run.id JOIN flow_run AS parent ON task_run.flow_run_id = parent.id"
        )
        assert children == [("run-3",), ("run-4",)]
        assert rows("SELECT count(*) FROM flow_run") == [(5,)]  # no child left without parent
        assert rows("SELECT key FROM artifact") == [("history-3",), ("history-4",)]
        assert rows("SELECT key FROM artifact_collection") == [("history-3",), ("history-4",)]
        orphans = "SELECT count(*) FROM {} WHERE flow_run_id NOT IN (SELECT id FROM flow_run)"
        assert [rows(orphans.format(t)) for t in ("log", "task_run")] == [[(0,)], [(0,)]]
        messages = {m for (m,) in rows("SELECT message FROM log")}
        assert {"child of 3", "step of 4"} <= messages
        assert not {"child of 2", "step of 1"} & messages
        oldest_kept = db.execute(
            "SELECT min(created, expected_start_time) FROM flow_run WHERE name = 'run-3'"
        ).fetchone()[0]
        assert db.execute("SELECT min(occurred) FROM events").fetchone()[0] >= oldest_kept
        of_run = "SELECT count(*) FROM events WHERE resource_id = ?"
        assert db.execute(of_run, (f"prefect.flow-run.{_id(runs, 'run-4')}",)).fetchone()[0] > 0


def _id(runs: dict[str, str], name: str) -> str:
    return next(run_id for run_id, found in runs.items() if found == name)


@pytest.mark.parametrize("raw", ["0", "-3", "ten", "2.5"])
def test_how_many_runs_to_keep_is_a_whole_number_of_at_least_one(raw, monkeypatch):
    monkeypatch.setenv(ENV, raw)
    with pytest.raises(ConfigError) as caught:
        kept_from_env()
    assert str(caught.value) == (
        f"{ENV}={raw} is not a whole number from 1 to 1000000; set it to one, such as 10, or "
        "unset it"
    )
    assert parse_kept("7") == 7


def test_ten_runs_are_kept_unless_told(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert (kept_from_env(), DEFAULT) == (10, 10)
    monkeypatch.setenv(ENV, "3")
    assert kept_from_env() == 3
