"""A store file that is there but cannot be read as what it should be (truncated, emptied,
replaced by garbage), or that another file names and is gone: named, with the command that
repairs it, in one line. Never taken as truth, never a traceback.

What repairs what: a run's results (`results/…`) are rebuilt from its records by
`evalfleet aggregate RUN`; its plans (`plan/…`) by `evalfleet run` with the run's own id and
request, which writes them again from the dataset; a manifest has no copy to rebuild it from.
"""

from __future__ import annotations

from evalfleet.engine.run.identity import RunError
from evalfleet.storage.base import Store


class DamagedFile(RunError):
    """One line: which file is damaged, how, and the command that repairs it."""

    def __init__(self, store: Store, key: str, problem: str, repair: str) -> None:
        self.key = key
        self.run_id = key.split("/", 1)[0]
        super().__init__(f"{_where(store, key)} is damaged ({problem}): {repair}")


def results_damaged(store: Store, key: str, problem: str) -> DamagedFile:
    run_id = key.split("/", 1)[0]
    return DamagedFile(
        store,
        key,
        problem,
        f"`evalfleet aggregate {run_id}` rebuilds the results from the run's records",
    )


def plan_damaged(store: Store, key: str, problem: str) -> DamagedFile:
    run_id = key.split("/", 1)[0]
    return DamagedFile(
        store,
        key,
        problem,
        f"`evalfleet run --run-id {run_id}` with the run's own models, benchmarks and dataset "
        "writes the plan again (its records are kept)",
    )


def manifest_damaged(store: Store, key: str, problem: str) -> DamagedFile:
    return DamagedFile(
        store,
        key,
        problem,
        "nothing can rebuild a manifest: restore it from a copy, or move the run aside and "
        "start a new --run-id",
    )


def problem_of(exc: BaseException) -> str:
    """A short reason from a decoder's error: what a person needs, not the decoder's words."""
    text = " ".join(str(exc).split())
    return text[:120] + ("…" if len(text) > 120 else "")


def _where(store: Store, key: str) -> str:
    return f"{store.url.rstrip('/')}/{key}"
