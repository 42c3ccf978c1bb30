"""`evalfleet export RUN --format inspect`: one inspect_ai log per (model, benchmark), written
with inspect_ai's own writer, so `inspect view` opens a run and scripts read it with
`inspect_ai.log.read_eval_log`. inspect_ai is the optional extra `evalfleet[inspect]`, imported
only here and only when an export runs (the command line starts without it).

A sample's epoch is evalfleet's plus one (inspect counts from 1); each scoring mode is a score
of its own, named as the mode, with the words of the rule or judge that decided it; the log's
results hold every metric of each mode, the headline first. A sample's input and messages are
the prompt as sent and the response (`export_inspect_extras`). The run's tags (`evalfleet tag`)
are each log's `eval.tags`, its metadata pairs and note (as "note") its `eval.metadata`, beside
`evalfleet_run` and `evalfleet_results_version` (which a pair of that name does not replace)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalfleet.reports.export_inspect_extras import Extras, ItemExtras
from evalfleet.reports.export_rows import ExportItem, ExportRun
from evalfleet.storage.tags import NOTE_KEY, read_tags

INSTALL = "pip install 'evalfleet[inspect]'"


def inspect_missing() -> str | None:
    """Why the inspect export cannot run here (None: it can)."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        return f"the inspect export needs inspect_ai, which is not installed: {INSTALL}"
    return None


def write_inspect_logs(export: ExportRun, out: Path) -> list[Path]:
    """Write the logs into `out` (one `{model}_{benchmark}.eval` each); their paths."""
    from inspect_ai.log import write_eval_log

    groups: dict[tuple[str, str], list[ExportItem]] = {}
    for item in export.items:
        groups.setdefault((item.model, item.benchmark), []).append(item)
    out.mkdir(parents=True, exist_ok=True)
    extras = Extras(export)
    written = []
    for (model, benchmark), items in groups.items():
        log = eval_log(export, model, benchmark, items, extras)
        path = out / f"{_safe(model)}_{_safe(benchmark)}.eval"
        write_eval_log(log, str(path))
        written.append(path)
    return written


def eval_log(
    export: ExportRun, model: str, benchmark: str, items: list[ExportItem], extras: Extras
) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    data = export.run.data.get(benchmark)
    samples = [eval_sample(model, item, extras.of(item)) for item in items]
    created = datetime.now(UTC).isoformat(timespec="seconds")
    labels = read_tags(export.run.store, export.run_id)
    metadata = dict(labels.metadata) | ({NOTE_KEY: labels.note} if labels.note else {})
    metadata |= {"evalfleet_run": export.run_id, "evalfleet_results_version": export.version}
    spec = EvalSpec(
        created=created,
        task=benchmark,
        task_id=f"{export.run_id}/{benchmark}",
        run_id=export.run_id,
        dataset=EvalDataset(
            name=benchmark,
            location=data.source if data is not None else None,
            samples=len({i.sample_id for i in items}),
        ),
        model=model,
        config=EvalConfig(epochs=len({i.epoch for i in items})),
        tags=list(labels.tags) or None,
        metadata=metadata,
    )
    return EvalLog(
        version=2,
        status="success",
        eval=spec,
        results=eval_results(export, model, benchmark, len(samples)),
        stats=EvalStats(started_at=created, completed_at=created),
        samples=samples,
    )


def eval_sample(model: str, item: ExportItem, extras: ItemExtras) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    usage = ModelUsage(
        input_tokens=item.input_tokens,
        output_tokens=item.output_tokens,
        total_tokens=item.input_tokens + item.output_tokens,
        reasoning_tokens=item.reasoning_tokens or None,
        total_cost=item.cost_usd,
    )
    output = ModelOutput.from_content(model, item.response or "", error=item.error)
    output.usage = usage
    scores = {
        s["scoring"]: Score(
            value=s["value"] if s["value"] is not None else 0.0,
            answer=s["answer"],
            explanation=extras.why.get(s["scoring"]) or s["score_error"],
            metadata={
                "correct": s["correct"],
                "judged": s["judged"],
                "score_error": s["score_error"],
            },
        )
        for s in item.scores
    }
    return EvalSample(
        id=item.sample_id,
        epoch=item.epoch + 1,
        input=extras.messages[:1],
        choices=item.choices or None,
        target=item.target,
        output=output,
        messages=extras.messages,
        scores=scores,
        model_usage={model: usage},
        total_time=item.latency_s,
        error=None,
        metadata={
            "finish_reason": item.finish_reason,
            "call_error": item.error,
            **extras.metadata,
            "usage": usage.model_dump(exclude_none=True),
        },
    )


def eval_results(export: ExportRun, model: str, benchmark: str, count: int) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    by_scoring = export.metrics.get((model, benchmark), {})
    headline = headline_metric(benchmark)
    scores = []
    for scoring, metrics in by_scoring.items():
        names = sorted(metrics, key=lambda name: name != headline)
        scores.append(
            EvalScore(
                name=scoring,
                scorer=scoring,
                metrics={
                    n: EvalMetric(name=n, value=metrics[n]) for n in names if metrics[n] is not None
                },
            )
        )
    return EvalResults(total_samples=count, completed_samples=count, scores=scores)


def headline_metric(benchmark: str) -> str:
    from evalfleet.benchmarks import registry

    try:
        return registry.get(benchmark).headline
    except Exception:  # a benchmark whose package is not installed here
        return "accuracy"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in name)
