"""Marks of answer records written or moved aside outside a run command, so the counts a run's
last aggregation recorded ({run}/counts.json, `engine.store.counts`) are not trusted past them.

A run command (`run`, the evaluate flows) keeps a heartbeat in the manifest and the counts are
only used once it has ended; these writers keep none: the batch poller collecting a job's
results, `status --quarantine` and the planner moving undecodable records aside. Each of them
writes its records inside `records_changing`, which

1. deletes counts.json first (a writer killed between its records and its mark leaves no
   counts behind from an aggregation that ran before it), and
2. once the records are written or moved, puts a mark of its own: a new key, never replaced,
   so two writers cannot undo each other's.

An aggregation records the marks that existed before its listing began. A mark it did not see
was put after that, by a writer whose records may be missing from its listing: its counts are
void. No clocks are compared, so a writer on another host with its clock off changes nothing.
(One case is left: a writer killed after some records and before its mark while an
aggregation lists and records its counts in between; the batch poller writes the job again at
its next round, with its mark.)
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

from evalfleet.storage import layout
from evalfleet.storage.base import Store


@contextlib.contextmanager
def records_changing(store: Store, run_id: str, what: str) -> Iterator[None]:
    """Around writing or moving aside answer records of `run_id` outside a run command."""
    store.delete(layout.counts_key(run_id))
    try:
        yield
    finally:  # records may have been written before an error: marked all the same
        now = time.time_ns()
        name = f"{now}-{uuid.uuid4().hex[:12]}.json"
        at = datetime.fromtimestamp(now / 1e9, UTC).isoformat()
        store.put(layout.changes_prefix(run_id) + name, json.dumps({"at": at, "by": what}).encode())


def marks(store: Store, run_id: str) -> list[str]:
    """The names of the run's marks (file names, no prefix)."""
    prefix = layout.changes_prefix(run_id)
    return [key[len(prefix) :] for key in store.list(prefix)]
