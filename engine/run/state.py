"""The state of every item of a run in the store: done, failed (a terminal error), stale
(asked differently before) or missing, from one listing; and undecodable records set aside."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from core.record import Record
from storage import layout
from storage.base import Store
from storage.layout import ItemKey
from tasks.work import WorkItem

STATES = ("done", "failed", "stale", "missing")


@dataclass
class Reconciled:
    """Each item's state in the store: done, failed (terminal error), stale or missing."""

    state: dict[ItemKey, str] = field(default_factory=dict)
    record_key: dict[ItemKey, str] = field(default_factory=dict)
    stale_keys: list[str] = field(default_factory=list)
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

    ok: dict[ItemKey, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    failed: dict[ItemKey, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    empty: set[str] = field(default_factory=set)  # zero-byte records (known from S3 sizes)


def list_records(store: Store, run_id: str, stages: tuple[str, ...]) -> Listing:
    listing = Listing()
    for stage in stages:
        # Pages are parsed while the store fetches the next ones (S3 listings are slow).
        for page in store.iter_pages(layout.stage_prefix(run_id, stage)):
            for key, size in page:
                name = layout.parse_record_key(run_id, key)
                if name is None:
                    continue
                if size == 0:
                    listing.empty.add(key)
                target = listing.failed if name.failed else listing.ok
                previous = target[name.item].get(name.hash_prefix)
                if previous is None or key > previous:  # the latest failure wins (ms in key)
                    target[name.item][name.hash_prefix] = key
    return listing


def stored_spend(store: Store, listing: Listing) -> float:
    """What a run's stored records cost, answers and judgements, stale ones included (each
    record is read: only done when a budget needs it)."""
    sides = (listing.ok, listing.failed)
    keys = [key for side in sides for per_item in side.values() for key in per_item.values()]
    total = 0.0
    for blob in store.get_many(keys).values():
        record = Record.read(blob)
        if record is not None:
            total += record.spent_usd
    return total


def reconcile(store: Store, listing: Listing, items: list[WorkItem], *, read: bool) -> Reconciled:
    """Classify items from a listing. With `read`, every record counted as done or failed is
    read and decoded (kept in `records`), and an undecodable one counts as missing; without,
    only what the listing shows (a zero-byte record) is caught."""
    out = Reconciled()
    for item in items:
        key, prefix = item.key, item.hash_prefix
        ok, failed = listing.ok.get(key, {}), listing.failed.get(key, {})
        if prefix in ok:
            out.state[key], out.record_key[key] = "done", ok[prefix]
        elif prefix in failed:
            out.state[key], out.record_key[key] = "failed", failed[prefix]
        else:
            out.state[key] = "stale" if ok else "missing"
        out.stale_keys.extend(k for h, k in ok.items() if h != prefix)
    if read:
        blobs = store.get_many(list(out.record_key.values()))
        for record_key in out.record_key.values():
            record = Record.read(blobs.get(record_key))
            if record is None:
                out.undecodable.append(record_key)
            else:
                out.records[record_key] = record
    else:
        out.undecodable = [k for k in out.record_key.values() if k in listing.empty]
    bad = set(out.undecodable)
    for item_key, record_key in list(out.record_key.items()):
        if record_key in bad:
            out.state[item_key] = "missing"
            del out.record_key[item_key]
    return out


def quarantine(store: Store, run_id: str, keys: list[str]) -> None:
    """Move undecodable records aside (kept under quarantine/) so they can be asked again."""
    for key in keys:
        data = store.get(key)
        if data is not None:
            store.put(layout.quarantine_key(run_id, key), data)
        store.delete(key)
