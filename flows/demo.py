"""`evalfleet demo`: a small ZeroBench-format dataset, the simulator, two models, both tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.demo_data import write_demo_dataset
from benchmarks.registry import LoadOptions, get_task
from flows.pipeline import run_pipeline
from flows.request import EvalRequest

DEMO_MODELS = ["openai/sim-0.3", "openai/sim-0.7"]
DEMO_BENCHMARKS = ["zerobench", "zerobench_subquestions"]


def write_answer_key(dataset_path: str, benchmarks: list[str], path: Path) -> Path:
    """The simulator's answer key: what each prompt's correct answer is."""
    lines = []
    for name in benchmarks:
        task = get_task(name)
        for sample in task.load(LoadOptions(dataset_path=dataset_path)):
            lines.append(json.dumps(task.answer_key_entry(sample)))
    path.write_text("\n".join(lines) + "\n")
    return path


def run_demo(
    *,
    store: str = "./runs",
    run_id: str | None = None,
    s3_endpoint_url: str | None = None,
    workdir: str = "./demo-data",
    latency_ms: float = 200.0,
) -> dict[str, Any]:
    import datasets

    from providers.simulator.process import start_simulator

    datasets.disable_progress_bars()
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    dataset_path = str(write_demo_dataset(work / "zerobench"))
    answers = write_answer_key(dataset_path, DEMO_BENCHMARKS, work / "answers.jsonl")
    run_id = run_id or datetime.now(UTC).strftime("demo-%Y%m%d-%H%M%S")
    print(f"demo: dataset {dataset_path}, run {run_id}, store {store}")
    config = {"latency": {"ms": latency_ms}}
    log_path = work / f"simulator-{run_id}.jsonl"
    with start_simulator(answers, config, log_path) as simulator:
        print(f"demo: simulator listening on {simulator.url} (log {simulator.log_path})")
        request = EvalRequest(
            models=DEMO_MODELS,
            benchmarks=DEMO_BENCHMARKS,
            dataset_path=dataset_path,
            protocol="zerobench-paper",
            run_id=run_id,
            store=store,
            s3_endpoint_url=s3_endpoint_url,
            simulator_url=simulator.url,
        )
        return run_pipeline(request)
