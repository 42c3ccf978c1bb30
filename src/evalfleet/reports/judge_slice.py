"""A run's judges checked against a labelled slice (`evalfleet judge RUN --judge J --labels
FILE`): each judge's accuracy and Cohen's kappa against a person's verdicts on stored answers,
with 95 % intervals (`engine.scoring.agreement.slice_agreement`), read from the run's latest
results; and a panel of judges (`--judge A --judge B --judge C --panel majority`): their
majority verdict against the rules and the slice."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalfleet.benchmarks import registry
from evalfleet.core.types import ConfigError
from evalfleet.engine.scoring.agreement import (
    KEYS,
    panel_name,
    panel_verdicts,
    read_labels,
    slice_agreement,
)
from evalfleet.engine.store.manifest import require_manifest
from evalfleet.engine.store.results import read_version_table, results_about
from evalfleet.metrics.agreement import agreement
from evalfleet.reports import formatting as fmt
from evalfleet.storage.base import Store

DEMO = "demo"
DEMO_FILE = "demo_labels.jsonl"


def demo_slices() -> list[Path]:
    """The labelled slices shipped beside the judged benchmarks' demo data: a person's
    verdicts on the answers `evalfleet demo -b NAME` stores (the simulator's answers are the
    same on every run), each file beside its benchmark's code."""
    import importlib

    found = []
    for name in registry.names():
        module = importlib.import_module(type(registry.get(name)).__module__)
        path = Path(module.__file__ or "").parent / DEMO_FILE
        if path.is_file() and path not in found:
            found.append(path)
    return found


def load_labels(path: str) -> pd.DataFrame:
    """The labelled slice at `path` ("demo": the slices shipped for the demos' runs); one line
    (ConfigError) when it cannot be read, before any judge is asked."""
    if path == DEMO:
        return pd.concat([load_labels(str(p)) for p in demo_slices()], ignore_index=True)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the labels {path}: {exc}: pass a JSON Lines file") from None
    try:
        return read_labels(text, path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


PANEL_SIZE = 3


def panel_members(store: Store, run_id: str, judges: list[str]) -> list[str]:
    """The judges a panel holds once `judges` are added: the run's own, then those (a run that
    cannot be read yet: those; the judge command names what is wrong with it)."""
    try:
        before = require_manifest(store, run_id).request.judges()
    except Exception:  # the judge command itself says why the run cannot be judged
        before = []
    return list(dict.fromkeys([*before, *judges]))


def check_panel(panel: str | None, members: list[str]) -> None:
    if panel and len(members) < PANEL_SIZE:
        raise ConfigError(
            f"a --panel {panel} needs at least {PANEL_SIZE} judges, the run would have "
            f"{len(members)}: repeat --judge, e.g. --judge A --judge B --judge C"
        )


def _run_tables(store: Store, run_id: str):
    manifest = require_manifest(store, run_id)
    version = results_about(store, run_id).version
    samples = read_version_table(store, run_id, version, "samples.parquet")
    request = manifest.request
    benchmarks = {n: registry.get(n) for n in request.benchmarks if n in registry.names()}
    return samples, benchmarks, request.judges()


def slice_table(
    store: Store, run_id: str, labels: pd.DataFrame, panel: list[str] | None = None
) -> pd.DataFrame:
    samples, benchmarks, judges = _run_tables(store, run_id)
    return slice_agreement(samples, labels, benchmarks, judges, panel)


def panel_text(store: Store, run_id: str, members: list[str]) -> str:
    """The panel's majority verdict against the rules, per judged benchmark, on the answers
    every member judged."""
    samples, benchmarks, judges = _run_tables(store, run_id)
    lines = [
        f"{panel_name(members)}: {', '.join(members)}; against the rules on the answers every "
        "member judged (a tie counts as wrong)",
        "| benchmark | answers | panel right | agreement | kappa | 95% interval |",
        "|:---|---:|---:|---:|---:|:---|",
    ]
    for name, bench in benchmarks.items():
        if bench.judge is None:
            continue
        mine = samples[(samples.benchmark == name) & samples.error.isna()]
        verdicts = panel_verdicts(mine, bench, judges, members)
        rules = mine[(mine.scoring == bench.scorings[0]) & mine.score_error.isna()]
        both = verdicts.join(rules.set_index(KEYS)[["correct"]].astype(bool), rsuffix="_rules")
        both = both.dropna()
        if both.empty:
            continue
        found = agreement(
            list(both.correct.astype(bool)),
            list(both.correct_rules.astype(bool)),
            list(both.index.get_level_values("sample_id")),
        )
        interval = found.kappa_interval
        cells = [
            fmt.md_text(name),
            str(found.n),
            str(int(both.correct.astype(bool).sum())),
            fmt.share(found.accuracy),
            fmt.signed(found.kappa),
            fmt.interval(interval.low if interval else None, interval.high if interval else None),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
