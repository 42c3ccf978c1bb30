"""Where each object of a run lives in the store (keys are '/'-separated, relative to the root).

    {run}/manifest.json                                        request, identity, history
    {run}/plan/{benchmark}.parquet                             the samples the run asks
    {run}/completions/{model}/{benchmark}/{sample}/{epoch}.{hash}.json            an answer
    {run}/completions/{model}/{benchmark}/{sample}/{epoch}.{hash}.failed-{ms}.json a terminal error
    {run}/judgements/{judge}/{model}/{benchmark}/{sample}/{epoch}.{hash}[.failed-{ms}].json
    {run}/ledger/{completions|judgements/{judge}}/{model}/{benchmark}/{sample}/
        {epoch}.{hash}.{call}-{attempt}.json                   a billed attempt that was
                                                               refused (an empty answer),
                                                               kept before the next is sent
    {run}/results/{version}/...                                tables of one aggregation
    {run}/results/latest.json                                  which version is the newest
    {run}/batches/{job}.json                                   a batch job: intent, id, end
    {run}/quarantine/...                                       undecodable records set aside
    {run}/counts.json                                          answers done and failed, as the
                                                               last aggregation listed them
    {run}/records-changed/{ns}-{random}.json                   answer records written or moved
                                                               aside outside a run command

`{model}`, `{judge}` and `{sample}` are percent-encoded into one segment ("openai/gpt-4o" ->
"openai%2Fgpt-4o"). `{hash}` is the first 16 hex digits of the request hash (what was sent),
so a resume can tell done, failed and stale items apart from a listing alone, and a record
that answered another request is never overwritten, only left aside.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

from evalfleet.storage.keys import safe_segment, unsafe_segment

HASH_CHARS = 16
ANSWER = "answer"
JUDGE = "judge"
# A record's file name: {epoch}.{hash}.json or {epoch}.{hash}.failed-{ms}.json
_FILE_NAME = re.compile(r"(\d+)\.([0-9a-f]+)(?:\.failed-(\d+))?\.json")

_VERSION = re.compile(r"v-[0-9a-f]{12}")
segment = safe_segment
# A resume parses every stored key; model and sample segments repeat across epochs.
unsegment = functools.lru_cache(maxsize=1 << 16)(unsafe_segment)


class ItemKey(NamedTuple):
    """Which work item: the one place the (stage, model, benchmark, sample, epoch) tuple is
    spelled out. `judge` is the judge model of a judgement, "" for an answer."""

    stage: str
    judge: str
    model: str
    benchmark: str
    sample_id: str
    epoch: int

    @staticmethod
    def answer(model: str, benchmark: str, sample_id: str, epoch: int) -> ItemKey:
        return ItemKey(ANSWER, "", model, benchmark, sample_id, epoch)

    def judged_by(self, judge: str) -> ItemKey:
        """The judgement of this answer by `judge`."""
        return self._replace(stage=JUDGE, judge=judge)

    def graded(self) -> ItemKey:
        """The answer a judgement grades (an answer key is its own)."""
        return self._replace(stage=ANSWER, judge="")

    @property
    def caller(self) -> str:
        """The model that is called: the judge of a judgement, else the evaluated model."""
        return self.judge or self.model


def manifest_key(run_id: str) -> str:
    return f"{run_id}/manifest.json"


def plan_key(run_id: str, benchmark: str) -> str:
    return f"{run_id}/plan/{benchmark}.parquet"


def stage_prefix(run_id: str, stage: str) -> str:
    return f"{run_id}/completions/" if stage == ANSWER else f"{run_id}/judgements/"


def results_key(run_id: str, version: str, name: str) -> str:
    return f"{run_id}/results/{version}/{name}"


def is_results_version(name: str) -> bool:
    """A results version's name as `engine.scoring.tables.version_of` makes it: v-<12 hex>."""
    return _VERSION.fullmatch(name) is not None


def latest_results_key(run_id: str) -> str:
    return f"{run_id}/results/latest.json"


def batch_prefix(run_id: str) -> str:
    return f"{run_id}/batches/"


def batch_job_key(run_id: str, job_id: str) -> str:
    return f"{run_id}/batches/{job_id}.json"


def quarantine_key(run_id: str, key: str) -> str:
    return f"{run_id}/quarantine/{key[len(run_id) + 1 :]}"


def counts_key(run_id: str) -> str:
    """The answer counts the run's last aggregation listed (`evalfleet.engine.store.counts`)."""
    return f"{run_id}/counts.json"


def changes_prefix(run_id: str) -> str:
    """Where a writer of answer records outside a run command leaves a mark once it has
    written or moved them (`storage.changes`): recorded counts that did not see it are void."""
    return f"{run_id}/records-changed/"


def item_dir(run_id: str, key: ItemKey) -> str:
    base = f"{segment(key.model)}/{key.benchmark}/{segment(key.sample_id)}"
    if key.stage == ANSWER:
        return f"{run_id}/completions/{base}"
    return f"{run_id}/judgements/{segment(key.judge)}/{base}"


def record_key(run_id: str, key: ItemKey, request_hash: str) -> str:
    return f"{item_dir(run_id, key)}/{key.epoch}.{request_hash[:HASH_CHARS]}.json"


def ledger_prefix(run_id: str) -> str:
    return f"{run_id}/ledger/"


def ledger_key(run_id: str, key: ItemKey, request_hash: str, call_id: str, attempt: int) -> str:
    """Where a refused billed attempt of a call is kept (`core.record.LedgerEntry`)."""
    item = item_dir(run_id, key)[len(run_id) + 1 :]
    name = f"{key.epoch}.{request_hash[:HASH_CHARS]}.{call_id}-{attempt}.json"
    return f"{run_id}/ledger/{item}/{name}"


def failure_key(run_id: str, key: ItemKey, request_hash: str, unix_ms: int) -> str:
    return f"{item_dir(run_id, key)}/{key.epoch}.{request_hash[:HASH_CHARS]}.failed-{unix_ms}.json"


class StoredName(NamedTuple):
    """A record key taken apart."""

    item: ItemKey
    hash_prefix: str
    failed: bool
    key: str


def parse_record_key(run_id: str, key: str) -> StoredName | None:
    """Inverse of record_key / failure_key; None for anything else (e.g. temp files)."""
    names = parse_record_keys(run_id, (key,))
    return names[0] if names else None


def parse_record_keys(run_id: str, keys: Iterable[str]) -> list[StoredName]:
    """`parse_record_key` of each key, those that are not record keys left out. A directory
    holds the records of one sample (every epoch, answers and failures): its part of the key is
    taken apart once for all its keys, if they come together, as listings give them."""
    completions, judgements = f"{run_id}/completions/", f"{run_id}/judgements/"
    last_directory: str | None = None
    base: tuple[str, str, str, str, str] | None = None
    names: list[StoredName] = []
    append, file_name = names.append, _FILE_NAME.fullmatch  # once, not per key
    for key in keys:
        slash = key.rfind("/")
        directory = key[:slash]
        if directory != last_directory:
            last_directory, base = directory, _item_directory(directory, completions, judgements)
        if base is None:
            continue
        match = file_name(key, slash + 1)
        if match is not None:
            epoch, hash_prefix, ms = match.groups()
            append(_stored_name((_item_key((*base, int(epoch))), hash_prefix, ms is not None, key)))
    return names


# The named tuples made straight from a tuple: their generated __new__ is a Python call, a
# third of the cost of parsing a key.
_item_key = functools.partial(tuple.__new__, ItemKey)
_stored_name = functools.partial(tuple.__new__, StoredName)


def _item_directory(
    directory: str, completions: str, judgements: str
) -> tuple[str, str, str, str, str] | None:
    """(stage, judge, model, benchmark, sample) of a record's directory, or None."""
    if directory.startswith(completions):
        parts = directory[len(completions) :].split("/")
        if len(parts) != 3:
            return None
        model, benchmark, sample = parts
        return ANSWER, "", unsegment(model), benchmark, unsegment(sample)
    if directory.startswith(judgements):
        parts = directory[len(judgements) :].split("/")
        if len(parts) != 4:
            return None
        judge, model, benchmark, sample = parts
        return JUDGE, unsegment(judge), unsegment(model), benchmark, unsegment(sample)
    return None
