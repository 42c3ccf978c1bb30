"""A benchmark from a package of its own (`tests/support/plugin_benchmark.py`: built and installed
by uv into a folder of its own, found through PYTHONPATH) is a benchmark everywhere: in
`evalfleet run --help` with its option's flag, in `simulate --answers-for`, end to end through
`evalfleet run` against the simulator, in the run form of the served deployment, and in the
stack's launcher, which refuses callers that see other packages than it does. A package whose
entry point cannot be loaded is one line naming it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table
from tests.support.launcher import launched, running_launcher
from tests.support.plugin_benchmark import (
    BROKEN,
    ROWS,
    TALLY,
    install_plugins,
    with_plugins,
    write_dataset,
)

pytestmark = pytest.mark.slow  # builds and installs packages, runs evalfleet in subprocesses

REPO = Path(__file__).resolve().parents[2]
EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))
BROKEN_LINE = (
    f"benchmark '{BROKEN}' of package plugin-broken 0.1.0 (plugin_broken:Broken) cannot be "
    "loaded (ImportError: plugin_broken needs tally-data, which is not installed): reinstall "
    "or remove it"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install_plugins(tmp_path_factory.mktemp("plugins"))


def evalfleet(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVALFLEET, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def benchmark_help(help_text: str) -> str:
    """The --benchmark line of `run --help`, unwrapped."""
    flat = " ".join(help_text.split())
    return flat.split("--benchmark NAME, -b NAME", 1)[1].split(" --", 1)[0]


def test_the_command_line_runs_it_end_to_end(site, ray_address, prefect_api_url, tmp_path):
    plain = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env = with_plugins(plain, site)

    shown = evalfleet(env, "run", "--help")
    assert shown.returncode == 0, shown.stderr
    assert TALLY in benchmark_help(shown.stdout) and BROKEN not in benchmark_help(shown.stdout)
    assert "--plugin-tally-answer-format {final,boxed}" in shown.stdout
    assert shown.stderr == f"warning: {BROKEN_LINE}\n"
    without = evalfleet(plain, "run", "--help")
    assert TALLY not in without.stdout and without.stderr == ""

    data = write_dataset(tmp_path / "tally.jsonl")
    key = tmp_path / "answers.jsonl"
    wrote = evalfleet(
        env, "simulate", "--answers-for", str(data), "-b", TALLY, "--answers", str(key)
    )
    assert wrote.returncode == 0, wrote.stderr
    assert len(key.read_text().splitlines()) == len(ROWS)

    runs = tmp_path / "runs"
    session = {**os.environ, "RAY_ADDRESS": ray_address, "PREFECT_API_URL": prefect_api_url}
    attached = with_plugins(session, site)  # the session's Ray and Prefect server
    with start_simulator(key, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        done = evalfleet(
            attached,
            *("run", "-m", "openai/sim-0.5", "-b", TALLY, "--dataset-path", str(data)),
            *("--protocol", "sampled-k", "--epochs", "2", "--run-id", "tally"),
            *("--store", str(runs), "--simulator-url", sim.url),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        broken = evalfleet(
            attached,
            *("run", "-m", "openai/sim-0.5", "-b", BROKEN, "--dataset-path", str(data)),
            *("--store", str(runs), "--simulator-url", sim.url),
        )
    assert broken.returncode == 2
    assert broken.stderr.splitlines()[-1] == f"error: invalid request: --benchmark: {BROKEN_LINE}"

    counts = {uid: str(word.count(letter)) for uid, word, letter, _ in ROWS}
    kinds = {uid: kind for uid, _, _, kind in ROWS}
    solved: dict[str, list[float]] = defaultdict(list)
    for path in (runs / "tally" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        found = re.findall(r"Final Answer:\s*(\d+)", record["response"])
        solved[record["sample_id"]].append(float(found[-1:] == [counts[record["sample_id"]]]))
    assert sorted(solved) == sorted(counts) and {len(v) for v in solved.values()} == {2}
    summary = result_table(runs, "tally", f"summary_{TALLY}.parquet")
    assert list(summary[["model", "benchmark", "scoring", "n"]].itertuples(index=False)) == [
        ("openai/sim-0.5", TALLY, "exact", 10)
    ]
    everything = [v for values in solved.values() for v in values]
    assert summary.iloc[0]["accuracy"] == pytest.approx(sum(everything) / 10, abs=1e-12)
    metrics = result_table(runs, "tally", "metrics.parquet")
    vowels = metrics[metrics.group == "kind=vowel"].iloc[0]
    values = [v for uid, vs in solved.items() if kinds[uid] == "vowel" for v in vs]
    assert (vowels.value, vowels.n) == (pytest.approx(sum(values) / 6, abs=1e-12), 6)


FORM = """
import json
from evalfleet.deployments.serve import build_deployments
served = next(d for d in build_deployments() if d.flow_name == "evaluate-and-aggregate")
schema = served._parameter_openapi_schema.model_dump(mode="json")  # what serve registers
print(json.dumps(schema["definitions"]["EvalRequest"]["properties"]))
"""


def test_the_run_form_offers_it(site):
    """The served deployment's parameters are the form the UI draws: the benchmarks' drop-down
    and one section of options per benchmark."""
    plain = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    forms = {}
    for label, env in {"with": with_plugins(plain, site), "without": plain}.items():
        done = subprocess.run(
            [sys.executable, "-c", FORM], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
        forms[label] = json.loads(done.stdout.splitlines()[-1])
    own = ["zerobench", "zerobench_subquestions", "omnibench", "rome", "datbench", "datbench_blind"]
    assert forms["without"]["benchmarks"]["items"]["enum"] == own
    assert forms["with"]["benchmarks"]["items"]["enum"] == [*own, TALLY]
    section = forms["with"]["benchmark_options"]["properties"][TALLY]
    assert section["properties"]["answer_format"]["enum"] == ["final", "boxed"]
    assert TALLY not in forms["without"]["benchmark_options"]["properties"]


def test_the_launcher_runs_only_callers_that_see_its_packages(site, tmp_path):
    plain = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    with running_launcher(tmp_path, with_plugins(plain, site)) as state:
        outputs = {}
        for label, env in {"same": with_plugins(plain, site), "other": plain}.items():
            process = subprocess.Popen(
                [EVALFLEET, "run", "--help"],
                cwd=REPO,
                env={**env, "EVALFLEET_STACK": str(state)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            out, _ = process.communicate(timeout=300)
            outputs[label] = (process.returncode, launched(state, process.pid), out)
    assert outputs["same"][:2] == (0, True)  # forked by the launcher, which sees the package
    assert TALLY in benchmark_help(outputs["same"][2])
    assert outputs["other"][:2] == (0, False)  # refused: it would have offered plugin-tally
    assert TALLY not in outputs["other"][2]
