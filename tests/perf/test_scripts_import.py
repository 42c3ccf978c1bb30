"""The perf scripts cannot rot unseen: each one imports, every import statement in it (those
inside its functions too) names what exists, and each benchmark takes `--smoke` and names the
figures of its last line in its docstring. Fast: nothing is run (tests/perf/test_smoke_runs.py,
in the slow suite, runs each one at `--smoke`)."""

from __future__ import annotations

import pytest

from tests.perf.promises import (
    AT_SMOKE,
    FIGURES,
    HELPERS,
    NEEDS_CHROMIUM,
    benchmarks,
    load,
    scripts,
    unresolved_imports,
)

SCRIPTS = scripts()


def test_every_script_is_a_benchmark_with_figures_or_a_named_helper():
    stems = {p.stem for p in SCRIPTS}
    assert HELPERS.keys() <= stems, "a helper named here is gone from perf/"
    assert set(benchmarks()) == set(FIGURES), (
        "a perf script that is neither a helper (tests/perf/promises.py HELPERS) nor a "
        "benchmark with its figures listed (FIGURES)"
    )
    assert set(AT_SMOKE) <= set(FIGURES)
    assert set(FIGURES) >= NEEDS_CHROMIUM
    for name, values in AT_SMOKE.items():
        assert set(values) <= set(FIGURES[name]), name


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_the_script_imports_and_every_import_in_it_resolves(path):
    module = load(path)
    assert module.__file__ == str(path)
    assert unresolved_imports(path) == []


@pytest.mark.parametrize("name", benchmarks())
def test_the_benchmark_takes_smoke_and_keeps_its_real_size_by_default(name):
    module = load(next(p for p in SCRIPTS if p.stem == name))
    parser = module.build_parser()
    assert parser.parse_args(["--smoke"]).smoke is True
    assert parser.parse_args([]).smoke is False
    assert "--smoke" in module.__doc__, "the usage in its docstring names --smoke"


@pytest.mark.parametrize("name", benchmarks())
def test_the_benchmark_names_the_figures_of_its_last_line(name):
    doc = load(next(p for p in SCRIPTS if p.stem == name)).__doc__
    assert [f for f in FIGURES[name] if f not in doc] == []


def test_a_missing_name_in_an_import_inside_a_function_is_found(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(
        "def main():\n"
        "    from evalfleet.engine.prepare.plan import _sweep\n"
        "    import evalfleet.no_such_room\n"
        "    from evalfleet.storage import layout\n"
    )
    assert unresolved_imports(script) == [
        "broken.py:2: from evalfleet.engine.prepare.plan import _sweep (no such name)",
        "broken.py:3: import evalfleet.no_such_room (ModuleNotFoundError: No module named "
        "'evalfleet.no_such_room')",
    ]
