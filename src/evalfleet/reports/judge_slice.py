"""A run's judges checked against a labelled slice (`evalfleet judge RUN --judge J --labels
FILE`): each judge's accuracy and Cohen's kappa against a person's verdicts on stored answers,
with 95 % intervals (`engine.scoring.agreement.slice_agreement`), read from the run's latest
results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalfleet.benchmarks import registry
from evalfleet.core.types import ConfigError
from evalfleet.engine.scoring.agreement import read_labels, slice_agreement
from evalfleet.engine.store.manifest import require_manifest
from evalfleet.engine.store.results import read_version_table, results_about
from evalfleet.reports import formatting as fmt
from evalfleet.storage.base import Store


def load_labels(path: str) -> pd.DataFrame:
    """The labelled slice at `path`; one line (ConfigError) when it cannot be read, before
    any judge is asked."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the labels {path}: {exc}: pass a JSON Lines file") from None
    try:
        return read_labels(text, path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def slice_table(store: Store, run_id: str, labels: pd.DataFrame) -> pd.DataFrame:
    manifest = require_manifest(store, run_id)
    version = results_about(store, run_id).version
    samples = read_version_table(store, run_id, version, "samples.parquet")
    request = manifest.request
    benchmarks = {n: registry.get(n) for n in request.benchmarks if n in registry.names()}
    return slice_agreement(samples, labels, benchmarks, request.judges())


def to_text(table: pd.DataFrame, labelled: int) -> str:
    """The slice's table as a person reads it, or why it is empty."""
    if table.empty:
        return (
            f"labelled slice: none of its {labelled} answers is among the run's judged answers "
            "(labels name model, sample_id and epoch of a stored answer)"
        )
    lines = [
        "judges against the labelled slice (accuracy: Wilson 95 %; Cohen's kappa: bootstrap "
        "over questions)",
        "| benchmark | rater | labelled | accuracy | 95% interval | kappa | 95% interval |",
        "|:---|:---|---:|---:|:---|---:|:---|",
    ]
    for r in table.itertuples(index=False):
        cells = [
            fmt.md_text(r.benchmark),
            fmt.md_text(r.rater),
            str(r.labelled),
            fmt.share(r.accuracy),
            fmt.interval(r.accuracy_low, r.accuracy_high),
            fmt.signed(r.kappa),
            fmt.interval(r.kappa_low, r.kappa_high),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
