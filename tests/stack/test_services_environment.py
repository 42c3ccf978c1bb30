"""What a run's own services leave in the process: nothing. `evalfleet.run()` twice in one
Python process used to hang in the second call, its driver joining the Ray head the first call
had stopped (RAY_ADDRESS stayed set), and then was refused by the second head's new token
(Ray loads its token once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

POINTED = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "PREFECT_API_URL", "PREFECT_UI_URL")


POINTING = """
import json, os
from evalfleet.stack.services import LocalStack

os.environ["PREFECT_UI_URL"] = "http://127.0.0.1:4200"  # the user's own, kept
stack = LocalStack(flow_runs_kept=1)
stack.use_private_ray()
stack.ray_address = "127.0.0.1:6399"  # as `start` names its head; nothing started here
assert stack.wait_ray()
during = {name: os.environ.get(name) for name in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
stack.stop()
other = LocalStack(flow_runs_kept=1)
print(json.dumps({
    "during": during,
    "after": {name: os.environ.get(name) for name in NAMES},
    "tokens": [len(stack.ray_env["RAY_AUTH_TOKEN"]),
               stack.ray_env["RAY_AUTH_TOKEN"] == other.ray_env["RAY_AUTH_TOKEN"]],
}))
other.stop()
"""


def test_stop_puts_back_every_variable_and_the_heads_of_a_process_share_a_token():
    """In a child: the test session's own process is a Ray driver, whose settings a test
    must not touch."""
    env = {k: v for k, v in os.environ.items() if k not in POINTED}
    code = f"NAMES = {POINTED!r}\n" + textwrap.dedent(POINTING)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "during": {"RAY_ADDRESS": "127.0.0.1:6399", "RAY_AUTH_MODE": "token"},
        "after": {
            "RAY_ADDRESS": None,
            "RAY_AUTH_MODE": None,
            "RAY_AUTH_TOKEN": None,
            "PREFECT_API_URL": None,
            "PREFECT_UI_URL": "http://127.0.0.1:4200",
        },
        "tokens": [64, True],
    }


CHILD = """
import os, sys
import evalfleet
from evalfleet.simulator import start_simulator

answers, dataset, store = sys.argv[1:4]
with start_simulator(answers, {"latency": {"ms": 1}}) as sim:
    for run_id in ("first", "second"):
        result = evalfleet.run(
            models=["openai/sim-0.5"], benchmarks=["zerobench"], dataset_path=dataset,
            simulator_url=sim.url, run_id=run_id, epochs=1, store=store, full_stack=True,
        )
        left = [n for n in ("RAY_ADDRESS", "PREFECT_API_URL") if n in os.environ]
        print(run_id, result.complete, result.outcome.failed, left, flush=True)
"""


@pytest.mark.slow  # two private Ray heads and two temporary Prefect servers, one after another
def test_two_runs_in_one_python_process_each_start_and_stop_their_own_services(
    answer_key, demo_dataset, tmp_path
):
    env = {k: v for k, v in os.environ.items() if k not in POINTED}
    env["EVALFLEET_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(answer_key), demo_dataset,
         str(tmp_path / "runs")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["first True False []", "second True False []"]
