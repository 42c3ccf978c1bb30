"""`evalfleet export RUN --format hf`: the run's items as a Hugging Face `datasets` folder,
one row per (model, benchmark, sample, epoch), that `datasets.load_from_disk` reads. Each row's
`scores` lists every scoring mode's verdict (the same fields in every row, whatever the
benchmark)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from evalfleet.reports.export_rows import ExportRun


def write_hf_dataset(export: ExportRun, out: Path) -> int:
    """Save the rows into `out`; how many."""
    import datasets

    datasets.disable_progress_bars()  # the command prints its one line
    rows = [{"run_id": export.run_id, **asdict(item)} for item in export.items]
    datasets.Dataset.from_list(rows).save_to_disk(str(out))
    return len(rows)
