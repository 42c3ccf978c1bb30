"""The served deployments: registered with schedules and a form, run on demand, retried.

A flow run whose items failed (the provider was down) is retried with `prefect flow-run
retry`: the served runner picks it up again and only the failed items are requested.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from providers.simulator.process import start_simulator
from tests.helpers import results_dir

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def read_deployments() -> dict:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        deployments = await client.read_deployments()
        flows = {f.id: f.name for f in await client.read_flows()}
    return {f"{flows[d.flow_id]}/{d.name}": d for d in deployments}


async def wait_for_run(flow_run_id, state_names: set[str], timeout: float = 240):
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    async with get_client() as client:
        while True:
            run = await client.read_flow_run(flow_run_id)
            if run.state and run.state.name in state_names:
                return run
            assert time.monotonic() < deadline, f"flow run stuck in {run.state}"
            await asyncio.sleep(0.5)


def test_served_deployments_run_and_retry(
    ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path
):
    from prefect.deployments import run_deployment

    env = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    serve = subprocess.Popen(
        [sys.executable, "deployments/serve.py"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(asyncio.run(read_deployments())) < 3:
            assert serve.poll() is None, "deployments/serve.py exited"
            assert time.monotonic() < deadline
            time.sleep(0.5)
        deployments = asyncio.run(read_deployments())
        assert set(deployments) >= {
            "evaluate-and-aggregate/on-demand",
            "aggregate/on-demand",
            "reevaluate/nightly",
        }
        nightly = deployments["reevaluate/nightly"]
        assert [s.schedule.cron for s in nightly.schedules] == ["0 3 * * *"]
        form = deployments["evaluate-and-aggregate/on-demand"].parameter_openapi_schema
        assert form["required"] == ["request"]
        assert "EvalRequest" in json.dumps(form)

        port = free_port()
        runs = tmp_path / "runs"
        request = {
            "models": ["openai/sim-0.5"],
            "benchmarks": ["zerobench"],
            "dataset_path": demo_dataset,
            "run_id": "served",
            "store": str(runs),
            "simulator_url": f"http://127.0.0.1:{port}",
            "max_attempts": 2,
        }
        # A configuration error fails at once with its one line, and is not retried.
        bad = {**request, "models": ["openai/gpt-nonexistent"], "run_id": "bad"}
        flow_run = run_deployment(
            "evaluate-and-aggregate/on-demand", parameters={"request": bad}, timeout=0
        )
        failed = asyncio.run(wait_for_run(flow_run.id, {"Completed", "Failed", "Crashed"}))
        assert failed.state.name == "Failed"
        assert (
            "unknown model 'openai/gpt-nonexistent': add it to deployments/models.yaml"
            in failed.state.message
        )
        assert failed.run_count == 1
        assert (failed.end_time - failed.start_time).total_seconds() < 5
        assert not (runs / "bad").exists()

        down = {"faults": {"http_500": 1.0}, "latency": {"ms": 1}}
        with start_simulator(answer_key, down, tmp_path / "down.jsonl", port=port):
            flow_run = run_deployment(
                "evaluate-and-aggregate/on-demand", parameters={"request": request}, timeout=0
            )
            first = asyncio.run(wait_for_run(flow_run.id, {"Completed", "Failed", "Crashed"}))
        assert first.state.name == "Completed"
        failed = sorted((runs / "served" / "completions").rglob("*.failed-*.json"))
        assert len(failed) == 4 * 6  # every item failed for good: 4 questions x 6 epochs

        with start_simulator(answer_key, {"latency": {"ms": 1}}, tmp_path / "up.jsonl", port=port):
            retry = subprocess.run(
                [sys.executable, "-m", "prefect", "flow-run", "retry", str(flow_run.id)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert retry.returncode == 0, retry.stdout + retry.stderr
            time.sleep(1)
            again = asyncio.run(wait_for_run(flow_run.id, {"Completed", "Failed", "Crashed"}))
            assert again.state.name == "Completed"
            assert again.run_count >= 2
        up = [json.loads(x) for x in (tmp_path / "up.jsonl").read_text().splitlines()]
        assert len(up) == 4 * 6  # exactly the failed items, once each
        done = sorted(
            p for p in (runs / "served" / "completions").rglob("*.json") if "failed" not in p.name
        )
        assert len(done) == 4 * 6
        summary = (results_dir(runs, "served") / "summary_zerobench.csv").read_text()
        assert "openai/sim-0.5" in summary
    finally:
        serve.kill()
        serve.wait()
