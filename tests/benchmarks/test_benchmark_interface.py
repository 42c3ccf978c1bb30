"""The benchmark interface from the outside: a toy benchmark defined in this file (its loader,
scorer, metric set, demo and a subcommand of its own) runs end to end through `evalfleet run`,
`evalfleet demo` and `evalfleet toy-sums unsolved` after one registry call, and no file
outside this one names it; OmniBench writes its accuracy by task type and by audio type,
checked by hand."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pytest

from evalfleet.benchmarks import registry
from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.benchmarks.interface import Benchmark, Command, Demo, LoadedData, MetricRow
from evalfleet.benchmarks.omnibench.demo import write_omnibench_demo
from evalfleet.benchmarks.omnibench.parsing import parse_answer_evalscope
from evalfleet.cli.main import main
from evalfleet.core.types import Part, Sample, Score
from evalfleet.metrics.intervals import wilson
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


class ToyArithmetic(Benchmark):
    """Two-number sums from a JSON file of pairs; scored by the number after "Final Answer:"."""

    name = "toy-sums"
    description = "sums of two numbers (a toy benchmark defined in a test)"
    hf_path = "nobody/toy-sums"
    revision = "v1"
    scorings = ("exact",)

    def load(self, path, options, limit):
        pairs = json.loads(Path(path).read_text())[:limit]
        samples = [
            Sample(
                id=f"q{i}",
                parts=[Part.of_text(f"What is {a} + {b}? End with 'Final Answer: <number>'.")],
                target=str(a + b),
                metadata={"size": "big" if a + b >= 100 else "small"},
            )
            for i, (a, b) in enumerate(pairs)
        ]
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return LoadedData(samples=samples, revision=f"sha256:{digest}", source=str(path))

    def score(self, sample, response, options):
        found = re.findall(r"Final Answer:\s*(-?\d+)", response)
        answer = found[-1] if found else None
        correct = answer == sample.target
        return [Score("exact", answer, correct, float(correct))]

    def metrics(self, scored, samples, protocol, epochs):
        values = [item.value for item in scored]
        big = [item.value for item in scored if samples[item.sample_id].metadata["size"] == "big"]
        return [
            MetricRow("solved", sum(values) / len(values), n=len(values)),
            MetricRow("solved", sum(big) / len(big), n=len(big), group="size=big"),
        ]

    def answer_key(self, sample, options):
        prompt = sample.first_text()
        return [
            {
                "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                "target": sample.target,
                "template": "Final Answer: {answer}",
            }
        ]

    def demo(self):
        return Demo(write_pairs, (self.name,), ("openai/sim-0.5",))

    def commands(self):
        return [
            Command(
                path=("toy-sums", "unsolved"),
                help="the sums no model of a run got right",
                arguments=lambda parser: parser.add_argument("run_id"),
                run=print_unsolved,
                group_help="the toy benchmark's own commands",
                reads_runs=True,
            )
        ]


PAIRS = [[1, 2], [40, 70], [99, 1], [5, 5], [60, 61], [7, 0]]
TARGETS = {"q0": "3", "q1": "110", "q2": "100", "q3": "10", "q4": "121", "q5": "7"}


def write_pairs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pairs.json"
    path.write_text(json.dumps(PAIRS))
    return path


def print_unsolved(args, context) -> int:
    samples = context.results.samples(args.run_id)
    solved = set(samples[samples.correct].sample_id)
    print("unsolved:", " ".join(sorted(set(samples.sample_id) - solved)) or "-")
    return 0


@pytest.fixture
def toy():
    benchmark = registry.register(ToyArithmetic())
    yield benchmark
    registry.unregister(benchmark.name)


@pytest.fixture
def attached(monkeypatch, ray_address, prefect_api_url):
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)


def test_a_toy_benchmark_runs_end_to_end_after_one_registry_call(toy, attached, tmp_path, capsys):
    data = write_pairs(tmp_path)
    answers = write_answer_key(str(data), [toy.name], tmp_path / "answers.jsonl")
    runs = tmp_path / "runs"
    with start_simulator(answers, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        code = main(
            ["run", "-m", "openai/sim-0.5", "-b", "toy-sums", "--dataset-path", str(data)]
            + ["--protocol", "sampled-k", "--epochs", "2", "--run-id", "toy"]
            + ["--store", str(runs), "--simulator-url", sim.url]
        )
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "toy-sums" in printed and "solved" in printed

    solved: dict[str, list[float]] = defaultdict(list)
    for path in (runs / "toy" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        found = re.findall(r"Final Answer:\s*(-?\d+)", record["response"])
        solved[record["sample_id"]].append(
            float(bool(found) and found[-1] == TARGETS[record["sample_id"]])
        )
    assert sum(len(v) for v in solved.values()) == 6 * 2
    summary = result_table(runs, "toy", "summary_toy-sums.parquet")
    row = summary.iloc[0]
    everything = [v for vs in solved.values() for v in vs]
    big = [v for sid in ("q1", "q2", "q4") for v in solved[sid]]
    assert (row["model"], row["scoring"], row["n"]) == ("openai/sim-0.5", "exact", 12)
    assert row["solved"] == pytest.approx(sum(everything) / 12, abs=1e-12)
    metrics = result_table(runs, "toy", "metrics.parquet")
    by_size = metrics[metrics.group == "size=big"].iloc[0]
    assert (by_size.value, by_size.n) == (pytest.approx(sum(big) / 6, abs=1e-12), 6)

    # its own subcommand, mounted from `commands()`, reads the run through the context
    assert main(["toy-sums", "unsolved", "toy", "--store", str(runs)]) == 0
    unsolved = sorted(sid for sid, values in solved.items() if not any(values))
    assert capsys.readouterr().out.strip() == "unsolved: " + (" ".join(unsolved) or "-")


def test_a_toy_benchmark_brings_its_demo(toy, attached, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    code = main(["demo", "-b", "toy-sums", "--run-id", "toydemo", "--store", str(runs)])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "demo-data" / "toy-sums" / "pairs.json").read_text() == json.dumps(PAIRS)
    records = list((runs / "toydemo" / "completions").rglob("*.json"))
    assert len(records) == len(PAIRS)  # one greedy epoch of the one demo model
    summary = result_table(runs, "toydemo", "summary_toy-sums.parquet")
    assert list(summary[["model", "scoring", "n"]].itertuples(index=False, name=None)) == [
        ("openai/sim-0.5", "exact", 6)
    ]


def test_nothing_outside_this_file_names_the_toy():
    """Its subcommand and demo above came through the hooks: no other file knows it."""
    repo = Path(__file__).resolve().parents[2]
    naming = [
        str(path.relative_to(repo))
        for path in repo.rglob("*.py")
        if not any(part.startswith(".venv") for part in path.parts)  # .venv, .venv-3.13
        if path != Path(__file__).resolve()
        if "toy-sums" in path.read_text(errors="replace")
    ]
    assert naming == []


def test_omnibench_end_to_end_by_task_and_audio_type(attached, tmp_path, capsys):
    dataset = str(write_omnibench_demo(tmp_path / "omnibench"))
    answers = write_answer_key(dataset, ["omnibench"], tmp_path / "answers.jsonl")
    runs = tmp_path / "runs"
    models = ["openai/sim-0.5", "google/sim-0.7"]
    with start_simulator(answers, {"latency": {"ms": 1}}, tmp_path / "sim.jsonl") as sim:
        code = main(
            ["run", "-b", "omnibench", "--dataset-path", dataset, "--run-id", "omni"]
            + ["--store", str(runs), "--simulator-url", sim.url]
            + [arg for model in models for arg in ("-m", model)]
        )
    assert code == 0, capsys.readouterr().err

    from evalfleet.benchmarks.omnibench.dataset import load

    samples = {s.id: s for s in load(dataset)[0]}
    correct: dict[tuple[str, str], float] = {}
    for path in (runs / "omni" / "completions").rglob("*.json"):
        record = json.loads(path.read_text())
        sample = samples[record["sample_id"]]
        answer = parse_answer_evalscope(record["response"], ("A", "B", "C", "D"))
        correct[(record["model"], sample.id)] = float(answer == sample.target)
    assert len(correct) == 2 * 6  # one greedy epoch: OmniBench's own protocol

    summary = result_table(runs, "omni", "summary_omnibench.parquet")
    assert list(summary.columns) == [
        "model",
        "benchmark",
        "scoring",
        "breakdown",
        "group",
        "accuracy",
        "se",
        "ci95_low",
        "ci95_high",
        "n",
    ]
    for model in models:
        mine = summary[(summary.model == model) & (summary.scoring == "evalscope")]
        assert list(mine.breakdown) == ["all"] + ["task_type"] * 5 + ["audio_type"] * 3
        for row in mine.itertuples():
            if row.breakdown == "all":
                ids = list(samples)
            else:
                ids = [sid for sid, s in samples.items() if s.metadata[row.breakdown] == row.group]
            values = [correct[(model, sid)] for sid in ids]
            mean = sum(values) / len(values)
            sd = (
                (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
                if len(values) > 1
                else 0.0
            )
            assert row.n == len(ids)
            assert row.accuracy == pytest.approx(mean, abs=1e-12)
            assert row.se == pytest.approx(sd / len(values) ** 0.5, abs=1e-12)
            if row.breakdown == "all":  # the headline: one 0/1 item per question, Wilson
                interval = wilson(sum(values), len(values))
                assert (row.ci95_low, row.ci95_high) == (interval.low, interval.high)
            else:
                assert math.isnan(row.ci95_low) and math.isnan(row.ci95_high)
    groups = summary[(summary.breakdown == "audio_type")].group.unique()
    assert sorted(groups) == ["music", "sound event", "speech"]
