"""`down` stops what the stack's processes started outside their groups.

Prefect's process worker starts each flow run in a session of its own, so stopping a worker's
group left its flow run going (seen after a pool worker was lost: a `prefect.engine` process
alive 30 s after `down`). Every process `spawn` starts carries the stack's mark in its
environment and its children inherit it; `down` stops the marked processes it finds."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evalfleet.core.places import process_start_ticks
from evalfleet.stack import pidfiles
from evalfleet.stack.down import down
from evalfleet.stack.state import spawn

# A "worker" that starts a "flow run" in a session of its own, writes its pid, and waits.
WORKER = """
import subprocess, sys, time
run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                       start_new_session=True)
open(sys.argv[1], "w").write(str(run.pid))
time.sleep(300)
"""


SLEEPER = f"{sys.executable} -c import time; time.sleep(300)"


def alive(pid: int) -> bool:
    return process_start_ticks(pid) is not None  # a zombie counts as gone


def started_worker(state: Path) -> tuple[int, int]:
    state.mkdir()
    pid_file = state / "flow-run.pid"
    command = [sys.executable, "-c", WORKER, str(pid_file)]
    worker = spawn("Prefect worker 1", command, dict(os.environ), state / "worker-1.log")
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the worker did not start its flow run"
        time.sleep(0.05)
    return worker.pid, int(pid_file.read_text())


def test_down_stops_the_flow_run_a_worker_started_in_its_own_session(tmp_path):
    state = tmp_path / "state"
    worker, flow_run = started_worker(state)
    assert os.getsid(flow_run) == flow_run != os.getsid(worker)  # out of the worker's group
    assert pidfiles.members(state).keys() == {worker, flow_run}

    stopped = down(str(state))

    assert not alive(worker) and not alive(flow_run)
    assert stopped.lines[-2:] == [  # the flow run first, the worker after it
        f"  flow run stopped       pid {flow_run} ({SLEEPER})",
        f"  Prefect worker 1       stopped (pid {worker})",
    ]
    assert stopped.complete, stopped.lines
    assert pidfiles.members(state) == {}


# A "flow run" that, told to stop (SIGTERM), writes down whether the "Prefect server" (pid in
# argv[1]) still runs, as a real one reports its end to the server then; argv[3] once ready.
TELLING_RUN = """
import signal, sys, time
from pathlib import Path
def told(*_):
    stat = Path(f"/proc/{sys.argv[1]}/stat")
    up = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    Path(sys.argv[2]).write_text("server up" if up else "server gone")
    sys.exit(0)
signal.signal(signal.SIGTERM, told)
Path(sys.argv[3]).write_text("ready")
time.sleep(300)
"""
# A "worker" that starts the flow run argv[1] with the arguments after it, in its own session.
TELLING_WORKER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", *sys.argv[1:]], start_new_session=True)
time.sleep(300)
"""


def test_a_flow_run_is_stopped_while_the_prefect_server_still_runs(tmp_path):
    """Stopped after the server (as before), a flow run could not report how it ended, and
    Prefect's UI showed it Running."""
    state = tmp_path / "state"
    state.mkdir()
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    server = spawn("Prefect server", sleeper, dict(os.environ), state / "prefect.log")
    told, ready = tmp_path / "told.txt", tmp_path / "ready.txt"
    run = [TELLING_RUN, str(server.pid), str(told), str(ready)]
    command = [sys.executable, "-c", TELLING_WORKER, *run]
    spawn("Prefect worker 1", command, dict(os.environ), state / "worker-1.log")
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline, "the worker's flow run did not start"
        time.sleep(0.05)

    stopped = down(str(state))

    assert told.read_text() == "server up"
    assert [line.split()[0:2] for line in stopped.lines[2:]] == [
        ["flow", "run"],
        ["Prefect", "worker"],
        ["Prefect", "server"],
    ]
    assert stopped.complete, stopped.lines


def test_down_stops_a_marked_flow_run_when_nothing_else_is_recorded(tmp_path):
    state = tmp_path / "state"
    worker, flow_run = started_worker(state)
    os.kill(worker, 9)  # the worker lost, and with it every record of the stack
    os.waitpid(worker, 0)  # gone (SIGKILL lands when the kernel next runs it), and reaped
    subprocess.run(["rm", "-rf", str(state / "pids")], check=True)

    stopped = down(str(state))

    assert not alive(flow_run)
    assert stopped.lines == [
        f"evalfleet stack in {state}:",
        f"  also stopped           pid {flow_run} ({SLEEPER})",
    ]
    assert stopped.complete


# A "flow run" leading a group of its own whose child was started with an environment
# without the mark (as a command the stack's launcher runs for a user gets the user's).
LEADER = """
import os, subprocess, sys, time
env = {k: v for k, v in os.environ.items() if k != "EVALFLEET_STACK_MEMBER"}
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env)
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(300)
"""


def test_a_marked_group_leader_is_stopped_with_its_unmarked_children(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    pid_file = tmp_path / "child.pid"
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, str(pid_file)],
        env={**os.environ, pidfiles.MEMBER: str(state.resolve())},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the leader did not start its child"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert pidfiles.members(state).keys() == {leader.pid}  # the child is not marked

        stopped = down(str(state))

        assert leader.wait(timeout=30) is not None
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
        assert stopped.lines[1].startswith(f"  also stopped           pid {leader.pid} (")
        assert stopped.complete, stopped.lines
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()


def test_the_mark_names_one_stack_only(tmp_path):
    state = tmp_path / "state"
    worker, flow_run = started_worker(state)
    try:
        other = tmp_path / "state-2"  # whose path starts as the first one's does
        other.mkdir()
        assert down(str(other)).lines == [f"no stack recorded in {other}: nothing to stop"]
        assert alive(worker) and alive(flow_run)
    finally:
        down(str(state))


def test_a_process_without_the_mark_is_named_with_its_stop_command_not_stopped(tmp_path):
    """Writing to a log of the state folder, but its environment cleared of the mark: `down`
    cannot be sure `up` started it, so it names it and exits 1 rather than guess."""
    state = tmp_path / "state"
    state.mkdir()
    env = {k: v for k, v in os.environ.items() if k != pidfiles.MEMBER}
    with (state / "stray.log").open("ab") as log:
        stray = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"],
            env=env,
            stdout=log,
            start_new_session=True,
        )
    try:
        stopped = down(str(state))
        assert alive(stray.pid)
        assert stopped.lines == [
            f"evalfleet stack in {state}:",
            f"  still running: pid {stray.pid} ({SLEEPER}), writing to {state / 'stray.log'}: "
            f"stop it with `kill -TERM -- -{stray.pid}`",
            "  the stack is not fully stopped: `up` started these but nothing `down` can trust "
            "records them; stop them as shown",
        ]
        assert not stopped.complete
    finally:
        stray.kill()
        stray.wait()
