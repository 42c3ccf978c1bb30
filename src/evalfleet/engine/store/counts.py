"""The answer counts a run's last aggregation listed, kept in {run}/counts.json so that
`evalfleet runs` shows an ended run without listing its records (a million of them take
seconds to list), and the rule that says when they still hold.

An aggregation knows the counts from the listing it makes anyway (`answer_counts`, the
definitions `runs` uses). It records them with

- `listed_at`: when its listing began (before it read the heartbeat and the marks);
- `heartbeat`: which command's heartbeat the manifest held then (`heartbeat.identity`);
- `changes_seen`: the marks of answer records written outside a run command
  (`evalfleet.storage.changes`) that were there before its listing began.

It records nothing while another process works on the run (a live heartbeat not its own: its
answers keep coming) or when that process crashed; under its own (`evalfleet run` aggregating
once its answers are in) it does. `recorded_counts` gives them back only while

- the heartbeat is in a final state (not running, not crashed): no command is writing;
- it is the heartbeat the aggregation saw, begun no later than `listed_at`: a later command
  has another one (it may have written answers);
- every mark in the store now was seen: a writer outside a command marks after its records,
  so one the aggregation did not see may have written after its listing began.

Otherwise, or when counts.json is missing or is not what this module writes, `runs` lists
the records as it always did.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from evalfleet.engine.run.state import AnswerCounts
from evalfleet.engine.store import heartbeat
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.engine.store.manifest_types import Manifest
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.changes import marks

log = logging.getLogger("evalfleet")
NOT_ENDED = ("running", "crashed")  # liveness: somebody is (or was, and died) writing


@dataclass(frozen=True)
class Listed:
    """What an aggregation knew as its listing began."""

    listed_at: datetime
    heartbeat: list[Any] | None
    changes_seen: list[str]


@dataclass(frozen=True)
class Recorded:
    done: int
    failed: int
    listed_at: datetime


def before_listing(store: Store, run_id: str) -> Listed | None:
    """Called just before an aggregation lists the run's records: None when its counts will
    not be worth recording (another process is working on the run, or crashed in it)."""
    listed_at = datetime.now(UTC)
    try:
        manifest = read_manifest(store, run_id)
        beat = None
        if manifest is not None:
            state = heartbeat.liveness(manifest)
            if state == "crashed" or (state == "running" and heartbeat.held_elsewhere(manifest)):
                return None
            beat = heartbeat.identity(manifest)
        return Listed(listed_at, beat, marks(store, run_id))
    except Exception as exc:  # the counts are a shortcut: the aggregation goes on without
        log.warning("run %s: its answer counts will not be recorded: %s", run_id, exc)
        return None


def record(store: Store, run_id: str, listed: Listed, counts: AnswerCounts) -> None:
    """Write the counts of the listing that began at `listed` (best effort: without them,
    `runs` lists the records)."""
    body = {
        "done": counts.done,
        "failed": counts.failed,
        "listed_at": listed.listed_at.isoformat(),
        "heartbeat": listed.heartbeat,
        "changes_seen": listed.changes_seen,
    }
    try:
        store.put(layout.counts_key(run_id), json.dumps(body, indent=1).encode())
    except Exception as exc:
        log.warning("run %s: its answer counts were not recorded: %s", run_id, exc)


def recorded_counts(store: Store, run_id: str, manifest: Manifest, state: str) -> Recorded | None:
    """The counts the run's last aggregation recorded, if they still hold (see the module);
    `state` is the run's `heartbeat.liveness`."""
    if state in NOT_ENDED:
        return None
    try:
        body = json.loads(store.get(layout.counts_key(run_id)) or b"null")
        found = _valid(body)
        if found is None or body["heartbeat"] != heartbeat.identity(manifest):
            return None
        if body["heartbeat"] is not None and found.listed_at < _started(body["heartbeat"]):
            return None
        if not set(marks(store, run_id)) <= set(body["changes_seen"]):
            return None
        return found
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError):
        return None  # not what `record` writes (torn, edited): the records are listed


def _valid(body: Any) -> Recorded | None:
    """The counts of a counts.json as `record` writes it, else None."""
    if not isinstance(body, dict):
        return None
    done, failed, at = body.get("done"), body.get("failed"), body.get("listed_at")
    seen, beat = body.get("changes_seen"), body.get("heartbeat")
    if type(done) is not int or type(failed) is not int or done < 0 or failed < 0:
        return None
    if not isinstance(at, str) or not isinstance(seen, list):
        return None
    if not all(isinstance(name, str) for name in seen):
        return None
    if beat is not None and not (isinstance(beat, list) and len(beat) == len(heartbeat.IDENTITY)):
        return None
    listed_at = datetime.fromisoformat(at)
    if listed_at.tzinfo is None:
        return None
    return Recorded(done, failed, listed_at)


def _started(beat: list[Any]) -> datetime:
    """When the command began, or just after: a heartbeat of an older evalfleet gives its
    start to the second (cut, not rounded), so a second is added to it."""
    text = beat[heartbeat.IDENTITY.index("started_at")]
    started = datetime.fromisoformat(text)
    if started.tzinfo is None:
        raise ValueError("a heartbeat's start without its time zone")
    return started if "." in text else started + timedelta(seconds=1)
