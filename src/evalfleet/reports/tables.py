"""Result tables as a person reads them: the tables of an aggregation printed to a terminal
120 columns wide (`evalfleet.core.text_tables.markdown` splits wide ones, never squeezes them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalfleet.core.text_tables import markdown
from evalfleet.engine.scoring.tables import USAGE_IN_SUMMARY
from evalfleet.reports import formatting as fmt


def shown_summary(
    table: pd.DataFrame, notes: list[str], answers: dict[tuple[str, str], int] | None = None
) -> pd.DataFrame:
    """A summary as the terminal shows it: without the usage columns (their own table), the
    headline's interval in one column, and without columns no row has a value for, except
    those a footnote explains. With `answers` per (model, benchmark), the failed calls are
    a column where any failed, marked above 5 % (`formatting.errors`)."""
    marks = None
    if answers is not None and "errors" in table.columns and table["errors"].fillna(0).any():
        marks = [
            fmt.errors(int(e or 0), answers.get((m, b), 0))
            for m, b, e in zip(table.model, table.benchmark, table["errors"], strict=True)
        ]
    shown = table.drop(columns=["benchmark", *USAGE_IN_SUMMARY], errors="ignore")
    explained = {c for c in shown.columns if any(line.startswith(f"— {c} ") for line in notes)}
    empty = [c for c in shown.columns if shown[c].isna().all() and c not in explained]
    shown = shown.drop(columns=empty)
    if {"ci95_low", "ci95_high"} <= set(shown.columns):
        shown["95% interval"] = [
            fmt.interval(lo, hi) for lo, hi in zip(shown.ci95_low, shown.ci95_high, strict=True)
        ]
        shown = shown.drop(columns=["ci95_low", "ci95_high"])
    if marks is not None:
        shown["errors"] = marks
    for column in shown.columns:  # a missing text is a dash, never "nan"
        if not pd.api.types.is_numeric_dtype(shown[column]) and shown[column].isna().any():
            shown[column] = shown[column].astype(object).where(shown[column].notna(), fmt.MISSING)
    return shown


def answers_of(spend: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """Calls asked per (model, benchmark), from an aggregation's usage records."""
    return {(r["model"], r["benchmark"]): int(r.get("answers") or 0) for r in spend}


def headline(result: dict[str, Any]) -> str:
    """The run's first line; "every call failed" when no model's call succeeded."""
    location = f"{result['store']}/{result['run_id']}/results/{result.get('version')}/"
    spend = result.get("spend") or []
    asked = sum(int(r.get("answers") or 0) for r in spend)
    failed = sum(int(r.get("errors") or 0) for r in spend)
    if asked and failed >= asked:
        return (
            f"run {result['run_id']} — every call failed ({failed} of {asked}): its scores "
            f"measure nothing — results in {location}"
        )
    return f"run {result['run_id']} — results in {location}"


def unit_of(benchmark: str) -> str:
    from evalfleet.benchmarks import registry

    if benchmark in registry.names():
        return registry.get(benchmark).summary_unit
    return "values are fractions of 1"


def print_result(result: dict[str, Any]) -> None:
    """The tables of an aggregation, one per benchmark, fitted to the terminal."""
    print()
    print(headline(result))
    answers = answers_of(result.get("spend") or [])
    for name, records in (result.get("summaries") or {}).items():
        notes = (result.get("notes") or {}).get(name, [])
        print(f"\n{name} ({unit_of(name)})")
        print(markdown(shown_summary(pd.DataFrame(records), notes, answers)))
        for line in notes:
            print(line)
    agreement = pd.DataFrame(result.get("judge_agreement") or [])
    if not agreement.empty:
        print("\njudge agreement (percent of the same verdicts, Cohen's kappa)")
        print(markdown(agreement))
    usage = pd.DataFrame(result.get("spend") or [])
    if not usage.empty:
        spent = usage.loc[:, (usage != 0).any(axis=0)]
        print("\ntokens and cost")
        print(markdown(spent))
    if result.get("report"):
        print(f"\nreport: {result['report']}")
    if result.get("missing"):
        print(f"\n{result['missing']} items have no record yet: run again with the same run id")
    if result.get("unreadable"):
        print(
            f"{result['unreadable']} stored records are undecodable and count as missing: "
            "the next run of this run id moves them to quarantine/ and asks them again"
        )
