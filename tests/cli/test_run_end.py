"""A run's last line counts the items that ended in errors; such a run exits 5 (0 with
`--allow-errors`), and a run without any says so."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.cli.run_end import ERRORS_EXIT, end_line
from evalfleet.simulator.process import start_simulator_in_thread

RERUN = "evalfleet run -m openai/sim-0.5 --run-id r1"
COUNTS = {"done": 16, "failed": 6, "stale": 1, "missing": 1}


def test_a_run_without_errors_says_so_and_exits_0():
    counts = {**COUNTS, "failed": 0, "stale": 0, "missing": 0}
    assert end_line("r1", counts, Counter(), allow_errors=False, rerun=RERUN) == (
        "run r1: 16 items, none ended in an error",
        0,
    )
    one = {"done": 1}
    assert end_line("r1", one, Counter(), allow_errors=False, rerun=RERUN) == (
        "run r1: 1 item, none ended in an error",
        0,
    )


def test_a_run_its_cost_cap_stopped_counts_what_is_done():
    """Not "18 items, none ended in an error" when 2 were never asked (the cap's exit 3)."""
    counts = {**COUNTS, "failed": 0}
    assert end_line("r1", counts, Counter(), allow_errors=False, rerun=RERUN, code=3) == (
        "run r1: 16 of 18 items done, none ended in an error",
        3,
    )
    nothing = {"done": 0, "missing": 8}
    assert end_line("r1", nothing, Counter(), allow_errors=False, rerun=RERUN, code=3) == (
        "run r1: 0 of 8 items done, none ended in an error",
        3,
    )


def test_a_run_with_errors_counts_them_and_exits_5():
    errors = Counter({"server_error": 4, "timeout": 2})
    assert end_line("r1", COUNTS, errors, allow_errors=False, rerun=RERUN) == (
        "run r1: 6 of 24 items ended in errors (server_error 4, timeout 2): exit 5; ask them "
        f"again with: {RERUN} (or pass --allow-errors to accept them and exit 0)",
        5,
    )
    assert ERRORS_EXIT not in (0, 1, 2, 3, 4, 130, 143)


def test_allow_errors_exits_0_and_still_counts_them():
    errors = Counter({"server_error": 6})
    assert end_line("r1", COUNTS, errors, allow_errors=True, rerun=RERUN) == (
        "run r1: 6 of 24 items ended in errors (server_error 6); kept with --allow-errors; "
        f"ask them again with: {RERUN}",
        0,
    )


def test_errors_kept_from_before_are_counted_without_this_commands_kinds():
    """A resume with --no-retry-errors asked 2 items; 6 errors are stored: the kinds of this
    command's 2 would misname the 6."""
    errors = Counter({"server_error": 2})
    line, code = end_line("r1", COUNTS, errors, allow_errors=False, rerun=RERUN)
    assert line.startswith("run r1: 6 of 24 items ended in errors: exit 5; ask them again")
    assert code == 5


def test_the_cost_cap_s_exit_3_stays():
    line, code = end_line("r1", COUNTS, Counter(), allow_errors=False, rerun=RERUN, code=3)
    assert (line, code) == (
        f"run r1: 6 of 24 items ended in errors; ask them again with: {RERUN}",
        3,
    )


def failed_records(runs: Path, run_id: str) -> int:
    paths = (runs / run_id / "completions").rglob("*.json")
    return sum(1 for p in paths if json.loads(p.read_text()).get("error"))


@pytest.fixture
def no_prefect_server_of_its_own(request, monkeypatch) -> None:
    """A small run runs in this process without Ray or a Prefect server; but where an earlier
    test of this pytest worker joined the session's Ray, the run uses that Ray, as any run
    does where Ray is up, and would start a Prefect server of its own (some 20 CPU-s): it
    joins the session's instead."""
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            monkeypatch.setenv("PREFECT_API_URL", request.getfixturevalue("prefect_api_url"))


def test_a_small_run_whose_calls_fail_ends_with_the_count(
    demo_dataset, answer_key, tmp_path, capsys, monkeypatch, no_prefect_server_of_its_own
):
    """In this process (a small run: no Ray, no Prefect server, unless this pytest worker's
    Ray is up): a simulator failing 30 % of the calls, one attempt each."""
    runs = tmp_path / "runs"
    faults = {"latency": {"ms": 1}, "faults": {"http_500": 0.3}}
    with start_simulator_in_thread(answer_key, faults) as sim:
        argv = ["run", "-m", "openai/sim-0.5", "-b", "zerobench", "--limit", "2"]
        argv += ["--dataset-path", demo_dataset, "--store", str(runs)]
        argv += ["--simulator-url", sim.url, "--run-id", "r1", "--max-attempts", "1"]
        monkeypatch.setattr(sys, "argv", ["evalfleet", *argv, "--no-retry-errors"])
        code = main([*argv, "--no-retry-errors"])
        first = capsys.readouterr().out.splitlines()[-1]
        failed = failed_records(runs, "r1")
        monkeypatch.setattr(
            sys, "argv", ["evalfleet", *argv, "--no-retry-errors", "--allow-errors"]
        )
        allowed = main([*argv, "--no-retry-errors", "--allow-errors"])
        again = capsys.readouterr().out.splitlines()[-1]
    rerun = "evalfleet " + " ".join(argv)  # without --no-retry-errors: it asks them again
    assert 0 < failed < 12  # 2 questions, a greedy and 5 sampled epochs each
    assert code == 5
    assert first == (
        f"run r1: {failed} of 12 items ended in errors (server_error {failed}): exit 5; ask "
        f"them again with: {rerun} (or pass --allow-errors to accept them and exit 0)"
    )
    assert allowed == 0  # nothing asked again: the same errors, kept
    assert again == (
        f"run r1: {failed} of 12 items ended in errors; kept with --allow-errors; ask them "
        f"again with: {rerun}"
    )
