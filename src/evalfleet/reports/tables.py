"""Result tables as a person reads them: the tables of an aggregation printed to a terminal
120 columns wide (`evalfleet.core.text_tables.markdown` splits wide ones, never squeezes them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalfleet.core.text_tables import markdown
from evalfleet.engine.scoring.tables import USAGE_IN_SUMMARY
from evalfleet.reports import formatting as fmt


def shown_summary(table: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """A summary as the terminal shows it: without the usage columns (their own table), the
    headline's interval in one column, and without columns no row has a value for, except
    those a footnote explains."""
    shown = table.drop(columns=["benchmark", *USAGE_IN_SUMMARY], errors="ignore")
    explained = {c for c in shown.columns if any(line.startswith(f"— {c} ") for line in notes)}
    empty = [c for c in shown.columns if shown[c].isna().all() and c not in explained]
    shown = shown.drop(columns=empty)
    if {"ci95_low", "ci95_high"} <= set(shown.columns):
        shown["95% interval"] = [
            fmt.interval(lo, hi) for lo, hi in zip(shown.ci95_low, shown.ci95_high, strict=True)
        ]
        shown = shown.drop(columns=["ci95_low", "ci95_high"])
    return shown


def unit_of(benchmark: str) -> str:
    from evalfleet.benchmarks import registry

    if benchmark in registry.names():
        return registry.get(benchmark).summary_unit
    return "values are fractions of 1"


def print_result(result: dict[str, Any]) -> None:
    """The tables of an aggregation, one per benchmark, fitted to the terminal."""
    print()
    location = f"{result['store']}/{result['run_id']}/results/{result.get('version')}/"
    print(f"run {result['run_id']} — results in {location}")
    for name, records in (result.get("summaries") or {}).items():
        notes = (result.get("notes") or {}).get(name, [])
        print(f"\n{name} ({unit_of(name)})")
        print(markdown(shown_summary(pd.DataFrame(records), notes)))
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
