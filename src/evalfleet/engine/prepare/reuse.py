"""Pay once for what did not change (`run --reuse-from RUN`): an answer an earlier run stored
for an identical request (same request hash: model, decoding, prompt, media, epoch seed) is
copied into this run, put-if-absent, with `reused_from` naming the run it came from. The plan
then counts it done and does not ask it. Never implicit: only the runs named are read."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from evalfleet.core.record import Graded, Record
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.items import AnswerSpace, RunShape, planned_judgements
from evalfleet.engine.run.state import list_records, read_records, reconcile_keys
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.storage import layout
from evalfleet.storage.base import Store

log = logging.getLogger("evalfleet")

ANY_RUN = "*"


def source_runs(store: Store, run_id: str, reuse_from: list[str]) -> list[str]:
    """The runs to take answers from, this one apart; '*' is every run of the store. A run
    named that has no manifest is one line (before anything is asked)."""
    runs: list[str] = []
    for name in reuse_from:
        if name == ANY_RUN:
            runs += [r for r in store.list_dirs("") if store.exists(layout.manifest_key(r))]
        elif not store.exists(layout.manifest_key(name)):
            raise ConfigError(
                f"--reuse-from {name}: no such run in the store (see `evalfleet status`); "
                "name a run that stored answers, or '*'"
            )
        else:
            runs.append(name)
    return [r for r in dict.fromkeys(runs) if r != run_id and r != "leaderboard"]


Found = tuple[layout.ItemKey, str, str, str]  # key, request hash, source run, its record


def reusable(store: Store, run: RunShape, reuse_from: list[str]) -> list[Found]:
    """The answers of `run` not stored in it that a run named stored for the same request
    (by its listing: done, not failed); reads no record, writes nothing (the estimate prices
    the others only)."""
    sources = source_runs(store, run.run_id, reuse_from)
    if not sources:
        return []
    have = list_records(store, run.run_id, (layout.ANSWER,))
    found: dict[
        tuple[Any, ...], tuple[str, str]
    ] = {}  # (key, hash prefix) -> (source run, its key)
    for source in sources:
        listing = list_records(store, source, (layout.ANSWER,))
        for key, per_hash in listing.ok.items():
            for prefix, record_key in per_hash.items():
                found.setdefault((tuple(key), prefix), (source, record_key))
    out: list[Found] = []
    space = AnswerSpace(run)
    for name in space.names:
        for fields, request_hash in space.keys_and_hashes(name):
            prefix = request_hash[: layout.HASH_CHARS]
            hit = found.get((tuple(fields), prefix))
            if hit is None:
                continue
            key = layout.ItemKey._make(fields)
            if prefix not in have.ok.get(key, {}):
                out.append((key, request_hash, *hit))
    return out


def reuse_answers(store: Store, run: RunShape, reuse_from: list[str]) -> int:
    """Copy into `run` each stored answer of the runs named whose request hash equals one
    this run still has to ask; the number copied. Failures are never reused."""
    wanted = reusable(store, run, reuse_from)
    if not wanted:
        return 0
    sources = sorted({source for _, _, source, _ in wanted})
    blobs = store.get_many([source_key for *_, source_key in wanted])
    copies: dict[str, bytes] = {}
    for key, request_hash, source, source_key in wanted:
        record = Record.read(blobs.get(source_key))
        if record is None or record.failed or record.request_hash != request_hash:
            continue  # unreadable, a failure, or a hash that only shares its prefix
        copy = dataclasses.replace(record, run_id=run.run_id, reused_from=source)
        copies[layout.record_key(run.run_id, key, request_hash)] = copy.to_bytes()
    written = store.put_many_if_absent(copies) if copies else {}
    count = sum(1 for ok in written.values() if ok)
    if count:
        log.info("reused %d stored answers from %s: not asked again", count, ", ".join(sources))
        record_reuse(store, run.run_id, count, sources)
    return count


def reuse_judgements(store: Store, run: RunShape, reuse_from: list[str]) -> int:
    """Copy into `run` each judgement a run named stored for the same request (same judge,
    grader prompt, answer digest: the request hash), graded now against this run's answer;
    the number copied. Called once the answers are (copied) in."""
    sources = source_runs(store, run.run_id, reuse_from)
    if not sources or not run.judges:
        return 0
    listing = list_records(store, run.run_id, (layout.ANSWER, layout.JUDGE))
    space = AnswerSpace(run)
    answers = reconcile_keys(
        listing, (pair for name in space.names for pair in space.keys_and_hashes(name))
    )
    read_records(store, answers, list(answers.record_key.values()))
    found: dict[tuple[Any, ...], tuple[str, str]] = {}
    for source in sources:
        for key, per_hash in list_records(store, source, (layout.JUDGE,)).ok.items():
            for prefix, record_key in per_hash.items():
                found.setdefault((tuple(key), prefix), (source, record_key))
    wanted = []
    for item, _ in planned_judgements(run, answers):
        prefix = item.request_hash[: layout.HASH_CHARS]
        hit = found.get((tuple(item.key), prefix))
        if hit is not None and prefix not in listing.ok.get(item.key, {}):
            wanted.append((item, *hit))
    blobs = store.get_many([source_key for *_, source_key in wanted])
    copies: dict[str, bytes] = {}
    for item, source, source_key in wanted:
        record = Record.read(blobs.get(source_key))
        if record is None or record.failed or record.request_hash != item.request_hash:
            continue
        graded = Graded(*item.graded) if item.graded else None
        copy = dataclasses.replace(record, run_id=run.run_id, reused_from=source, graded=graded)
        copies[layout.record_key(run.run_id, item.key, item.request_hash)] = copy.to_bytes()
    written = store.put_many_if_absent(copies) if copies else {}
    count = sum(1 for ok in written.values() if ok)
    if count:
        log.info("reused %d stored judgements from %s", count, ", ".join(sources))
    return count


def record_reuse(store: Store, run_id: str, count: int, sources: list[str]) -> None:
    """The count and the runs it came from, on the manifest's latest event (this command's).
    Called before the run's heartbeat starts: nothing else writes the manifest then."""
    manifest = read_manifest(store, run_id)
    if manifest is None or not manifest.history:
        return
    last = manifest.history[-1]
    event = dataclasses.replace(
        last,
        reused=last.reused + count,
        reused_from=tuple(dict.fromkeys([*last.reused_from, *sources])),
    )
    updated = dataclasses.replace(manifest, history=(*manifest.history[:-1], event))
    store.put(layout.manifest_key(run_id), updated.to_bytes())
