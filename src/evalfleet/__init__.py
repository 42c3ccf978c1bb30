"""evalfleet: evaluate frontier models on hard multimodal benchmarks, at scale.

    import evalfleet

    result = evalfleet.run(
        models=["openai/sim-0.5"],
        benchmarks=["zerobench"],
        dataset_path="demo-data/zerobench",
        simulator_url="http://127.0.0.1:8765",
    )
    for headline in result.headline:
        print(headline)

Everything here is imported when first used: `import evalfleet` loads neither Ray nor Prefect.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalfleet.api import aggregate, compare, judge, run
    from evalfleet.api.result import Headline, Results, RunResult
    from evalfleet.benchmarks.interface import Benchmark
    from evalfleet.core.record import Record
    from evalfleet.engine.run.outcome import RunOutcome
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.storage import open_store

__all__ = [
    "Benchmark",
    "EvalRequest",
    "Headline",
    "Record",
    "Results",
    "RunOutcome",
    "RunResult",
    "__version__",
    "aggregate",
    "compare",
    "judge",
    "open_store",
    "run",
]

_HOMES = {
    "run": "evalfleet.api",
    "judge": "evalfleet.api",
    "aggregate": "evalfleet.api",
    "compare": "evalfleet.api",
    "Headline": "evalfleet.api.result",
    "Results": "evalfleet.api.result",
    "RunResult": "evalfleet.api.result",
    "EvalRequest": "evalfleet.engine.run.request",
    "RunOutcome": "evalfleet.engine.run.outcome",
    "Record": "evalfleet.core.record",
    "Benchmark": "evalfleet.benchmarks.interface",
    "open_store": "evalfleet.storage",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("evalfleet")
        except PackageNotFoundError:
            return "unknown"
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'evalfleet' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
