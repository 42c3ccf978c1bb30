"""The house: which room may import which (README "Layout"), who may import Prefect, that
no code outside `benchmarks/` names a benchmark, and the size limits of `cli/` and `flows/`.
Read from the source with `ast`, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks import registry
from core.checkout import PROJECT_PACKAGES

REPO = Path(__file__).resolve().parents[2]
ROOMS = list(PROJECT_PACKAGES)  # the rooms are the project's packages
BASE = {"storage", "metrics", "core"}
# room -> the rooms it may import (its own always)
ALLOWED = {
    "cli": set(ROOMS) - {"deployments"},
    "flows": {"engine", "reports", "tasks", "providers", "benchmarks"} | BASE,
    "stack": {"engine", "tasks", "providers", "benchmarks"} | BASE,
    "reports": {"engine", "benchmarks"} | BASE,
    "engine": {"tasks", "providers", "benchmarks"} | BASE,
    "tasks": {"providers"} | BASE,
    "providers": BASE,
    "simulator": {"core"},
    "benchmarks": BASE,
    "storage": {"core"},
    "metrics": {"core"},
    "core": set(),
    "deployments": {"flows", "engine"} | BASE,
}
PREFECT_ROOMS = {"flows", "stack", "deployments"}


def test_the_rooms_are_every_package_of_the_checkout():
    """The launcher's code digest and these rules both read PROJECT_PACKAGES: a new package
    left out of it would be neither checked here nor noticed by a warm launcher."""
    packages = {
        path.parent.name
        for path in REPO.glob("*/__init__.py")
        if path.parent.name not in {"tests", "perf"}
    }
    assert packages == set(ROOMS)
    assert set(ALLOWED) == set(ROOMS)


def modules(room: str) -> list[Path]:
    return sorted((REPO / room).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_imports_only_the_rooms_below_it(room):
    wrong = {
        str(path.relative_to(REPO)): sorted((imported(path) & set(ROOMS)) - ALLOWED[room] - {room})
        for path in modules(room)
    }
    assert {path: names for path, names in wrong.items() if names} == {}


def test_only_flows_stack_and_deployments_import_prefect():
    importers = [
        str(path.relative_to(REPO))
        for room in ROOMS
        for path in modules(room)
        if "prefect" in imported(path) and room not in PREFECT_ROOMS
    ]
    assert importers == []
    # the check itself sees a lazy import inside a function
    assert "prefect" in imported(REPO / "flows" / "in_process.py")


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    }


def test_no_code_outside_benchmarks_names_a_benchmark():
    names = set(registry.names())
    naming = {
        str(path.relative_to(REPO)): sorted(_string_constants(path) & names)
        for room in ROOMS
        if room != "benchmarks"
        for path in modules(room)
    }
    assert {path: found for path, found in naming.items() if found} == {}


def test_command_modules_and_flows_stay_small():
    long_cli = {p.name: n for p in modules("cli") if (n := len(p.read_text().splitlines())) > 400}
    long_flows = {
        p.name: n for p in modules("flows") if (n := len(p.read_text().splitlines())) > 250
    }
    assert (long_cli, long_flows) == ({}, {})


def test_flows_hold_only_the_flows_and_their_prefect_glue():
    flows = set()
    for path in modules("flows"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "flow":
                    flows |= {k.value.value for k in decorator.keywords if k.arg == "name"}
    assert flows == {
        "evaluate",
        "aggregate",
        "judge",
        "evaluate-and-aggregate",
        "reevaluate",
        "leaderboard",
        "poll-batches",
    }
