"""Ctrl-C counts what was sent, not what was answered: the stop message's numbers against the
simulator's own request log.

Two models at once: one answers in 1.5 s (its calls in flight at the stop land during the
drain and are stored), the other in 30 s (its calls are cut off when the drain time runs out:
the simulator logs each as status 499, client closed). The run is `evalfleet run` in its own
process group, joined to the session's Ray and Prefect server; Ctrl-C goes to the group. With
the slow model rate limited, calls wait in the workers for their slot: handed to a worker,
but never sent.
"""

from __future__ import annotations

import os
import re
import signal
import time
import uuid
from collections import Counter

import pytest

from evalfleet.engine.generation.online import DRAIN_S
from evalfleet.simulator.process import start_simulator
from tests.engine.test_interrupts import records, start
from tests.support.helpers import wait_for_no_processes

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

FAST, SLOW = "openai/sim-0.5-fast", "openai/sim-0.5-slow"
LATENCY = {"sim-0.5-fast": 1500, "sim-0.5-slow": 30_000}
ITEMS = 2 * 15 * 3  # two models, the demo's 15 samples, three epochs
SAID = re.compile(
    r"run counts interrupted by SIGINT: (\d+) new records? stored, (\d+) asked and not stored "
    r"\(possibly paid for; asked again on resume\), (\d+) never sent; everything stored is kept"
)


@pytest.mark.parametrize("limits", [(), ("--rpm", f"{SLOW}=3")], ids=["free", "rate-limited"])
def test_an_interrupt_tells_sent_and_unsent_apart(
    limits, ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    assert LATENCY["sim-0.5-slow"] / 1000 > DRAIN_S + 10  # the slow calls outlast the drain
    tag = uuid.uuid4().hex
    runs, sim_log, log = tmp_path / "runs", tmp_path / "sim.jsonl", tmp_path / "run.log"
    rules = [{"match": model, "latency": {"ms": ms}} for model, ms in LATENCY.items()]
    env = {
        **os.environ,
        "EVALFLEET_TEST_TAG": tag,
        "RAY_ADDRESS": ray_address,
        "PREFECT_API_URL": prefect_api_url,
    }
    with start_simulator(answer_key, {"rules": rules}, sim_log) as sim:
        args = ["run", "-m", FAST, "-m", SLOW, "--dataset-path", demo_dataset, "--epochs", "2"]
        args += ["--run-id", "counts", "--store", str(runs), "--simulator-url", sim.url]
        args += ["--max-in-flight", "8", "--workers", "1", *limits]
        process = start(args, env, log)
        deadline = time.monotonic() + 120
        # Fast answers have landed, so the slow model's calls have been in flight a while.
        while sum(e["status"] == 200 for e in sim.read_log()) < 8:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=DRAIN_S + 30)
        output = log.read_text()
        assert process.returncode == 130, output
        assert "Traceback" not in output, output
        found = SAID.search(output)
        assert found is not None, output
        stored, unstored, never = (int(n) for n in found.groups())
        # A cut-off call is logged when its connection closes: when Ray ends the worker
        # process that held it, which may come after the run's own process has exited.
        deadline = time.monotonic() + 30
        entries = sim.read_log()
        while sum(e["status"] == 499 for e in entries) < unstored:
            if time.monotonic() > deadline:
                break  # the assertions below say what is missing
            time.sleep(0.2)
            entries = sim.read_log()
    statuses = Counter(e["status"] for e in entries)
    assert set(statuses) <= {200, 499}, statuses
    assert stored == statuses[200] == len(records(runs, "counts"))
    assert unstored == statuses[499]
    assert {e["model"] for e in entries if e["status"] == 499} == {"sim-0.5-slow"}
    assert unstored >= 1  # the slow model had calls in flight: they were sent, not "not asked"
    assert never == ITEMS - len(entries)  # requests the simulator never saw
    assert stored + unstored + never == ITEMS
    assert wait_for_no_processes(tag, timeout_s=30) == []
