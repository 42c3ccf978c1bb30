"""Every folder a run will write can take its files: checked when the run is resolved, before
any request, so no answer is paid for whose place is damaged.

A local store keeps a run's keys as files in folders: a file (or a link to nothing) where a
folder belongs, or a folder that refuses new files, would fail each write after its answer
was paid, and each resume would pay again. The folders checked are the run's own (its plans,
results, quarantine, batch jobs, ledger), each (model, benchmark) folder of its answers, of
their ledger and of their judgements, and, in each of these that exists, the folder of every
sample it plans. One line names the first damaged path and its repair. A folder where a
record belongs is not checked here: the plan's listing finds it (`engine.run.state`) and sets
it aside. An S3 store has no folders: one probe of the run's prefix.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalfleet.storage import layout
from evalfleet.storage.base import Store, StoreError

if TYPE_CHECKING:
    from evalfleet.engine.run.items import BenchmarkData


def run_folders(
    run_id: str, models: Sequence[str], judges: Sequence[str], data: dict[str, BenchmarkData]
) -> list[str]:
    """The folders ('a/b/') a run writes into, but its samples' (see `sample_folders`)."""
    folders = [
        f"{run_id}/",
        f"{run_id}/plan/",
        f"{run_id}/results/",
        f"{run_id}/quarantine/",
        layout.batch_prefix(run_id),
        layout.ledger_prefix(run_id),
        layout.changes_prefix(run_id),
    ]
    return folders + [parent for parent, _ in _benchmark_folders(run_id, models, judges, data)]


def check_places(
    run_id: str,
    store: Store,
    models: Sequence[str],
    judges: Sequence[str],
    data: dict[str, BenchmarkData],
) -> None:
    """Raise a one-line StoreError naming the first place of the run that cannot take its
    files, and the repair."""
    store.check_folders(run_folders(run_id, models, judges, data))
    for folder, name in _benchmark_folders(run_id, models, judges, data):
        samples = data[name].by_id
        # the files beside sample folders are few (none, or a stray .DS_Store): each one's
        # name is looked up, not every sample's
        blocked = [folder + n for n in store.not_folders(folder) if layout.unsegment(n) in samples]
        if blocked:
            raise StoreError(_blocked(store, blocked))


def _benchmark_folders(
    run_id: str, models: Sequence[str], judges: Sequence[str], data: dict[str, BenchmarkData]
) -> list[tuple[str, str]]:
    """(folder, benchmark) of each folder holding a benchmark's sample folders: its answers,
    their ledger entries and their judgements."""
    out = []
    for name, bench_data in data.items():
        judged = judges if bench_data.benchmark.judge is not None else ()
        for model in models:
            key = layout.ItemKey.answer(model, name, "-", 0)
            for item in (key, *(key.judged_by(judge) for judge in judged)):
                folder = layout.item_dir(run_id, item).rsplit("/", 1)[0] + "/"
                out.append((folder, name))
                out.append((f"{run_id}/ledger/{folder[len(run_id) + 1 :]}", name))
    return out


def _blocked(store: Store, keys: list[str]) -> str:
    first = f"{store.url.rstrip('/')}/{keys[0]}"
    more = f" (and {len(keys) - 1} more beside it)" if len(keys) > 1 else ""
    return (
        f"{first} is not a folder, where the run keeps a sample's records{more}: move it aside "
        f"(`mv {shlex.quote(first)} {shlex.quote(first + '.moved')}`) and run again"
    )
