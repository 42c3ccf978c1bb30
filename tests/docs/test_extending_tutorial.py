"""docs/extending.md's tutorial as a newcomer follows it: scaffold a benchmark in a fresh
folder, install it the documented way (`make plugin PLUGIN=DIR`, into this checkout's
environment), run `make install` again and find it still there, write its answer key, run it
against the simulator with the CLI, and find it in the report, the leaderboard and the run
form's schema (the browser half of the form is tests/stack/test_stack.py's).

The package goes into a copy of the project's environment made of hard links (0.6 s for its
89,000 files), never into the environment itself: the other tests running beside this one
(a stack's warm launcher, the list of shipped benchmarks) must not see a package come and go.
`make` is pointed at the copy with VENV= and UV_PROJECT_ENVIRONMENT=; uv and compileall replace
files rather than write into them, so the shared inodes are never changed. The run is small and
asks no stack, as a newcomer's first run does: it runs in the command's own process."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table

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


def make(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A make target of this checkout, for the environment `venv`."""
    return subprocess.run(
        ["make", "-s", *args, f"VENV={venv}", f"UV_PROJECT_ENVIRONMENT={venv}"],
        cwd=REPO,
        env={**os.environ, "UV_OFFLINE": "1"},  # the build backend from uv's cache
        capture_output=True,
        text=True,
        timeout=300,
    )


def evalfleet(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "evalfleet.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def newcomer(tmp_path, monkeypatch) -> Iterator[tuple[str, Path, Path]]:
    """(the benchmark's name, the fresh folder, the copy of the environment); no stack."""
    for name in ("RAY_ADDRESS", "PREFECT_API_URL", "EVALFLEET_STORE", "EVALFLEET_MODELS"):
        monkeypatch.delenv(name, raising=False)
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-al", sys.prefix, str(venv)], check=True, timeout=120)
    here = tmp_path / "work"
    here.mkdir()
    yield f"mybench{os.getpid()}", here, venv
    shutil.rmtree(venv, ignore_errors=True)


def test_the_tutorial_from_scaffold_to_leaderboard_and_form(newcomer):
    name, here, venv = newcomer
    made = evalfleet(venv, "new", "benchmark", name, cwd=here)
    folder = here / name
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[0] == f"created {folder}"
    assert f"make plugin PLUGIN={folder};" in made.stdout

    installed = make(venv, "plugin", f"PLUGIN={folder}")
    assert installed.returncode == 0, installed.stderr
    again = make(venv, "install")  # what every make target runs first
    assert again.returncode == 0, again.stderr
    assert "Uninstalled" not in again.stderr + again.stdout
    shown = evalfleet(venv, "run", "--help", cwd=here)
    benchmarks = " ".join(shown.stdout.split()).split("--benchmark NAME, -b NAME", 1)[1]
    assert name in benchmarks.split(" --", 1)[0], shown.stderr  # one of the choices it lists

    own = subprocess.run(  # the package's own test, as step 5 runs it
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout[-2000:]

    data = folder / "src" / name / "data.jsonl"
    key = here / f"{name}-answers.jsonl"
    wrote = evalfleet(
        venv, "simulate", "--answers-for", str(data), "-b", name, "--answers", str(key), cwd=here
    )
    assert wrote.returncode == 0, wrote.stderr
    assert len(key.read_text().splitlines()) == 3

    with start_simulator(key, {"latency": {"ms": 1}}, here / "sim.jsonl") as sim:
        run = evalfleet(
            venv,
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

    report = evalfleet(venv, "report", "mybench-1", cwd=here)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.split("report: ", 1)[1].strip())
    assert page.parent.parent == here / "runs" / "mybench-1" / "results"
    assert f'"{name}"' in page.read_text()
    board = evalfleet(venv, "leaderboard", cwd=here)
    assert board.returncode == 0, board.stderr
    section = board.stdout.split(f"## {name} — exact", 1)[1]
    row = next(line for line in section.splitlines() if "openai/sim-0.9" in line)
    assert row.startswith("| 1 | 1 | openai/sim-0.9 | ") and " 3/3 | 0 |" in row

    form = subprocess.run(
        [str(venv / "bin" / "python"), "-c", FORM],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert form.returncode == 0, form.stderr[-3000:]
    fields = json.loads(form.stdout.splitlines()[-1])
    assert fields["benchmarks"]["items"]["enum"] == [*SHIPPED, name]
    assert fields["dataset_paths"]["properties"][name]["type"] == "string"
