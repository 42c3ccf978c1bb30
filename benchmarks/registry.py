"""The benchmarks a request can name. The engine, the command line and the simulator's answer
keys ask this registry and nothing else; adding a benchmark is one line in BUILTIN (or a
`register()` call)."""

from __future__ import annotations

import re

from benchmarks.datbench import DATBENCH, DATBENCH_BLIND
from benchmarks.interface import Benchmark
from benchmarks.omnibench import OMNIBENCH
from benchmarks.rome import ROME
from benchmarks.zerobench import ZEROBENCH, ZEROBENCH_SUBQUESTIONS
from core.types import ConfigError

BUILTIN: tuple[Benchmark, ...] = (
    ZEROBENCH,
    ZEROBENCH_SUBQUESTIONS,
    OMNIBENCH,
    ROME,
    DATBENCH,
    DATBENCH_BLIND,
)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_registry: dict[str, Benchmark] = {b.name: b for b in BUILTIN}


def register(benchmark: Benchmark) -> Benchmark:
    """Add a benchmark (its name must be new and a valid store-key segment)."""
    if not _NAME.match(benchmark.name):
        raise ValueError(f"benchmark name {benchmark.name!r}: use lowercase letters, digits, _ -")
    if benchmark.name in _registry and _registry[benchmark.name] is not benchmark:
        raise ValueError(f"a benchmark named {benchmark.name!r} is already registered")
    _registry[benchmark.name] = benchmark
    return benchmark


def unregister(name: str) -> None:
    """Remove a registered benchmark (tests that register their own call this after)."""
    _registry.pop(name, None)


def is_builtin(name: str) -> bool:
    """Whether `name` is one of BUILTIN (which any new process knows), not a `register()`."""
    return any(_registry.get(name) is bench for bench in BUILTIN)


def names() -> list[str]:
    return list(_registry)


def default_names() -> list[str]:
    """The benchmarks a request runs when it names none."""
    return [name for name, bench in _registry.items() if bench.default]


def all_benchmarks() -> list[Benchmark]:
    return list(_registry.values())


def get(name: str) -> Benchmark:
    try:
        return _registry[name]
    except KeyError:
        raise ConfigError(
            f"unknown benchmark '{name}': use one of {', '.join(_registry)}"
        ) from None
