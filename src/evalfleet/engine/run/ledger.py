"""A run's ledger entries (`{run}/ledger/`): the billed attempts that were refused (empty
answers, usage that cannot be true), each stored before its call's next attempt was sent.

A call that went on to store its record lists the same attempts in the record's own ledger,
so only the entries of calls that never stored one (their process ended between attempts)
add to what the run cost: `unrecorded` finds them.
"""

from __future__ import annotations

from collections import defaultdict

from evalfleet.core.record import LedgerEntry, Record, UnreadableRecord
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey


def unrecorded(store: Store, run_id: str) -> list[LedgerEntry]:
    """The ledger entries of calls that stored no record. Each item with entries has its
    records read (the folder of one sample): there are few, since most calls are billed once."""
    prefix = layout.ledger_prefix(run_id)
    keys = store.list(prefix)
    if not keys:
        return []
    entries: dict[str, list[LedgerEntry]] = defaultdict(list)  # an item's folder -> entries
    for blob in store.get_many(keys).values():
        if not blob:
            continue
        try:
            entry = LedgerEntry.from_bytes(blob)
        except UnreadableRecord:
            continue  # a damaged entry adds nothing (its call's record, if any, has it)
        entries[layout.item_dir(run_id, item_key(entry))].append(entry)
    out: list[LedgerEntry] = []
    for folder, found in entries.items():
        recorded = _call_ids(store, folder)
        out += [entry for entry in found if entry.call_id not in recorded]
    return out


def item_key(entry: LedgerEntry) -> ItemKey:
    return ItemKey(
        entry.stage,
        entry.judge_model or "",
        entry.model,
        entry.benchmark,
        entry.sample_id,
        entry.epoch,
    )


def _call_ids(store: Store, folder: str) -> set[str]:
    """The call ids of the records stored in one sample's folder (every epoch's)."""
    found = set()
    for blob in store.get_many(store.list(folder)).values():
        record = Record.read(blob)
        if record is not None and record.call_id:
            found.add(record.call_id)
    return found
