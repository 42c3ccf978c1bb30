"""CPU-seconds by test file, printed at the end of a run (beside `--durations`).

The suite is bound by its CPU, not by its waits (`make test` prints how busy the cores were),
so a file's wall time says little: on two shared cores a test waiting on a server takes as
long as one that keeps them busy. Each test's CPU is what its pytest process spent on it plus
what the processes it started spent, once they ended and were waited for (the commands, runs,
servers and Ray heads a test starts and stops). The session's shared Ray and Prefect server
(tests/support/shared_services.py) are a row of their own, counted as the controller stops
them; what a worker's session fixtures spend as they end after its last test is another. Not
counted: processes handed to init (the daemons `evalfleet up` leaves running until
`down`), so the stack tests cost more than shown.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict

import pytest

KEY = "cpu_s"  # (own, children) CPU-seconds of one test, on its teardown report
SESSION = "(a worker's session fixtures, as they end after its last test)"
SHARED = "(the session's shared Ray and Prefect server)"
SHOWN = 15

_started: dict[str, tuple[float, float]] = {}
_session_from: dict[str, tuple[float, float]] = {}
_by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])


def cpu_now() -> tuple[float, float]:
    """This process's CPU-seconds, and those of its children that ended and were waited for.
    Children whose Popen was dropped while they ran are waited for first: Python would wait
    for them only at its next Popen, and count them to whichever test made that."""
    reap_dropped = getattr(subprocess, "_cleanup", None)
    if reap_dropped is not None:
        reap_dropped()
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _started[nodeid] = cpu_now()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    if nextitem is None:  # a worker's last test: the session's fixtures end in its teardown
        _session_from[item.nodeid] = cpu_now()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    start = _started.pop(item.nodeid, None) if call.when == "teardown" else None
    if start is None:
        return
    report = outcome.get_result()
    end = cpu_now()
    session = _session_from.pop(item.nodeid, None)
    if session is not None:  # the teardown ended the session's fixtures too
        report.user_properties.append((SESSION, (end[0] - session[0], end[1] - session[1])))
        end = session
    report.user_properties.append((KEY, (end[0] - start[0], end[1] - start[1])))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Where the report is read: pytest's own process, or xdist's controller (a worker sends
    each report to it with its user properties)."""
    if report.when != "teardown":
        return
    for key, value in report.user_properties:
        if key == KEY:
            add(_by_file, report.nodeid, value)
        elif key == SESSION:
            add(_by_file, SESSION, value)


def count_shared_services(spent_s: float) -> None:
    """In the process that stopped them: what the session's shared services spent."""
    add(_by_file, SHARED, (0.0, spent_s))


def add(by_file: dict[str, list[float]], nodeid: str, spent: tuple[float, float]) -> None:
    totals = by_file[nodeid.split("::")[0]]
    totals[0] += spent[0]
    totals[1] += spent[1]


def table(by_file: dict[str, list[float]], shown: int = SHOWN) -> list[str]:
    """The costliest files first, then the whole run's sum."""
    rows = sorted(by_file.items(), key=lambda row: (-sum(row[1]), row[0]))
    own = sum(totals[0] for totals in by_file.values())
    children = sum(totals[1] for totals in by_file.values())
    return [*(_row(path, *totals) for path, totals in rows[:shown]), _row("in all", own, children)]


def _row(name: str, own: float, children: float) -> str:
    return f"{own + children:8.1f} s  (pytest {own:.1f}, its processes {children:.1f})  {name}"


def pytest_terminal_summary(terminalreporter) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not _by_file:
        return
    terminalreporter.write_sep("=", f"CPU-seconds by test file (the {SHOWN} costliest)")
    for line in table(_by_file):
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        "not counted: processes left to init, as `evalfleet up` leaves its services "
        "(tests/support/cpu_by_file.py)"
    )
