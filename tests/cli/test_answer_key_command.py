"""`evalfleet simulate --answers-for DATASET [-b NAME]` writes the simulator's answer key of a
local dataset, which the README's dry run serves (tests/benchmarks/test_entry_point_benchmark.py
serves one and runs against it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalfleet.benchmarks.answer_key import answer_key_lines
from evalfleet.cli.main import main
from tests.support.helpers import zerobench_samples

EVALFLEET = str(Path(sys.executable).with_name("evalfleet"))
SPLITS = ["zerobench", "zerobench_subquestions"]


def test_the_answer_key_of_a_dataset(demo_dataset, tmp_path):
    """In the current folder by default (a process of its own: the command line's defaults
    are read from the folder it starts in)."""
    done = subprocess.run(
        [EVALFLEET, "simulate", "--answers-for", demo_dataset],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = tmp_path / "answers.jsonl"
    lines = written.read_text().splitlines()
    assert lines == answer_key_lines(demo_dataset, SPLITS)
    assert len(lines) == 17
    assert done.stdout.splitlines() == [
        f"answer key of {demo_dataset} ({', '.join(SPLITS)}): {written}, 17 entries",
        f"serve it with: evalfleet simulate --answers {written}",
    ]


def test_the_answer_key_of_one_benchmark(demo_dataset, tmp_path, capsys):
    path = tmp_path / "z.jsonl"
    assert (
        main(["simulate", "--answers-for", demo_dataset, "-b", "zerobench", "--answers", str(path)])
        == 0
    )
    written = path.read_text().splitlines()
    assert written == answer_key_lines(demo_dataset, ["zerobench"])
    targets = [sample.target for sample in zerobench_samples("zerobench", demo_dataset)]
    assert [json.loads(line)["target"] for line in written[:4]] == targets
    assert len(written) == 5  # and the judge's
    assert capsys.readouterr().out.startswith(f"answer key of {demo_dataset} (zerobench): {path}")


def test_what_it_refuses(demo_dataset, tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["simulate", "--answers-for", str(missing)]) == 2
    assert main(["simulate", "--answers-for", demo_dataset, "-b", "nope"]) == 2
    assert main(["simulate", "-b", "zerobench"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert errors[1:] == [
        "error: unknown benchmark 'nope': use one of zerobench, zerobench_subquestions, "
        "omnibench, rome, datbench, datbench_blind",
        "error: -b chooses the benchmarks of --answers-for: give a dataset too",
    ]
    assert errors[0].startswith(f"error: dataset path {missing} does not exist")
    assert not (tmp_path / "answers.jsonl").exists()
