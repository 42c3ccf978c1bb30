"""The wheel where its users install it: built from this checkout (`uv build --wheel`), one
top-level package in it (`evalfleet`), installed into a fresh environment outside it (`uv venv`,
`uv pip install`, the lock's versions as constraints so that a failure is this code's and not a
new release's) beside another project's package named `core`, then `evalfleet demo` and a
script calling `evalfleet.run` in a folder holding a `tasks.py` and a `cli.py` of the user's,
with a home and a temporary directory of its own, no PYTHONPATH and the checkout on no path.
Everything the code reads must have come with the wheel, and nothing of the user's shadows it.

The demo may write bytecode (PYTHONDONTWRITEBYTECODE is unset for it): each module is then
compiled once, as on a user's first run. With no bytecode at all, each of the demo's processes
compiles Ray from source, and on two busy cores Ray's head gives up waiting for its agents.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from tests.support.helpers import tagged_processes, wait_for_no_processes

pytestmark = pytest.mark.slow  # a build, an install and a demo with its own Ray and Prefect

REPO = Path(__file__).resolve().parents[2]
WHEEL = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]
PACKAGES = WHEEL["wheel"]["packages"]
assert PACKAGES == ["src/evalfleet"]
MODULES = [
    "evalfleet",
    *(
        f"evalfleet.{p.name}"
        for p in sorted((REPO / PACKAGES[0]).iterdir())
        if (p / "__init__.py").is_file()
    ),
]
OF_MAKE = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON")  # `make ... PYTHON_VERSION=3.13` sets them
RUN_ID = "wheel-demo"
# 2 models x (4 ZeroBench questions + 11 subquestions) x 6 epochs (one greedy, five sampled)
ANSWERS = 2 * (4 + 11) * 6

PROBE = """
import importlib, json, sys
from importlib import resources
from evalfleet.stack.runners import prefect_yaml
print(json.dumps({
    "files": {name: importlib.import_module(name).__file__ for name in sys.argv[1:]},
    "path": sys.path,
    "models": resources.files("evalfleet.providers").joinpath("models.yaml").is_file(),
    "k8s": sorted(
        p.name for p in resources.files("evalfleet.deployments").joinpath("k8s").iterdir()
    ),
    "prefect_yaml": str(prefect_yaml()),
}))
"""


def _uv() -> str:
    found = shutil.which("uv") or str(REPO / ".bootstrap" / "bin" / "uv")
    assert Path(found).is_file(), "no uv on this machine: `make install` bootstraps it"
    return found


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float, log: Path):
    """Run to the end; its output goes to `log`, whose tail a failure shows."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    output = log.read_text(errors="replace")
    assert code == 0, f"{' '.join(command[:3])} exited {code}:\n{output[-3000:]}"
    return output


def _tracked_package_files() -> set[str]:
    """The checkout's tracked files of the package, as the wheel names them (evalfleet/...)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *PACKAGES],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return {
        name.removeprefix("src/") for name in listed.split("\0") if name and (REPO / name).is_file()
    }


# Another project's package named like one of evalfleet's rooms, and the user's own files.
OTHER_CORE = """
[project]
name = "core"
version = "1.0"
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
[tool.hatch.build.targets.wheel]
packages = ["core"]
"""
SHADOW = "raise SystemExit(\"the user's {name} was imported: evalfleet's module is shadowed\")\n"
API_SCRIPT = """
import sys
import evalfleet
from evalfleet.simulator import start_simulator

with start_simulator(sys.argv[1], {"latency": {"ms": 5}}) as sim:
    result = evalfleet.run(
        models=["openai/sim-0.5"],
        benchmarks=["zerobench"],
        dataset_path="demo-data/zerobench",
        simulator_url=sim.url,
        run_id="from-python",
        epochs=1,
    )
print("complete", result.complete)
for headline in result.headline:
    print("headline", headline)
"""


def test_the_installed_wheel_runs_the_demo_in_an_empty_folder():
    root = Path(tempfile.mkdtemp(prefix="efw-")).resolve()  # short: Ray's socket paths are limited
    tag = f"wheel-{os.getpid()}"
    try:
        _check_wheel_run(root, tag)
    finally:
        for pid, _ in tagged_processes(tag):  # none, unless the demo failed to stop them
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def _check_wheel_run(root: Path, tag: str) -> None:
    uv = _uv()
    # Not the environment `make` may have chosen for this suite (UV_PROJECT_ENVIRONMENT, ...).
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", *OF_MAKE)}
    uv_env = {**base, "UV_PYTHON_DOWNLOADS": "never", "TMPDIR": str(root)}  # its build locks too

    def uv_run(*args: str, cwd: Path = REPO, timeout: float = 120) -> str:
        return _run([uv, *args], cwd=cwd, env=uv_env, timeout=timeout, log=root / "uv.log")

    # The wheel holds every file of the project's packages, and nothing else.
    uv_run("build", "--wheel", "--out-dir", str(root / "dist"))
    (wheel,) = (root / "dist").glob("evalfleet-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert _tracked_package_files() - names == set()
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
    assert {name.split("/")[0] for name in names} == {"evalfleet", dist_info}

    # A fresh environment outside the checkout, with the lock's versions.
    constraints = root / "constraints.txt"
    export = ["export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q"]
    uv_run(*export, "-o", str(constraints))
    venv = root / "venv"
    uv_run("venv", "-q", "--python", sys.executable, str(venv), cwd=root)
    python = str(venv / "bin" / "python")
    install = ["pip", "install", "-q", "--python", python, "-c", str(constraints), str(wheel)]
    uv_run(*install, cwd=root, timeout=600)
    other = root / "other-core"  # another project's top-level package `core`, beside it
    (other / "core").mkdir(parents=True)
    (other / "pyproject.toml").write_text(OTHER_CORE)
    (other / "core" / "__init__.py").write_text(SHADOW.format(name="core package"))
    uv_run("pip", "install", "-q", "--python", python, str(other), cwd=root, timeout=300)

    # The demo's world: an empty folder, a home and a temporary directory of its own, in a git
    # repository of someone else's (whose commit is not evalfleet's code version).
    (root / "home").mkdir()
    work = root / "work"
    work.mkdir()
    for name in ("tasks.py", "cli.py"):  # the user's own files, in the folder they work in
        (work / name).write_text(SHADOW.format(name=name))
    git = ["git", "-c", "user.name=someone", "-c", "user.email=someone@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "theirs"], cwd=root, check=True)
    env = {k: v for k, v in base.items() if not k.startswith(("EVALFLEET_", "PREFECT_", "RAY_"))}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTHON", "AWS_ENDPOINT"))}
    env.update(
        HOME=str(root / "home"),
        TMPDIR=str(root),
        RAY_USAGE_STATS_ENABLED="0",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        EVALFLEET_TEST_TAG=tag,
    )

    def in_work(*command: str, log: str) -> str:
        return _run(list(command), cwd=work, env=env, timeout=600, log=root / log)

    found = json.loads(in_work(python, "-c", PROBE, *MODULES, log="probe.log").splitlines()[-1])
    site = (venv / "lib").resolve()
    for name, file in found["files"].items():
        assert Path(file).resolve().is_relative_to(site), (name, file)
    assert [p for p in found["path"] if (work / p).resolve().is_relative_to(REPO)] == []
    assert found["models"] is True
    assert found["k8s"] == sorted(p.name for p in (REPO / "deployments" / "k8s").iterdir())
    assert Path(found["prefect_yaml"]).resolve().is_relative_to(site)

    out = in_work(str(venv / "bin" / "evalfleet"), "demo", "--run-id", RUN_ID, log="demo.log")
    assert wait_for_no_processes(tag, timeout_s=20) == []

    runs = work / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["leaderboard", RUN_ID]
    latest = json.loads((runs / RUN_ID / "results" / "latest.json").read_text())
    results = runs / RUN_ID / "results" / latest["version"]
    assert f"run {RUN_ID} — results in {results}/" in out
    assert f"report: {results / 'report.html'}" in out
    for split in ("zerobench", "zerobench_subquestions"):
        tables = {f"summary_{split}.{suffix}" for suffix in ("csv", "md", "parquet")}
        assert tables <= set(latest["files"])
        summary = pd.read_parquet(results / f"summary_{split}.parquet")
        assert sorted(set(summary["model"])) == ["openai/sim-0.3", "openai/sim-0.7"]
    assert len(list((runs / RUN_ID / "completions").rglob("*.json"))) == ANSWERS
    html = (results / "report.html").read_text()
    board = (runs / "leaderboard" / "index.html").read_text()
    assets = sorted((REPO / PACKAGES[0] / "reports" / "assets").iterdir())
    assert {p.suffix for p in assets} == {".css", ".js"}
    for asset in assets:  # each inlined from the installed reports/assets, by its page
        if asset.name == "tags_edit.js":  # `evalfleet view` adds it to a page it serves
            served = next(site.glob("python3*/site-packages/evalfleet/reports/assets"))
            assert (served / asset.name).read_text() == asset.read_text()
            continue
        page = board if asset.stem == "board" else html
        assert asset.read_text() in page, asset.name
    assert (runs / "leaderboard" / "index.html").is_file()
    manifest = json.loads((runs / RUN_ID / "manifest.json").read_text())
    assert (manifest["code_version"], latest["code_version"]) == ("unknown", "unknown")

    # The same run from Python, through the front door: the demo's data and answer key.
    (work / "api.py").write_text(API_SCRIPT)
    answers = work / "demo-data" / "answers-zerobench.jsonl"
    said = in_work(python, "api.py", str(answers), log="api.log")
    assert wait_for_no_processes(tag, timeout_s=20) == []
    lines = [line for line in said.splitlines() if line.startswith(("complete", "headline"))]
    assert lines[0] == "complete True"
    headline = [line.split()[1:5] for line in lines[1:]]
    assert headline == [
        ["openai/sim-0.5", "zerobench", scoring, "accuracy"] for scoring in ("upstream", "robust")
    ]
    frame = pd.read_parquet(
        next((runs / "from-python" / "results").glob("v-*/summary_zerobench.parquet"))
    )
    figures = {
        f"{v:.3f} ({lo:.3f}–{hi:.3f})"
        for v, lo, hi in zip(frame["accuracy"], frame["ci95_low"], frame["ci95_high"], strict=True)
    }
    assert {" ".join(line.split()[5:]) for line in lines[1:]} == figures
