"""A run borrows the cluster's warm workers (`tasks.pool`) only when they run with its job's
runtime env (`tasks.job_env`).

The session's Ray keeps warm workers, as `evalfleet up --ray` does (tests/conftest.py). A
driver submitted with env vars of its own in its runtime env (the S3 credentials of a `ray job
submit --runtime-env-json`, here RAY_JOB_CONFIG_JSON_ENV_VAR) must not borrow them: they were
started without those variables, and its records would be written without its credentials.
Each driver is a child process joined to the session's Ray, as `evalfleet run` joins it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the session's Ray and its warm workers

REPO = Path(__file__).resolve().parents[2]
DRIVER = """
import json, sys, time
import ray
from evalfleet.engine.generation.ray_session import ensure_ray
from evalfleet.providers.retry import RetryPolicy
from evalfleet.tasks.job_env import runtime_env_digest
from evalfleet.tasks.pool import Crew, keeps_warm_workers
from evalfleet.tasks.worker import WorkerSetup

ensure_ray()
setup = WorkerSetup(sys.argv[1], None, {}, {}, RetryPolicy(), {}, [])
keeps = keeps_warm_workers()
deadline = time.monotonic() + 40  # a run of an earlier test killed holds its claim <= 15 s
while True:
    crew = Crew(setup, [])
    workers = crew.gather(1)
    if crew._warm or not keeps or time.monotonic() > deadline:
        break
    crew.end(workers)
    time.sleep(0.5)
envs = ray.get([w.job_env.remote() for w in workers])
print(json.dumps({
    "keeps_warm": keeps,
    "borrowed": len(crew._warm),
    "workers_have_my_env": envs == [runtime_env_digest()] * len(workers),
}))
crew.end(workers)
"""


def drive(ray_address: str, store: Path, job_config: dict | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RAY_JOB_CONFIG_JSON_ENV_VAR"}
    env["RAY_ADDRESS"] = ray_address
    if job_config is not None:
        env["RAY_JOB_CONFIG_JSON_ENV_VAR"] = json.dumps(job_config)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(store)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_driver_without_a_runtime_env_borrows_a_warm_worker(ray_address, tmp_path):
    assert drive(ray_address, tmp_path / "runs", None) == {
        "keeps_warm": True,
        "borrowed": 1,
        "workers_have_my_env": True,
    }


def test_a_driver_with_env_vars_of_its_own_starts_its_own_workers(ray_address, tmp_path):
    job = {"runtime_env": {"env_vars": {"EVALFLEET_TEST_JOB_MARK": "own"}}}
    assert drive(ray_address, tmp_path / "runs", job) == {
        "keeps_warm": False,
        "borrowed": 0,
        "workers_have_my_env": True,
    }
