"""DatBench (DatologyAI/DatBench; DatBench-Full with the `full` option): nine capabilities of
single-image questions, scored by the harness's per-dataset scorers (`scoring`: `default` fixes
upstream's quirks, `compat` keeps them), judge rows graded by the run's judge model (`judge`).

Metrics: accuracy (mean score; ANLS and IoU-style scores stay fractional) per capability, per
source dataset and per eval mode, each with SE and n. Circular rows (`is_circular`) are grouped
by (`source_info.dataset`, `original_idx`): a group counts once, and only if every rotation is
right (`accuracy`); upstream's per-row mean is reported beside it (`accuracy_rows`).

Two registry entries share this package: `datbench` (with the image) and `datbench_blind` (the
same text, no image), so one run can measure the vision delta; `evalfleet datbench` computes
it, lists blind-solvable items, and selects a discriminative subset from a run's models.
"""

from evalfleet.benchmarks.datbench.benchmark import (
    DATBENCH,
    DATBENCH_BLIND,
    DatBench,
    DatBenchBlind,
    DatBenchOptions,
)

__all__ = [
    "DATBENCH",
    "DATBENCH_BLIND",
    "DatBench",
    "DatBenchBlind",
    "DatBenchOptions",
]
