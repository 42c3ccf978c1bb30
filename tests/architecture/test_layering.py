"""The house: which room may import which (docs/architecture.md), who may import Prefect, that
no code outside `benchmarks/` names a benchmark, and the size limits of `cli/` and `flows/`.
Read from the source with `ast`, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evalfleet.benchmarks import registry
from evalfleet.core.checkout import PROJECT_PACKAGES

REPO = Path(__file__).resolve().parents[2]
CODE = REPO / "src" / "evalfleet"  # the one package, `evalfleet`; its sub-packages are the rooms
ROOMS = list(PROJECT_PACKAGES)  # the rooms are the project's packages
BASE = {"storage", "metrics", "core"}
# room -> the rooms it may import (its own always)
ALLOWED = {
    "cli": set(ROOMS) - {"deployments"},
    # the Python API (`evalfleet.run`): the run's start-up sequence, services and flow
    "api": set(ROOMS) - {"cli", "deployments"},
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
    packages = {path.parent.name for path in CODE.glob("*/__init__.py")}
    assert packages == set(ROOMS)
    assert set(ALLOWED) == set(ROOMS)


def modules(room: str) -> list[Path]:
    return sorted((CODE / room).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """What `path` imports, anywhere in it: the room of each of evalfleet's modules
    (`evalfleet.engine.x` is "engine"), the top-level name of anything else."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {_room(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "evalfleet":  # `from evalfleet import engine`
                names |= {alias.name for alias in node.names}
            else:
                names.add(_room(node.module))
    return names


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if parts[0] == "evalfleet" and len(parts) > 1 else parts[0]


def test_every_import_of_our_code_is_through_evalfleet():
    """A bare `import core` or `from engine import x` would find whatever module of that name
    the environment or the current folder holds."""
    bare = {}
    for path in sorted(CODE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found = [n for n in names if n.split(".")[0] in ROOMS]
            if found:
                bare.setdefault(str(path.relative_to(REPO)), []).extend(found)
    assert bare == {}


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
    assert "prefect" in imported(CODE / "flows" / "in_process.py")


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
                    named = [k.value for k in decorator.keywords if k.arg == "name"]
                    flows |= {  # a constant, or each branch of a choice between them
                        c.value
                        for n in named
                        for c in ast.walk(n)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    }
    assert flows == {
        "evaluate",
        "aggregate",
        "judge",
        "evaluate-and-aggregate",
        "reevaluate",
        "leaderboard",
        "limits",
        "poll-batches",
    }


# engine/'s sub-rooms, from the bottom up: a room imports only the rooms below it (and its own
# modules); the modules at engine/'s root (the pipeline and the jobs) may import them all.
ENGINE_ROOMS = ["run", "store", "prepare", "scoring", "generation"]


def _engine_room(path: Path) -> str | None:
    parts = path.relative_to(CODE / "engine").parts
    return parts[0] if len(parts) > 1 else None


def _engine_imports(path: Path) -> set[str]:
    """The engine sub-rooms `path` imports (`engine.<room>...`), anywhere in it."""
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "evalfleet":
                parts = parts[1:]
            if parts and parts[0] == "engine" and len(parts) > 1 and parts[1] in ENGINE_ROOMS:
                rooms.add(parts[1])
    return rooms


def test_engine_rooms_import_only_the_rooms_below_them():
    wrong = {}
    for path in modules("engine"):
        room = _engine_room(path)
        if room is None:
            continue
        below = set(ENGINE_ROOMS[: ENGINE_ROOMS.index(room)])
        extra = _engine_imports(path) - below - {room}
        if extra:
            wrong[str(path.relative_to(REPO))] = sorted(extra)
    assert wrong == {}
    # and nothing is left at engine/'s root but its face, the pipeline and the jobs
    loose = {p.name for p in (CODE / "engine").glob("*.py")}
    assert loose == {"__init__.py", "pipeline.py", "judges.py", "reevaluate.py", "retune.py"}


def test_no_room_holds_more_than_about_ten_files():
    crowded = {
        str(folder.relative_to(REPO)): count
        for folder in [*(CODE / room for room in ROOMS), *(CODE / "engine").iterdir()]
        if folder.is_dir() and folder.name != "__pycache__"
        if (count := len(list(folder.glob("*.py")))) > 12 and folder.parent.name == "engine"
    }
    assert crowded == {}


RECORD_FIELDS = {  # the names only a checkpoint record carries
    "record_version", "request_hash", "graded", "model_reported", "response", "reasoning",
    "finish_reason", "usage", "latency_s", "attempts", "attempt_errors", "started_at",
    "finished_at",
}  # fmt: skip
# Modules that read other dicts under these names: provider wire formats and the simulator
# (a provider's JSON), not the checkpoint record.
WIRE_ROOMS = {"providers", "simulator"}


def _string_key_reads(path: Path) -> set[str]:
    """The record field names `path` reads by string: `x["usage"]`, `x.get("usage")`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        key = None
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
        ):
            key = node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            key = node.args[0].value
        if key in RECORD_FIELDS:
            found.add(key)
    return found


def test_no_module_reads_a_record_field_by_string_outside_the_record():
    """`core.record.Record` is the only code that knows the checkpoint's bytes: readers use
    attributes. (Other dicts with these keys, a run's outcome among them, are types too.)"""
    readers = {
        str(path.relative_to(REPO)): sorted(found)
        for room in ROOMS
        if room not in WIRE_ROOMS
        for path in modules(room)
        if path != CODE / "core" / "record.py"
        if (found := _string_key_reads(path))
    }
    assert readers == {}


def test_no_room_reads_another_rooms_files_by_path():
    """A room reaches another's files through its code or package data, never by a path
    built from its folder's name (`Path(...) / "deployments" / ...`), which no import shows."""
    reaching = {}
    for room in ROOMS:
        others = set(ROOMS) - {room}
        for path in modules(room):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.BinOp)
                    and isinstance(node.op, ast.Div)
                    and isinstance(node.right, ast.Constant)
                    and node.right.value in others
                    and _from_the_checkout(node.left)
                ):
                    reaching.setdefault(str(path.relative_to(REPO)), []).append(node.right.value)
    assert reaching == {}


def _from_the_checkout(node: ast.AST) -> bool:
    """An expression built from this module's place in the checkout (`Path(__file__)...`,
    a REPO or ROOT constant), as opposed to a folder of one's own (a state folder)."""
    return any(
        isinstance(n, ast.Name) and n.id in {"__file__", "REPO", "ROOT"} for n in ast.walk(node)
    )


def test_perf_reaches_into_tests_only_through_tests_support():
    """perf/ scripts may share the tests' helpers, from `tests.support` only."""
    reaching = {
        str(path.relative_to(REPO)): sorted(found)
        for path in sorted((REPO / "perf").glob("*.py"))
        if (found := {m for m in _modules_imported(path) if m.startswith("tests")})
        - {m for m in _modules_imported(path) if m.startswith("tests.support")}
    }
    assert reaching == {}


def _modules_imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _module_name(path: Path, root: Path) -> str:
    """`<root>/engine/x.py` is `evalfleet.engine.x`; a package is its `__init__.py`."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = CODE) -> dict[str, set[str]]:
    """Each module of the package at `root` -> the package's modules it imports, anywhere in
    it (in a function or under TYPE_CHECKING too): `from p.a import b` is the module `p.a.b`
    where there is one, else `p.a`; relative imports are resolved from the module's package."""
    paths = {_module_name(path, root): path for path in sorted(root.rglob("*.py"))}

    def known(name: str) -> str | None:  # the module itself, else its nearest package
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                found |= {known(f"{base}.{alias.name}") or known(base) for alias in node.names}
        graph[module] = found - {None, module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle (the
    strongly connected components of more than one module, Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_import_graph_sees_every_kind_of_import_and_its_circles(tmp_path):
    """A circle closed by an import in a function, one by a relative import, and modules
    imported through their package (`from p import a`) or beside a name (`from p.a import f`)."""
    root = tmp_path / "p"
    files = {
        "__init__.py": "",
        "a.py": "import os\ndef f():\n    from p.b import g\n",
        "b.py": "from p import c\nfrom p.c import h as g\n",
        "c.py": "from p.a import f\n",
        "sub/__init__.py": "from .d import x\n",
        "sub/d.py": "from ..sub import e\nimport p.c\n",
        "sub/e.py": "from . import d\nfrom .. import a\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph = import_graph(root)
    assert graph == {
        "p": set(),
        "p.a": {"p.b"},
        "p.b": {"p.c"},
        "p.c": {"p.a"},
        "p.sub": {"p.sub.d"},
        "p.sub.d": {"p.sub.e", "p.c"},
        "p.sub.e": {"p.sub.d", "p.a"},
    }
    assert cycles(graph) == [["p.a", "p.b", "p.c"], ["p.sub.d", "p.sub.e"]]


def test_no_modules_import_each_other():
    """Imports flow one way between modules too, not only between rooms: a circle hidden by
    an import inside a function works until the day the other side is imported first.
    (The scoring workers' own module imports scoring; the pool only starts it by name.)"""
    graph = import_graph()
    assert "evalfleet.engine.scoring.score" in graph["evalfleet.engine.scoring.worker_main"]
    assert cycles(graph) == []
