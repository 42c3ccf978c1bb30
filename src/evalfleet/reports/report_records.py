"""The records behind the items of a paged report, read a chunk of items at a time: the same
record the aggregation scored for each item, never the whole run at once.

An answer's key is made from the run's plan (its request hash: model, decoding, prompt
digest), as a resume makes it; where it is absent (a call that failed for good is stored
under the time it failed) the item's folder is listed and the latest failure of that request
taken, as `engine.run.state.reconcile` takes it. A judgement's key is made from the answer it
grades (`evalfleet.engine.run.items.judge_item`)."""

from __future__ import annotations

from collections.abc import Sequence

from evalfleet.core.record import Record
from evalfleet.engine.run.items import answer_hashes, judge_item
from evalfleet.engine.store.stored import StoredRun
from evalfleet.storage import layout
from evalfleet.storage.layout import ItemKey


class RecordReader:
    def __init__(self, run: StoredRun) -> None:
        self.run = run
        self._answer_hash = answer_hashes(run)

    def answers(self, keys: Sequence[ItemKey]) -> list[tuple[str, Record] | None]:
        """Each answer's (store key, record), None where the store holds none readable."""
        return self._read(keys, [self._answer_hash(key) for key in keys])

    def judgements(
        self, answers: Sequence[tuple[ItemKey, tuple[str, Record] | None]]
    ) -> list[list[tuple[str, Record]]]:
        """Per answer, its judgements there are, by judge in the run's judge order."""
        asked: list[tuple[int, str, ItemKey, str]] = []
        for at, (key, found) in enumerate(answers):
            if found is None or found[1].failed or not self.run.judges:
                continue
            record_key, record = found
            for judge in self.run.judges:
                made = judge_item(self.run, judge, key, record_key, record.response or "")
                if made is not None:
                    asked.append((at, judge, made[0].key, made[0].request_hash))
        read = self._read([a[2] for a in asked], [a[3] for a in asked])
        out: list[list[tuple[str, Record]]] = [[] for _ in answers]
        for (at, judge, _, _), found in zip(asked, read, strict=True):
            if found is not None:
                out[at].append((judge, found[1]))
        return out

    def _read(
        self, keys: Sequence[ItemKey], hashes: Sequence[str]
    ) -> list[tuple[str, Record] | None]:
        store, run_id = self.run.store, self.run.run_id
        done = [layout.record_key(run_id, k, h) for k, h in zip(keys, hashes, strict=True)]
        blobs = store.get_many(done)
        out: list[tuple[str, Record] | None] = []
        for key, hashed, record_key in zip(keys, hashes, done, strict=True):
            record = Record.read(blobs.get(record_key))
            if record is None:
                failure = self._latest_failure(key, hashed)
                record = Record.read(store.get(failure)) if failure else None
                record_key = failure or record_key
            out.append(None if record is None else (record_key, record))
        return out

    def _latest_failure(self, key: ItemKey, hashed: str) -> str | None:
        run_id = self.run.run_id
        failures = [
            stored
            for stored in self.run.store.list(layout.item_dir(run_id, key) + "/")
            if (name := layout.parse_record_key(run_id, stored)) is not None
            and name.failed
            and name.item == key
            and name.hash_prefix == hashed[: layout.HASH_CHARS]
        ]
        return max(failures, default=None)
