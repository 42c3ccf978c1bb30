"""Ray's serialization context without Arrow: a driver that joined with `ensure_ray` and the
worker actors of a cluster started with `RAY_SYSTEM_CONFIG` exchange objects without ever
importing pyarrow or NumPy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evalfleet.core.checkout import ROOT

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

DRIVER = """
import sys
import ray
from evalfleet.engine.generation.ray_session import ensure_ray

ensure_ray()

@ray.remote(num_cpus=0.01)
class Echo:
    def __init__(self, settings):
        self.settings = settings

    def echo(self, parts):
        return parts, self.settings, "pyarrow" in sys.modules, "numpy" in sys.modules

actor = Echo.remote({"model": "m"})
parts, settings, worker_arrow, worker_numpy = ray.get(actor.echo.remote([b"png", "text"]))
assert parts == [b"png", "text"] and settings == {"model": "m"}
print(worker_arrow, worker_numpy, "pyarrow" in sys.modules, "numpy" in sys.modules)
"""


def test_neither_driver_nor_worker_imports_arrow(ray_address):
    env = {**os.environ, "RAY_ADDRESS": ray_address}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False", "False", "False"]
