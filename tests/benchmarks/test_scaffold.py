"""The scaffold of `evalfleet new benchmark`: the package it writes loads, scores and keys."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evalfleet.benchmarks.scaffold import write_scaffold
from evalfleet.core.types import ConfigError


def test_scaffold_benchmark_loads_scores_and_answers(tmp_path: Path) -> None:
    folder = write_scaffold("mybench", tmp_path)
    assert 'mybench = "mybench.benchmark:BENCHMARK"' in (folder / "pyproject.toml").read_text()
    path = folder / "src" / "mybench" / "benchmark.py"
    spec = importlib.util.spec_from_file_location("scaffolded_mybench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bench = module.BENCHMARK
    assert bench.name == "mybench"
    data = bench.load(None, bench.options(), 2)
    assert [s.id for s in data.samples] == ["q1", "q2"]
    assert data.revision.startswith("sha256:")
    good, bad = (
        bench.score(data.samples[0], r, bench.options())[0] for r in ("Final Answer: 5", "x")
    )
    assert (good.correct, good.value, bad.correct, bad.answer) == (True, 1.0, False, None)
    assert bench.answer_key(data.samples[0], bench.options())[0]["target"] == "5"


NOT_A_NAME = (
    "is not a Python name of at most 64 ASCII letters, digits and '_' (not starting with a "
    "digit): choose one such as my_bench"
)
HAD = "is a module this Python already has: choose another (the new package would hide it)"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("my-bench", f"benchmark name 'my-bench' {NOT_A_NAME}"),
        ("évalué", f"benchmark name 'évalué' {NOT_A_NAME}"),
        ("b" * 65, f"benchmark name '{'b' * 30}...' {NOT_A_NAME}"),
        ("class", "benchmark name 'class' is a Python keyword: choose another"),
        ("None", "benchmark name 'None' is a Python keyword: choose another"),
        ("match", "benchmark name 'match' is a Python keyword: choose another"),
        ("evalfleet", f"benchmark name 'evalfleet' {HAD}"),
        ("os", f"benchmark name 'os' {HAD}"),
        ("datasets", f"benchmark name 'datasets' {HAD}"),
        ("zerobench", "benchmark name 'zerobench' is a shipped benchmark's: choose another"),
    ],
)
def test_scaffold_refuses_bad_names(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        write_scaffold(name, tmp_path)
    assert str(raised.value) == message
    assert list(tmp_path.iterdir()) == []


def test_scaffold_never_overwrites_a_folder(tmp_path: Path) -> None:
    (tmp_path / "mybench").mkdir()
    (tmp_path / "mybench" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="already exists"):
        write_scaffold("mybench", tmp_path)
    assert [p.name for p in (tmp_path / "mybench").iterdir()] == ["keep.txt"]


def test_cli_new_benchmark_writes_the_folder_and_refuses_a_taken_name(tmp_path: Path) -> None:
    import subprocess
    import sys

    def new(name: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "evalfleet.cli.main", "new", "benchmark", name]
        return subprocess.run(
            [*argv, "--dir", str(tmp_path)], capture_output=True, text=True, check=False
        )

    made = new("mybench")
    assert (made.returncode, made.stderr) == (0, "")
    assert (tmp_path / "mybench" / "src" / "mybench" / "data.jsonl").is_file()
    again = new("mybench")
    assert again.returncode == 2
    assert again.stderr == (
        f"error: {tmp_path / 'mybench'} already exists: choose another name or --dir\n"
    )
