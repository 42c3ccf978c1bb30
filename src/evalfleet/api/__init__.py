"""evalfleet's Python API: a request in, a typed result out. The command line calls these
same functions (`evalfleet run` is `run`, `evalfleet judge` is `judge`, `evalfleet aggregate`
is `aggregate`, `evalfleet compare` is `compare`); each does exactly what its command does.

Bad input (an unknown model, a missing key, an unreadable dataset, a run id whose stored run
disagrees) raises before anything is paid: `ConfigError`, `StoreError` or pydantic's
`ValidationError`, each with a one-line message. A run interrupted by a signal raises
`Interrupted`; one that did not do its job (a record not stored, a model down) `RunFailed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalfleet.api.result import Headline, Results, RunResult

if TYPE_CHECKING:
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.storage.base import Store

__all__ = ["Headline", "Results", "RunResult", "aggregate", "compare", "judge", "run"]


def run(
    request: EvalRequest | None = None,
    /,
    *,
    retry_errors: bool = True,
    flow_runs_kept: int | None = None,
    full_stack: bool = False,
    **fields: Any,
) -> RunResult:
    """Evaluate, then score and write the tables: `evalfleet run`. Give an `EvalRequest`, or
    its fields as keywords (`models=["openai/sim-0.5"], benchmarks=["zerobench"], ...`). The
    same run id resumes a run: only what the store lacks is asked. `retry_errors` False keeps
    stored terminal errors instead of asking them again. A small run (its `limit` caps it at
    200 items) runs in this process unless `full_stack` (`evalfleet run --full-stack`)."""
    from evalfleet.api.launch import run_request
    from evalfleet.engine.run.request import EvalRequest

    if request is None:
        request = EvalRequest(**fields)
    elif fields:
        raise TypeError("give a request or its fields, not both")
    run_id = request.resolved_run_id()
    request = request.model_copy(update={"run_id": run_id})
    job = run_request(
        request, retry_errors=retry_errors, flow_runs_kept=flow_runs_kept, full_stack=full_stack
    )
    results = Results.of(job.tables) if job.tables is not None else None
    return RunResult(run_id, request.store, job.outcome, results)


def judge(
    run_id: str,
    judge_model: str,
    *,
    store: str | Store | None = None,
    simulator_url: str | None = None,
    flow_runs_kept: int | None = None,
    reuse_from: list[str] | None = None,
) -> RunResult:
    """Grade a stored run's answers with another judge model: `evalfleet judge`. Nothing is
    asked of the evaluated models. `RunResult.note` says when there was nothing to grade.
    `reuse_from` takes judgements other runs hold for the same judge, prompt and answer."""
    from evalfleet.api.launch import run_request
    from evalfleet.engine.judges import judge_request

    request = judge_request(_store(store), run_id, judge_model, simulator_url, reuse_from)
    job = run_request(request, retry_errors=True, answers=False, flow_runs_kept=flow_runs_kept)
    results = Results.of(job.tables) if job.tables is not None else None
    return RunResult(run_id, request.store, job.outcome, results, note=job.unchanged)


def aggregate(run_id: str, *, store: str | Store | None = None, report: bool = True) -> Results:
    """Score a run's stored records and write its tables (and its report) under a new results
    version: `evalfleet aggregate`. Nothing is asked of any model."""
    from evalfleet.engine.scoring.aggregate import aggregate_run
    from evalfleet.reports.report import write_report_or_warn

    opened = _store(store)
    tables = aggregate_run(opened, run_id)
    tables["report"] = write_report_or_warn(opened, run_id, tables["version"]) if report else None
    return Results.of(tables)


def compare(a: str, b: str, *, store: str | Store | None = None) -> dict[str, Any]:
    """Two runs (or two models, `RUN[@VERSION][:MODEL]`) side by side on the items both
    answered, with paired intervals: `evalfleet compare`. The comparison is kept beside A's
    results."""
    from evalfleet.reports.compare import compare as compared
    from evalfleet.reports.compare import save

    opened = _store(store)
    result = compared(opened, a, b)
    save(opened, result)
    return result


def _store(url: str | Store | None) -> Store:
    from evalfleet.storage import open_store
    from evalfleet.storage.base import Store

    return url if isinstance(url, Store) else open_store(url)
