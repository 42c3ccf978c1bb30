"""`evalfleet demo`: a small dataset in a benchmark's upstream format, the simulator, two
models (and a judge where the benchmark has one), the result tables."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import registry
from benchmarks.datbench.demo import write_datbench_demo
from benchmarks.omnibench.demo import write_omnibench_demo
from benchmarks.rome.demo import write_rome_demo
from benchmarks.zerobench.demo import write_demo_dataset
from flows.request import EvalRequest

DEMO_MODELS = ["openai/sim-0.3", "openai/sim-0.7"]
DEMO_BENCHMARKS = ["zerobench", "zerobench_subquestions"]


@dataclass(frozen=True)
class Demo:
    write: Callable[[Path], Path]  # writes the dataset at a path, returns it
    benchmarks: list[str]
    models: list[str]
    judge_model: str | None = None


DEMOS = {
    "zerobench": Demo(write_demo_dataset, DEMO_BENCHMARKS, DEMO_MODELS),
    "omnibench": Demo(write_omnibench_demo, ["omnibench"], ["openai/sim-0.3", "google/sim-0.7"]),
    "rome": Demo(write_rome_demo, ["rome"], DEMO_MODELS, judge_model="anthropic/sim-0.9"),
    "datbench": Demo(
        write_datbench_demo,
        ["datbench", "datbench_blind"],
        ["openai/sim-0.6", "anthropic/sim-0.8"],
        judge_model="openai/sim-0.9",
    ),
}


def answer_key_lines(
    dataset_path: str, benchmarks: list[str], options: dict[str, dict] | None = None
) -> list[str]:
    """The simulator's answer key for these benchmarks (and their judges), as JSONL lines."""
    lines = []
    for name in benchmarks:
        bench = registry.get(name)
        opts = bench.options((options or {}).get(name))
        samples = bench.load(dataset_path, opts, None).samples
        for sample in samples:
            lines.extend(json.dumps(entry) for entry in bench.answer_key(sample, opts))
        if bench.judge is not None:
            lines.extend(json.dumps(entry) for entry in bench.judge.answer_key(samples, opts))
    return lines


def write_answer_key(
    dataset_path: str,
    benchmarks: list[str],
    path: Path,
    options: dict[str, dict] | None = None,
) -> Path:
    path.write_text("\n".join(answer_key_lines(dataset_path, benchmarks, options)) + "\n")
    return path


def run_demo(
    *,
    benchmark: str = "zerobench",
    store: str = "./runs",
    run_id: str | None = None,
    s3_endpoint_url: str | None = None,
    workdir: str = "./demo-data",
    latency_ms: float = 200.0,
) -> dict[str, Any]:
    import datasets

    from flows.launch import run_request
    from simulator.process import start_simulator

    datasets.disable_progress_bars()
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    demo = DEMOS[benchmark]
    dataset_path = str(demo.write(work / benchmark))
    answers = write_answer_key(dataset_path, demo.benchmarks, work / f"answers-{benchmark}.jsonl")
    run_id = run_id or datetime.now(UTC).strftime(f"demo-{benchmark}-%Y%m%d-%H%M%S")
    print(f"demo: dataset {dataset_path}, run {run_id}, store {store}")
    config = {"latency": {"ms": latency_ms}}
    log_path = work / f"simulator-{run_id}.jsonl"
    with start_simulator(answers, config, log_path) as simulator:
        print(f"demo: simulator listening on {simulator.url} (log {simulator.log_path})")
        request = EvalRequest(
            models=demo.models,
            benchmarks=demo.benchmarks,
            judge_model=demo.judge_model,
            dataset_path=dataset_path,
            run_id=run_id,
            store=store,
            s3_endpoint_url=s3_endpoint_url,
            simulator_url=simulator.url,
        )
        return run_request(request)
