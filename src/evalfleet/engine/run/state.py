"""The state of every item of a run in the store: done, failed (a terminal error), stale
(asked differently before) or missing, from one listing; and undecodable records set aside."""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from evalfleet.core import collector
from evalfleet.core.record import Record
from evalfleet.engine.run.ledger import unrecorded
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.changes import records_changing
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.work import WorkItem

STATES = ("done", "failed", "stale", "missing")


@dataclass
class Reconciled:
    """Each item's state in the store: done, failed (terminal error), stale or missing."""

    state: dict[ItemKey, str] = field(default_factory=dict)
    record_key: dict[ItemKey, str] = field(default_factory=dict)
    undecodable: list[str] = field(default_factory=list)
    records: dict[str, Record] = field(default_factory=dict)  # decoded, when read

    def counts(self) -> dict[tuple[str, str, str, str], Counter[str]]:
        """(stage, judge, model, benchmark) -> state counts (judge "" for answers)."""
        out: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
        for key, state in self.state.items():
            out[(key.stage, key.judge, key.model, key.benchmark)][state] += 1
        return out

    def todo(self, items: list[WorkItem], retry_errors: bool = True) -> list[WorkItem]:
        wanted = {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}
        return [item for item in items if self.state[item.key] in wanted]


@dataclass
class Listing:
    """One listing of a run's records: per item, hash prefix -> key, done and failed apart."""

    ok: dict[ItemKey, dict[str, str]] = field(default_factory=dict)
    failed: dict[ItemKey, dict[str, str]] = field(default_factory=dict)
    empty: set[str] = field(default_factory=set)  # zero-byte records (known from S3 sizes)
    # older failures of an item's request, behind its latest one (each a call that was billed)
    superseded: list[str] = field(default_factory=list)


@collector.held_back()
def list_records(store: Store, run_id: str, stages: tuple[str, ...]) -> Listing:
    """One listing of the stages' records. Something of the wrong type where a record belongs
    (a folder, empty or not: a local store lists it as 'key/' or keys below it) is listed as
    that record, empty, so it is set aside like one and its item asked once (a write there
    would fail, or be taken for the record it is not)."""
    listing = Listing()
    ok, failed = listing.ok, listing.failed
    for stage in stages:
        prefix = layout.stage_prefix(run_id, stage)
        # Pages are parsed while the store fetches the next ones (S3 listings are slow).
        for page in store.iter_pages(prefix):
            keys = [key for key, _ in page]
            listing.empty.update(key for key, size in page if size == 0 and key[-1] != "/")
            names = layout.parse_record_keys(run_id, keys)
            if len(names) < len(keys):  # not all records: a folder where one belongs?
                places = _misplaced(run_id, prefix, keys, {name.key for name in names})
                listing.empty.update(places)
                names += layout.parse_record_keys(run_id, places)
            for item, hash_prefix, is_failed, key in names:
                side = failed if is_failed else ok
                per_item = side.get(item)
                if per_item is None:
                    side[item] = {hash_prefix: key}
                    continue
                previous = per_item.get(hash_prefix)
                if previous is None or key > previous:  # the latest failure wins (ms in key)
                    per_item[hash_prefix] = key
                    if previous is not None:
                        listing.superseded.append(previous)
                else:
                    listing.superseded.append(key)
    return listing


def unscored_keys(listing: Listing, scored: dict[ItemKey, str]) -> list[str]:
    """The record keys of a listing no table scores, whose calls were billed all the same:
    failures answered again later, older failures of the same request, and records of a
    request asked differently before (stale). `scored` is the answers' scored records; a
    judgement's scored record is its answer, else its latest failure (a judgement asked
    differently before is not counted here)."""
    out = list(listing.superseded)
    answer = layout.ANSWER
    for side in (listing.ok, listing.failed):
        for item, per_prefix in side.items():
            if item.stage == answer:
                chosen = scored.get(item)
                if len(per_prefix) > 1 or chosen is None or side is listing.failed:
                    out.extend(key for key in per_prefix.values() if key != chosen)
            elif side is listing.failed:
                answered = listing.ok.get(item)
                if answered:
                    out.extend(key for prefix, key in per_prefix.items() if prefix in answered)
    return out


def _misplaced(run_id: str, prefix: str, keys: list[str], records: set[str]) -> list[str]:
    """The record keys, among the places of `keys` that are not records, where a folder
    stands: an empty one ('…/0.h.json/') or one with keys below it ('…/0.h.json/x')."""
    depth = prefix.count("/") + (3 if prefix == layout.stage_prefix(run_id, layout.ANSWER) else 4)
    places = []
    for key in keys:
        if key in records:
            continue
        parts = key.split("/")
        if len(parts) > depth + 1:  # below a record's place
            place = "/".join(parts[: depth + 1])
            if layout.parse_record_key(run_id, place) is not None:
                places.append(place)
    return sorted(set(places))


class AnswerCounts(NamedTuple):
    """How far a run got, as `evalfleet runs` shows it: `done` answers are items with a
    record (whatever request it answered: a stale one counts here), `failed` items with only
    terminal errors. Records are not read: an undecodable one counts as what its name says."""

    done: int
    failed: int


def answer_counts(listing: Listing) -> AnswerCounts:
    """The answer counts of a listing (its judgements, if listed, left out)."""
    ok, failed = listing.ok, listing.failed
    answer = layout.ANSWER
    done = sum(1 for key in ok if key.stage == answer)
    only_failed = sum(1 for key in failed if key.stage == answer and key not in ok)
    return AnswerCounts(done, only_failed)


def stored_spend(store: Store, run_id: str) -> float:
    """What a run has cost so far: every record it stored, answers and judgements, stale ones
    and failures later answered again included, and the ledger entries of calls that stored
    no record (each record is read: only done when a budget needs it)."""
    keys = [
        key
        for stage in (layout.ANSWER, layout.JUDGE)
        for key in store.list(layout.stage_prefix(run_id, stage))
        if layout.parse_record_key(run_id, key) is not None
    ]
    total = 0.0
    for blob in store.get_many(keys).values():
        record = Record.read(blob)
        if record is not None:
            total += record.spent_usd
    return total + sum(entry.attempt.cost_usd for entry in unrecorded(store, run_id))


def classify(listing: Listing, item: WorkItem) -> tuple[str, str | None]:
    """An item's state from a listing, and the key of its record when it has one."""
    return classify_key(listing, item.key, item.request_hash)


def classify_key(
    listing: Listing, key: ItemKey | tuple[Any, ...], request_hash: str
) -> tuple[str, str | None]:
    """`classify` from an item's key (or the plain tuple of its fields) and request hash."""
    prefix = request_hash[: layout.HASH_CHARS]
    key = cast(ItemKey, key)  # a plain tuple of its fields hashes and compares as the key
    ok = listing.ok.get(key)
    found = None if ok is None else ok.get(prefix)
    if found is not None:
        return "done", found
    failed = listing.failed.get(key)
    found = None if failed is None else failed.get(prefix)
    if found is not None:
        return "failed", found
    return ("stale" if ok else "missing"), None


@collector.held_back()
def reconcile(
    store: Store, listing: Listing, items: Iterable[WorkItem], *, read: bool
) -> Reconciled:
    """Classify items from a listing. With `read`, every record counted as done or failed is
    read and decoded (kept in `records`), and an undecodable one counts as missing; without,
    only what the listing shows (a zero-byte record) is caught (`read_records` reads some)."""
    out = Reconciled()
    state, record_key = out.state, out.record_key
    for item in items:
        state[item.key], found = classify(listing, item)
        if found is not None:
            record_key[item.key] = found
    if read:
        read_records(store, out, list(record_key.values()))
    elif listing.empty:
        _set_missing(out, [k for k in record_key.values() if k in listing.empty])
    return out


@collector.held_back()
def reconcile_keys(listing: Listing, answers: Iterable[tuple[tuple[Any, ...], str]]) -> Reconciled:
    """`reconcile` without reading, from (key fields, request hash) pairs
    (`AnswerSpace.keys_and_hashes`): a million answers classified with no WorkItem made."""
    out = Reconciled()
    state, record_key, item_key = out.state, out.record_key, ItemKey._make
    for fields, request_hash in answers:
        key = item_key(fields)
        state[key], found = classify_key(listing, key, request_hash)
        if found is not None:
            record_key[key] = found
    if listing.empty:
        _set_missing(out, [k for k in record_key.values() if k in listing.empty])
    return out


def read_records(store: Store, state: Reconciled, keys: list[str]) -> None:
    """Read and decode the records `keys` (of `state`'s items): each kept in `records`, or,
    undecodable, added to `undecodable` and its item counted missing."""
    blobs = store.get_many(keys)
    bad = []
    for key in keys:
        record = Record.read(blobs.get(key))
        if record is None:
            bad.append(key)
        else:
            state.records[key] = record
    _set_missing(state, bad)


def undecodable(store: Store, keys: list[str], chunk: int = 1000) -> list[str]:
    """The records of `keys` that cannot be decoded (read a chunk at a time, none kept)."""
    bad: list[str] = []
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        blobs = store.get_many(part)
        bad.extend(key for key in part if Record.read(blobs.get(key)) is None)
    return bad


def _set_missing(state: Reconciled, bad: list[str]) -> None:
    """The items of the undecodable records `bad`: missing, their records set aside."""
    if not bad:
        return
    state.undecodable.extend(bad)
    gone = set(bad)
    for item_key, record_key in list(state.record_key.items()):
        if record_key in gone:
            state.state[item_key] = "missing"
            del state.record_key[item_key]


def quarantine(store: Store, run_id: str, keys: list[str]) -> None:
    """Move undecodable records aside (kept under quarantine/, never over one kept before) so
    they can be asked again; what stands at a record's place and is no file (a folder, a link
    to nothing) goes the same way. Moving answers voids the counts the last aggregation
    recorded (`evalfleet.storage.changes`)."""
    if not keys:
        return
    answers = layout.stage_prefix(run_id, layout.ANSWER)
    changing = any(key.startswith(answers) for key in keys)
    with records_changing(store, run_id, "quarantine") if changing else contextlib.nullcontext():
        for key in keys:
            store.set_aside(key, layout.quarantine_key(run_id, key))
