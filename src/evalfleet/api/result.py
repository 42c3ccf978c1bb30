"""What `evalfleet.run` gives back: the run's outcome, where its tables are, and each model's
headline figure with its 95 % interval."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalfleet.engine.run.outcome import RunOutcome


@dataclass(frozen=True)
class Headline:
    """One model's headline on one benchmark in one scoring mode (`Benchmark.headline`)."""

    model: str
    benchmark: str
    scoring: str
    metric: str  # pass@1, accuracy, ...
    value: float | None
    low: float | None  # its 95 % interval (None where there is none: one unit)
    high: float | None

    def __str__(self) -> str:
        shown = "—" if self.value is None else f"{self.value:.3f}"
        if self.low is not None and self.high is not None:
            shown += f" ({self.low:.3f}–{self.high:.3f})"
        return f"{self.model} {self.benchmark} {self.scoring} {self.metric} {shown}"


@dataclass(frozen=True)
class Results:
    """One aggregation of a run: its results version and where its tables are."""

    run_id: str
    store: str
    version: str
    location: str  # the results version's folder (or S3 prefix): tables, plots, report
    headline: tuple[Headline, ...]
    report: str | None  # the run report's page
    missing: int  # items without a record yet (a rerun with the run id asks them)
    unreadable: int
    tables: dict[str, Any]  # everything the aggregation returned (summaries, spend, ...)

    @classmethod
    def of(cls, tables: dict[str, Any]) -> Results:
        store, run_id, version = tables["store"], tables["run_id"], tables["version"]
        return cls(
            run_id=run_id,
            store=store,
            version=version,
            location=f"{store.rstrip('/')}/{run_id}/results/{version}/",
            headline=headlines(tables),
            report=tables.get("report"),
            missing=int(tables.get("missing") or 0),
            unreadable=int(tables.get("unreadable") or 0),
            tables=tables,
        )


@dataclass(frozen=True)
class RunResult:
    """A run as `evalfleet.run` left it. `results` is None when it stopped before its tables
    (interrupted, the cost cap reached with nothing scored, batch jobs still open)."""

    run_id: str
    store: str
    outcome: RunOutcome
    results: Results | None
    note: str | None = None  # a judge that found nothing to grade: the run as it was

    @property
    def headline(self) -> tuple[Headline, ...]:
        return self.results.headline if self.results is not None else ()

    @property
    def complete(self) -> bool:
        """Every planned item has a record and nothing stopped the run early."""
        outcome = self.outcome
        stopped = outcome.stopped or outcome.budget_reached or outcome.batch_jobs_open
        return self.results is not None and not stopped and self.results.missing == 0


def headlines(tables: dict[str, Any]) -> tuple[Headline, ...]:
    """Each summary row's headline figure and interval."""
    from evalfleet.benchmarks import registry

    out = []
    for benchmark, rows in (tables.get("summaries") or {}).items():
        try:
            metric = registry.get(benchmark).headline
        except Exception:  # a benchmark whose package is not installed here
            continue
        for row in rows:
            if metric not in row:
                continue
            out.append(
                Headline(
                    model=str(row.get("model")),
                    benchmark=benchmark,
                    scoring=str(row.get("scoring") or ""),
                    metric=metric,
                    value=_number(row.get(metric)),
                    low=_number(row.get("ci95_low")),
                    high=_number(row.get("ci95_high")),
                )
            )
    return tuple(out)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
