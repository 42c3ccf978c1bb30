"""Result tables as a person reads them: the tables of an aggregation printed to a terminal
120 columns wide (`engine.results.markdown` splits wide ones, never squeezes them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from engine.results import USAGE_IN_SUMMARY, markdown


def print_result(result: dict[str, Any]) -> None:
    """The tables of an aggregation, one per benchmark, fitted to the terminal."""
    print()
    location = f"{result['store']}/{result['run_id']}/results/{result.get('version')}/"
    print(f"run {result['run_id']} — results in {location}")
    for name, records in (result.get("summaries") or {}).items():
        table = pd.DataFrame(records)
        shown = table.drop(columns=["benchmark", *USAGE_IN_SUMMARY], errors="ignore")
        shown = shown.dropna(axis="columns", how="all")
        print(f"\n{name}")
        print(markdown(shown))
    agreement = pd.DataFrame(result.get("judge_agreement") or [])
    if not agreement.empty:
        print("\njudge agreement (percent of the same verdicts, Cohen's kappa)")
        print(markdown(agreement))
    usage = pd.DataFrame(result.get("usage") or [])
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
