"""docs/extending.md's tutorial as a newcomer follows it: scaffold a benchmark in a fresh
folder, install it the documented way (`make plugin PLUGIN=DIR`, into this checkout's
environment), run `make install` again and find it still there, write its answer key, run it
against the simulator with the CLI, and find it in the report, the leaderboard and the run
form's schema (the browser half of the form is tests/stack/test_stack.py's).

The package goes into the project's environment for about 20 s and is uninstalled at
teardown, the folder's modification time put back (the warm launcher of a running stack
compares it). Its name carries this process's id, so two sessions never share one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table
from tests.support.plugin_benchmark import uv

pytestmark = pytest.mark.slow  # installs a package, runs make and evalfleet in subprocesses

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ["zerobench", "zerobench_subquestions", "omnibench", "rome", "datbench", "datbench_blind"]
FORM = """
import json
from evalfleet.deployments.serve import build_deployments
served = next(d for d in build_deployments() if d.flow_name == "evaluate-and-aggregate")
schema = served._parameter_openapi_schema.model_dump(mode="json")  # what serve registers
print(json.dumps(schema["definitions"]["EvalRequest"]["properties"]))
"""


def make(*args: str) -> subprocess.CompletedProcess[str]:
    """A make target of this checkout, for the environment this test runs in."""
    version = [] if Path(sys.prefix).name == ".venv" else [f"PYTHON_VERSION={sys.version[:4]}"]
    return subprocess.run(
        ["make", "-s", *args, *version],
        cwd=REPO,
        env={**os.environ, "UV_OFFLINE": "1"},  # the build backend from uv's cache
        capture_output=True,
        text=True,
        timeout=300,
    )


def evalfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalfleet.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def newcomer(tmp_path) -> Iterator[tuple[str, Path]]:
    """(the benchmark's name, the fresh folder); the package is uninstalled afterwards."""
    name = f"mybench{os.getpid()}"
    site = Path(sysconfig.get_paths()["purelib"])
    before = site.stat()
    try:
        yield name, tmp_path
    finally:
        subprocess.run(
            [uv(), "pip", "uninstall", "--quiet", "--python", sys.executable, name],
            capture_output=True,
            timeout=120,
        )
        os.utime(site, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_the_tutorial_from_scaffold_to_leaderboard_and_form(newcomer, session_services):
    name, here = newcomer
    made = evalfleet("new", "benchmark", name, cwd=here)
    folder = here / name
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[0] == f"created {folder}"
    assert f"make plugin PLUGIN={folder};" in made.stdout

    installed = make("plugin", f"PLUGIN={folder}")
    assert installed.returncode == 0, installed.stderr
    again = make("install")  # what every make target runs first
    assert again.returncode == 0, again.stderr
    assert "Uninstalled" not in again.stderr + again.stdout
    shown = evalfleet("run", "--help", cwd=here)
    benchmarks = " ".join(shown.stdout.split()).split("--benchmark NAME, -b NAME", 1)[1]
    assert name in benchmarks.split(" --", 1)[0], shown.stderr  # one of the choices it lists

    own = subprocess.run(  # the package's own test, as step 5 runs it
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout[-2000:]

    data = folder / "src" / name / "data.jsonl"
    key = here / f"{name}-answers.jsonl"
    wrote = evalfleet(
        "simulate", "--answers-for", str(data), "-b", name, "--answers", str(key), cwd=here
    )
    assert wrote.returncode == 0, wrote.stderr
    assert len(key.read_text().splitlines()) == 3

    with start_simulator(key, {"latency": {"ms": 1}}, here / "sim.jsonl") as sim:
        run = evalfleet(
            *("run", "-m", "openai/sim-0.9", "-b", name, "--run-id", "mybench-1"),
            *("--simulator-url", sim.url),
            cwd=here,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "run mybench-1: 3 items, none ended in an error"
    targets = {"q1": "5", "q2": "3", "q3": "12"}
    right = []
    for path in sorted((here / "runs" / "mybench-1" / "completions").rglob("*.json")):
        record = json.loads(path.read_text())
        found = re.findall(r"Final Answer:\s*(\S+)", record["response"])
        right.append(found[-1:] == [targets[record["sample_id"]]])
    assert len(right) == 3
    summary = result_table(here / "runs", "mybench-1", f"summary_{name}.parquet")
    assert list(summary[["model", "benchmark", "scoring", "n"]].itertuples(index=False)) == [
        ("openai/sim-0.9", name, "exact", 3)
    ]
    assert summary.iloc[0]["accuracy"] == pytest.approx(sum(right) / 3, abs=1e-12)

    report = evalfleet("report", "mybench-1", cwd=here)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.split("report: ", 1)[1].strip())
    assert page.parent.parent == here / "runs" / "mybench-1" / "results"
    assert f'"{name}"' in page.read_text()
    board = evalfleet("leaderboard", cwd=here)
    assert board.returncode == 0, board.stderr
    section = board.stdout.split(f"## {name} — exact", 1)[1]
    row = next(line for line in section.splitlines() if "openai/sim-0.9" in line)
    assert row.startswith("| 1 | 1 | openai/sim-0.9 | ") and " 3/3 | 0 |" in row

    form = subprocess.run(
        [sys.executable, "-c", FORM], cwd=here, capture_output=True, text=True, timeout=120
    )
    assert form.returncode == 0, form.stderr[-3000:]
    fields = json.loads(form.stdout.splitlines()[-1])
    assert fields["benchmarks"]["items"]["enum"] == [*SHIPPED, name]
    assert fields["dataset_paths"]["properties"][name]["type"] == "string"
