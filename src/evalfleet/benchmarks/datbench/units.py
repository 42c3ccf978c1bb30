"""DatBench's units: a row, or a circular group of rotations that counts once and only if
every rotation is right (MMBench CircularEval), with the fields each is broken down by."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from evalfleet.benchmarks.interface import MetricRow, ScoredItem
from evalfleet.core.types import Sample
from evalfleet.metrics import accuracy, all_samples_mean_stderr

BREAKDOWNS = ("capability", "dataset", "eval_mode")


def unit_values(
    scored: Sequence[ScoredItem], samples: dict[str, Sample], *, circular: bool
) -> dict[str, tuple[float, dict]]:
    """Each unit's value (its mean over epochs) with its breakdown fields."""
    values: dict[str, list[float]] = defaultdict(list)
    fields: dict[str, dict] = {}
    for unit, _epoch, value, sample in unit_epochs(scored, samples, circular):
        values[unit].append(value)
        fields[unit] = {by: sample.metadata[by] for by in BREAKDOWNS}
    return {u: (sum(vs) / len(vs), fields[u]) for u, vs in values.items()}


def unit_epochs(
    scored: Sequence[ScoredItem], samples: dict[str, Sample], circular: bool
) -> list[tuple[str, int, float, Sample]]:
    """(unit, epoch, value, a sample of the unit) per unit and epoch. A unit is a row, or,
    with `circular`, a circular group, which scores 1 in an epoch only if every rotation is
    right in it."""
    per_epoch: dict[tuple[str, int], list[ScoredItem]] = defaultdict(list)
    for item in scored:
        if item.score_error is not None:
            continue
        per_epoch[(unit_of(samples[item.sample_id], circular), item.epoch)].append(item)
    out = []
    for (unit, epoch), items in per_epoch.items():
        sample = samples[items[0].sample_id]
        if circular and sample.metadata["is_circular"]:
            value = 1.0 if all(i.correct for i in items) else 0.0
        else:
            value = items[0].value
        out.append((unit, epoch, value, sample))
    return out


def unit_of(sample: Sample, circular: bool = True) -> str:
    """The unit a row is counted in: its circular group, or itself."""
    if circular and sample.metadata["is_circular"]:
        return sample.group_id or sample.id
    return sample.id


def metric_row(metric: str, values: list[float], group: str) -> MetricRow:
    if not values:
        return MetricRow(metric, None, None, 0, group)
    return MetricRow(metric, accuracy(values), all_samples_mean_stderr(values), len(values), group)
