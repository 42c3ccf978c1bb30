"""What the registry says of an entry point it cannot use, in one line each (the slow
`test_entry_point_benchmark.py` installs real packages); and that `register()` stays this
process's."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from evalfleet.benchmarks import registry
from evalfleet.core.types import ConfigError


def entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=registry.GROUP)


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        (
            "nowhere",
            "no_such_module:Bench",
            "cannot be loaded (ModuleNotFoundError: No module named 'no_such_module'): "
            "reinstall or remove it",
        ),
        (
            "abstract",
            "evalfleet.benchmarks.interface:Benchmark",
            "is abstract: it does not implement answer_key, load, metrics, score; point the "
            "entry point at a complete Benchmark",
        ),
        ("a-path", "pathlib:Path", "is a PosixPath, not a Benchmark"),
        (
            "renamed",
            "evalfleet.benchmarks.rome:ROME",
            "is named 'rome': name the entry point after it",
        ),
    ],
)
def test_an_entry_point_it_cannot_use_is_one_line_naming_it(name, value, why):
    with pytest.raises(ConfigError) as caught:
        registry._load(entry(name, value))
    module = value.split(":")[0]
    assert str(caught.value) == f"benchmark '{name}' of package {module} ({value}) {why}"


def test_the_builtin_ones_come_first_and_registered_ones_are_this_process_only():
    from tests.benchmarks.test_benchmark_interface import ToyArithmetic

    own = [b.name for b in registry.BUILTIN]
    assert registry.names()[: len(own)] == own
    toy = registry.register(ToyArithmetic())
    try:
        assert registry.names()[-1] == toy.name and registry.get(toy.name) is toy
        assert not registry.in_every_process(toy.name)
        assert registry.in_every_process("rome")
        assert toy.name not in registry.default_names()
        with pytest.raises(ValueError, match="already registered"):
            registry.register(ToyArithmetic())
    finally:
        registry.unregister(toy.name)
    with pytest.raises(ConfigError, match=f"unknown benchmark '{toy.name}'"):
        registry.get(toy.name)
