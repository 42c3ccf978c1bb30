"""The benchmarks a request can name. The engine, the command line and the simulator's answer
keys ask this registry and nothing else.

There are evalfleet's own (BUILTIN) and those of installed packages that declare an entry
point in the `evalfleet.benchmarks` group, named after the benchmark, whose object is a
`Benchmark` subclass (or instance), e.g. in the package's pyproject.toml:

    [project.entry-points."evalfleet.benchmarks"]
    my-bench = "my_package:MyBench"

Every process finds the same ones (the command line, the served deployments and their flow
runs, the stack's launcher, the reading child), and none is imported until it is asked for:
by name (`get`), or all at once (`all_benchmarks`: the command line's flags and subcommands,
the UI form). One that cannot be loaded is a ConfigError line naming its package when named,
and is left out of `all_benchmarks` with that line as a warning. A package's benchmark runs
only when named: what a request runs by default does not change with what is installed.
`register()` adds one to this process only (the tests' toys).
"""

from __future__ import annotations

import functools
import re
import sys
from typing import TYPE_CHECKING

from evalfleet.benchmarks.datbench import DATBENCH, DATBENCH_BLIND
from evalfleet.benchmarks.interface import Benchmark
from evalfleet.benchmarks.omnibench import OMNIBENCH
from evalfleet.benchmarks.rome import ROME
from evalfleet.benchmarks.zerobench import ZEROBENCH, ZEROBENCH_SUBQUESTIONS
from evalfleet.core.types import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "evalfleet.benchmarks"
BUILTIN: tuple[Benchmark, ...] = (
    ZEROBENCH,
    ZEROBENCH_SUBQUESTIONS,
    OMNIBENCH,
    ROME,
    DATBENCH,
    DATBENCH_BLIND,
)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_registry: dict[str, Benchmark] = {b.name: b for b in BUILTIN}  # those loaded, by name
_registered: list[str] = []  # by `register()`: this process only
_problems: dict[str, str] = {}  # entry points that could not be loaded: the line saying why
_warned: set[str] = set()


def register(benchmark: Benchmark) -> Benchmark:
    """Add a benchmark to this process only (its name must be new and a valid store-key
    segment). Other processes do not see it: a package's entry point is how to add one."""
    if not _NAME.match(benchmark.name):
        raise ValueError(f"benchmark name {benchmark.name!r}: use lowercase letters, digits, _ -")
    taken = benchmark.name in _declared() or benchmark.name in _registry
    if taken and _registry.get(benchmark.name) is not benchmark:
        raise ValueError(f"a benchmark named {benchmark.name!r} is already registered")
    _registry[benchmark.name] = benchmark
    if benchmark.name not in _registered:
        _registered.append(benchmark.name)
    return benchmark


def unregister(name: str) -> None:
    """Remove a `register()`ed benchmark (tests that register their own call this after)."""
    if name in _registered:
        _registered.remove(name)
        _registry.pop(name, None)


def in_every_process(name: str) -> bool:
    """Whether any new process knows `name` (evalfleet's own, or an installed package's), not
    only this one (`register()`)."""
    return name in _registry and name not in _registered or name in _declared()


def names() -> list[str]:
    """evalfleet's own first, then the installed packages' (none imported), then this process's
    `register()`ed ones."""
    own = [b.name for b in BUILTIN]
    installed = [n for n in sorted(_declared()) if n not in _problems]
    return [*own, *installed, *_registered]


def default_names() -> list[str]:
    """The benchmarks a request runs when it names none (never a package's: see above)."""
    return [b.name for b in (*BUILTIN, *(_registry[n] for n in _registered)) if b.default]


def all_benchmarks() -> list[Benchmark]:
    """Every benchmark, each package's loaded; one that cannot be is left out with a warning."""
    found = []
    for name in names():
        try:
            found.append(get(name))
        except ConfigError as exc:
            if name not in _warned:
                _warned.add(name)
                print(f"warning: {exc}", file=sys.stderr)
    return found


def get(name: str) -> Benchmark:
    if name in _registry:
        return _registry[name]
    if name in _problems:
        raise ConfigError(_problems[name])
    entry = _declared().get(name)
    if entry is None:
        raise ConfigError(f"unknown benchmark '{name}': use one of {', '.join(names())}")
    try:
        benchmark = _load(entry)
    except ConfigError as exc:
        _problems[name] = str(exc)
        raise
    _registry[name] = benchmark
    return benchmark


@functools.cache
def _declared() -> dict[str, EntryPoint]:
    """The installed packages' entry points by benchmark name, read once (nothing imported).
    One that takes the name of evalfleet's own, or of another package's, is left out."""
    from importlib.metadata import entry_points

    own = {b.name for b in BUILTIN}
    found: dict[str, EntryPoint] = {}
    for entry in sorted(entry_points(group=GROUP), key=lambda e: (e.name, _package(e))):
        if entry.name in own or entry.name in found:
            other = "evalfleet's own" if entry.name in own else _package(found[entry.name])
            print(
                f"warning: package {_package(entry)} declares the benchmark '{entry.name}', "
                f"which {other} already is: left out",
                file=sys.stderr,
            )
            continue
        found[entry.name] = entry
    return found


def _load(entry: EntryPoint) -> Benchmark:
    """The entry point's benchmark; a ConfigError line naming its package if it is none."""
    where = f"benchmark '{entry.name}' of package {_package(entry)} ({entry.value})"
    try:
        loaded = entry.load()
        missing = sorted(getattr(loaded, "__abstractmethods__", ()))
        if isinstance(loaded, type) and missing:  # said in our words, the same on every Python
            raise ConfigError(
                f"{where} is abstract: it does not implement {', '.join(missing)}; "
                "point the entry point at a complete Benchmark"
            )
        benchmark = loaded() if isinstance(loaded, type) else loaded
    except ConfigError:
        raise
    except Exception as exc:
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise ConfigError(f"{where} cannot be loaded ({why}): reinstall or remove it") from None
    if not isinstance(benchmark, Benchmark):
        raise ConfigError(f"{where} is a {type(benchmark).__name__}, not a Benchmark")
    if benchmark.name != entry.name:
        raise ConfigError(f"{where} is named '{benchmark.name}': name the entry point after it")
    if not _NAME.match(entry.name):
        raise ConfigError(f"{where}: a benchmark name is lowercase letters, digits, _ and -")
    return benchmark


def _package(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else entry.module
