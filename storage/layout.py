"""Where each object of a run lives in the store (keys are '/'-separated, relative to the root).

    {run}/manifest.json
    {run}/completions/{model}/{benchmark}/{sample}/{epoch}.{hash}.json            a completion
    {run}/completions/{model}/{benchmark}/{sample}/{epoch}.{hash}.failed-{ms}.json a terminal error
    {run}/results/...

`{model}` and `{sample}` are percent-encoded into one segment ("openai/gpt-4o" ->
"openai%2Fgpt-4o"). `{hash}` is the first 16 hex digits of the request hash (what was sent),
so a resume can tell done, failed and stale items apart from a listing alone, and a record
that answered another request is never overwritten, only left aside.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from storage.keys import safe_segment, unsafe_segment

HASH_CHARS = 16
_NAME = re.compile(r"^(?P<epoch>\d+)\.(?P<hash>[0-9a-f]+)(?:\.failed-(?P<ms>\d+))?\.json$")


segment = safe_segment
# A resume parses every stored key; model and sample segments repeat across epochs.
unsegment = functools.lru_cache(maxsize=1 << 16)(unsafe_segment)


def manifest_key(run_id: str) -> str:
    return f"{run_id}/manifest.json"


def completions_prefix(run_id: str) -> str:
    return f"{run_id}/completions/"


def results_key(run_id: str, name: str) -> str:
    return f"{run_id}/results/{name}"


def item_dir(run_id: str, model: str, benchmark: str, sample_id: str) -> str:
    return f"{run_id}/completions/{segment(model)}/{benchmark}/{segment(sample_id)}"


def completion_key(
    run_id: str, model: str, benchmark: str, sample_id: str, epoch: int, request_hash: str
) -> str:
    return (
        f"{item_dir(run_id, model, benchmark, sample_id)}/{epoch}.{request_hash[:HASH_CHARS]}.json"
    )


def failure_key(
    run_id: str,
    model: str,
    benchmark: str,
    sample_id: str,
    epoch: int,
    request_hash: str,
    unix_ms: int,
) -> str:
    base = item_dir(run_id, model, benchmark, sample_id)
    return f"{base}/{epoch}.{request_hash[:HASH_CHARS]}.failed-{unix_ms}.json"


@dataclass(frozen=True)
class StoredName:
    """A completion key taken apart."""

    model: str
    benchmark: str
    sample_id: str
    epoch: int
    hash_prefix: str
    failed: bool
    key: str


def parse_completion_key(run_id: str, key: str) -> StoredName | None:
    """Inverse of completion_key / failure_key; None for anything else (e.g. temp files)."""
    prefix = completions_prefix(run_id)
    if not key.startswith(prefix):
        return None
    parts = key[len(prefix) :].split("/")
    if len(parts) != 4:
        return None
    model, benchmark, sample, name = parts
    match = _NAME.match(name)
    if match is None:
        return None
    return StoredName(
        model=unsegment(model),
        benchmark=benchmark,
        sample_id=unsegment(sample),
        epoch=int(match["epoch"]),
        hash_prefix=match["hash"],
        failed=match["ms"] is not None,
        key=key,
    )
