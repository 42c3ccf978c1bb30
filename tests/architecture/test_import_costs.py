"""What a command costs before it does anything: the commands that run nothing import none of
Ray, Prefect, the provider SDKs or scipy.stats (each costs a command ~0.3-0.6 s of CPU), and
a run's heavier pieces come only where used (issue 46)."""

from __future__ import annotations

import json
import subprocess
import sys

from evalfleet.engine.generation.online import workers_for
from evalfleet.metrics.intervals import t975

HEAVY = ("ray", "prefect", "openai", "anthropic", "google.genai", "scipy.stats", "datasets")

PROBE = """
import json, sys
from evalfleet.cli.main import main
codes = [main(["runs", "--store", sys.argv[1]]), main(["status", "nope", "--store", sys.argv[1]])]
from evalfleet.providers.openai_chat import OpenAIChatClient
from evalfleet.providers.registry import ModelConfig
heavy = [name for name in json.loads(sys.argv[2]) if name in sys.modules]
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_commands_that_run_nothing_import_no_ray_prefect_sdk_or_scipy_stats(tmp_path):
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "store"), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout.splitlines()[-1])
    assert found == {"codes": [0, 2], "heavy": []}
    assert "error: " in probe.stderr


def test_a_small_run_starts_one_worker_a_large_one_as_many_as_asked():
    assert workers_for(2, 1) == 1
    assert workers_for(2, 180) == 1  # the demo
    assert workers_for(2, 256) == 1
    assert workers_for(2, 257) == 2
    assert workers_for(8, 100_000) == 8


def test_t975_is_students_t_quantile():
    assert t975(1) == 12.706204736174694
    assert t975(4) == 2.7764451051977934
    assert t975(29) == 2.045229642132703
