"""`evalfleet demo`: a benchmark's demo (`Benchmark.demo`: a small dataset in its upstream
format, models, a judge where it has one) run against the simulator, to the result tables."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalfleet.benchmarks import registry
from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.request import EvalRequest, check_run_id
from evalfleet.storage import open_store, store_url

if TYPE_CHECKING:
    from evalfleet.api.result import RunResult


def demo_choices() -> list[str]:
    """The benchmarks that have a demo."""
    return [b.name for b in registry.all_benchmarks() if b.demo() is not None]


def run_demo(
    *,
    benchmark: str | None = None,
    store: str | None = None,
    run_id: str | None = None,
    s3_endpoint_url: str | None = None,
    workdir: str = "./demo-data",
    latency_ms: float = 200.0,
    flow_runs_kept: int | None = None,
) -> RunResult:
    import datasets

    from evalfleet.api import run
    from evalfleet.simulator.process import start_simulator

    datasets.disable_progress_bars()
    benchmark = benchmark or demo_choices()[0]
    demo = registry.get(benchmark).demo()
    if demo is None:
        raise ConfigError(
            f"benchmark {benchmark} has no demo: use one of {', '.join(demo_choices())}"
        )
    run_id = check_run_id(run_id or datetime.now(UTC).strftime(f"demo-{benchmark}-%Y%m%d-%H%M%S"))
    open_store(store_url(store), s3_endpoint_url=s3_endpoint_url)  # a bad store: said first
    work = Path(workdir).resolve()  # written only once the run id and store are known good
    work.mkdir(parents=True, exist_ok=True)
    dataset_path = str(demo.write(work / benchmark))
    benchmarks = list(demo.benchmarks)
    answers = write_answer_key(dataset_path, benchmarks, work / f"answers-{benchmark}.jsonl")
    request = EvalRequest(
        models=list(demo.models),
        benchmarks=benchmarks,
        judge_model=demo.judge_model,
        dataset_path=dataset_path,
        run_id=run_id,
        store=store_url(store),
        s3_endpoint_url=s3_endpoint_url,
    )
    print(f"demo: dataset {dataset_path}, run {run_id}, store {request.store}")
    config = {"latency": {"ms": latency_ms}}
    log_path = work / f"simulator-{run_id}.jsonl"
    with start_simulator(answers, config, log_path) as simulator:
        print(f"demo: simulator listening on {simulator.url} (log {simulator.log_path})")
        request = request.model_copy(update={"simulator_url": simulator.url})
        return run(request, flow_runs_kept=flow_runs_kept)
