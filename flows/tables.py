"""Writing result tables to the store and showing them."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from storage import layout
from storage.base import Store


def summary_markdown(summary: pd.DataFrame) -> str:
    if summary.empty:
        return "_no completions scored yet_"
    # Columns that do not apply (e.g. grouped metrics of the main split) stay empty.
    shown = summary.astype(object).where(summary.notna(), None)
    return shown.to_markdown(index=False, floatfmt=".4f", missingval="")


def write_tables(
    store: Store, run_id: str, samples: pd.DataFrame, summary: pd.DataFrame
) -> list[str]:
    """samples.parquet, summary.{parquet,csv,md} under {run}/results/ (overwritten each time)."""
    outputs: dict[str, bytes] = {}
    buffer = io.BytesIO()
    samples.to_parquet(buffer, index=False)
    outputs["samples.parquet"] = buffer.getvalue()
    buffer = io.BytesIO()
    summary.to_parquet(buffer, index=False)
    outputs["summary.parquet"] = buffer.getvalue()
    outputs["summary.csv"] = summary.to_csv(index=False).encode()
    outputs["summary.md"] = (summary_markdown(summary) + "\n").encode()
    keys = []
    for name, data in outputs.items():
        key = layout.results_key(run_id, name)
        store.put(key, data)
        keys.append(key)
    return keys


def print_summary(result: dict[str, Any]) -> None:
    print()
    print(f"run {result['run_id']} — results in {result['store']}/{result['run_id']}/results/")
    summary = pd.DataFrame(result["summary"])
    if summary.empty:
        print(summary_markdown(summary))
    else:  # one table per split, e.g. ZeroBench's main questions and its subquestions
        for split, rows in summary.groupby("split", sort=False):
            print(f"\n{split}")
            print(summary_markdown(rows.reset_index(drop=True)))
    if result.get("missing"):
        print(f"{result['missing']} items have no completion yet: re-run with the same --run-id")
    if result.get("unreadable"):
        print(
            f"{result['unreadable']} stored records are undecodable and count as missing: "
            f"`evalfleet status {result['run_id']} --quarantine` sets them aside for a resume"
        )
