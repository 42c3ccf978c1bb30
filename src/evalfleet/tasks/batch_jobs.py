"""Batch jobs: work items answered through a provider's batch API, at its batch price.

A job lives in the store at {run}/batches/{job_id}.json, and goes through three states:

1. "intent": written before anything is sent — its items (keys, request hashes, attempts),
   each line's custom_id and the sha256 of the exact payload;
2. "submitted": once the provider accepted it, its provider id;
3. "ended": the provider finished it (completed, failed, expired or cancelled) and every
   line's result was written as the same per-item record the online path writes (same key,
   same request hash); the job records what it wrote.

A job found in "intent" may or may not have reached the provider (the driver died between
the call and writing the id): it is looked up among the provider's batches by its tag (the
job id) before anything is sent again.

Lines that failed in a way worth retrying (5xx, expiry, cancellation) write nothing: the item
stays missing and the next round asks it again (in a new batch, or online), unless it has
used up its attempts, when its failure is stored like an online terminal error.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from evalfleet.core.settings import TEST_PAUSE_AFTER_SUBMIT_S
from evalfleet.core.types import Decoding, Part
from evalfleet.providers.batch import BatchClient, BatchLine, LineResult, custom_id
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.changes import records_changing
from evalfleet.storage.layout import ItemKey
from evalfleet.tasks.records import build_record
from evalfleet.tasks.work import WorkItem

# Test hook: seconds between a submission and recording its id (a crash test kills the
# driver in that window).
SUBMIT_PAUSE_ENV = TEST_PAUSE_AFTER_SUBMIT_S.name


@dataclass
class JobItem:
    custom_id: str
    key: list[Any]  # an ItemKey as a list (JSON)
    request_hash: str
    decoding: dict[str, Any]
    attempt: int  # 1 for the first batch this item is in
    graded: list[str] | None = None

    def work_item(self, run_id: str) -> WorkItem:
        return WorkItem(
            run_id=run_id,
            key=ItemKey(*self.key),
            decoding=Decoding(**self.decoding),
            request_hash=self.request_hash,
            graded=tuple(self.graded) if self.graded else None,  # type: ignore[arg-type]
        )


@dataclass
class Job:
    job_id: str
    run_id: str
    caller: str  # the model called (an evaluated model, or the judge)
    api: str
    items: list[JobItem]
    payload_sha256: str = ""
    lines: int = 0
    created_at: float = field(default_factory=time.time)
    state: str = "intent"  # intent | submitted | ended
    provider_id: str | None = None
    submitted_at: float | None = None
    detail: str = ""  # the provider's last word: completed, expired, cancelled, ...
    counts: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)  # ok / failed / retry

    @property
    def key(self) -> str:
        return layout.batch_job_key(self.run_id, self.job_id)

    def encode(self) -> bytes:
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode()

    @staticmethod
    def decode(blob: bytes) -> Job:
        data = json.loads(blob)
        data["items"] = [JobItem(**i) for i in data["items"]]
        return Job(**data)


def new_job_id(run_id: str, caller: str) -> str:
    name = caller.replace("/", "-")
    return f"{run_id[:40]}-{name[:40]}-{uuid.uuid4().hex[:10]}"


def read_jobs(store: Store, run_id: str) -> list[Job]:
    keys = [k for k in store.list(layout.batch_prefix(run_id)) if k.endswith(".json")]
    blobs = store.get_many(keys)
    return sorted((Job.decode(blob) for blob in blobs.values() if blob), key=lambda j: j.created_at)


def write_job(store: Store, job: Job) -> None:
    store.put(job.key, job.encode())


def attempts_so_far(jobs: Sequence[Job]) -> dict[str, int]:
    """Per request hash: batch attempts that ended without an answer or a stored failure."""
    used: dict[str, int] = {}
    for job in jobs:
        if job.state == "ended":
            for item in job.items:
                used[item.request_hash] = max(used.get(item.request_hash, 0), item.attempt)
    return used


def in_open_jobs(jobs: Sequence[Job]) -> set[str]:
    """Request hashes of items in jobs that have not ended: not to be asked elsewhere."""
    return {i.request_hash for j in jobs if j.state != "ended" for i in j.items}


def build_jobs(
    run_id: str,
    caller: str,
    client: BatchClient,
    config: ModelConfig,
    items: Sequence[tuple[WorkItem, list[Part]]],
    attempts: dict[str, int],
) -> list[tuple[Job, list[BatchLine]]]:
    """Split one caller's items into jobs within the provider's limits (lines and bytes)."""
    jobs: list[tuple[Job, list[BatchLine]]] = []
    job: Job | None = None
    lines: list[BatchLine] = []
    size = 0
    for item, parts in items:
        line_size = sum(len(p.text or "") + len(p.data or b"") * 4 // 3 for p in parts) + 1024
        if job is None or len(lines) >= client.max_lines or size + line_size > client.max_bytes:
            job = Job(new_job_id(run_id, caller), run_id, caller, config.api, [])
            lines = []
            size = 0
            jobs.append((job, lines))
        cid = custom_id(job.job_id, len(lines))
        lines.append(BatchLine(cid, parts, item.decoding))
        size += line_size
        job.items.append(
            JobItem(
                custom_id=cid,
                key=list(item.key),
                request_hash=item.request_hash,
                decoding=item.decoding.to_dict(),
                attempt=attempts.get(item.request_hash, 0) + 1,
                graded=list(item.graded) if item.graded else None,
            )
        )
    return jobs


async def submit(store: Store, client: BatchClient, job: Job, lines: list[BatchLine]) -> None:
    """Write the intent, send the job, record its provider id."""
    payload = client.payload(lines, job.job_id)
    job.payload_sha256 = hashlib.sha256(payload).hexdigest()
    job.lines = len(lines)
    write_job(store, job)
    job.provider_id = await client.submit(lines, job.job_id)
    pause = TEST_PAUSE_AFTER_SUBMIT_S.get()
    if pause:
        time.sleep(pause)
    job.state, job.submitted_at = "submitted", time.time()
    write_job(store, job)


async def recover(store: Store, client: BatchClient, job: Job) -> bool:
    """A job whose submission is uncertain: find it at the provider by its tag. True if it
    was found (and is now "submitted"); False if it never arrived and can be sent."""
    provider_id = await client.find(job.job_id, job.created_at - 60, expected_lines=job.lines)
    if provider_id is None:
        return False
    job.provider_id, job.state, job.submitted_at = provider_id, "submitted", time.time()
    write_job(store, job)
    return True


async def collect(
    store: Store, client: BatchClient, job: Job, config: ModelConfig, max_attempts: int
) -> list[LineResult] | None:
    """Poll a submitted job; once it has ended, write its lines as records and end it.
    Returns its results (None while it runs)."""
    status = await client.status(job.provider_id or "")
    job.detail, job.counts = status.detail, dict(status.counts)
    if status.state != "ended":
        write_job(store, job)
        return None
    results = await client.results(job.provider_id or "")
    # the batch poller writes these outside any run command: the counts the last aggregation
    # recorded are void from now (`evalfleet.storage.changes`)
    answers = any(entry.key[0] == layout.ANSWER for entry in job.items)
    with records_changing(store, job.run_id, f"job {job.job_id}") if answers else nullcontext():
        written = write_results(store, job, config, max_attempts, results)
    job.state, job.written = "ended", written
    write_job(store, job)
    return results


def write_results(
    store: Store, job: Job, config: ModelConfig, max_attempts: int, results: list[LineResult]
) -> dict[str, int]:
    """Each line's result as the item's record (a line worth asking again writes nothing)."""
    by_id = {r.custom_id: r for r in results}
    written = {"ok": 0, "failed": 0, "retry": 0}
    now = time.time()
    for entry in job.items:
        result = by_id.get(entry.custom_id) or LineResult(
            entry.custom_id, None, ProviderError(ErrorKind.UNKNOWN, "no result for this line")
        )
        item = entry.work_item(job.run_id)
        error = result.error
        if error is not None and error.retryable and entry.attempt < max_attempts:
            written["retry"] += 1  # left missing: the next round asks it again
            continue
        record = build_record(
            item,
            config,
            response=result.response,
            error=error,
            attempts=entry.attempt,
            attempt_errors=[error] if error else [],
            started=job.submitted_at or job.created_at,
            finished=now,
            latency_s=None,
            batch={"job": job.job_id, "provider_id": job.provider_id},
        )
        key = item.store_key if error is None else item.failure_key(int(now * 1000))
        store.put_if_absent(key, record.to_bytes())
        written["ok" if error is None else "failed"] += 1
    return written
