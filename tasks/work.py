"""Work items: one (model, benchmark, sample, epoch) with its decoding settings and hash."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from benchmarks.base import Part
from providers.types import Decoding
from storage import layout


@dataclass(frozen=True)
class WorkItem:
    run_id: str
    model: str
    benchmark: str
    sample_id: str
    epoch: int
    decoding: Decoding
    request_hash: str

    @property
    def key(self) -> str:
        return layout.completion_key(
            self.run_id, self.model, self.benchmark, self.sample_id, self.epoch, self.request_hash
        )

    @property
    def hash_prefix(self) -> str:
        return self.request_hash[: layout.HASH_CHARS]

    def identity(self) -> tuple[str, str, str, int]:
        return (self.model, self.benchmark, self.sample_id, self.epoch)


def parts_digest(parts: list[Part]) -> str:
    """A digest of exactly what a prompt contains: texts, media bytes and media types, in order."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.kind.encode())
        digest.update(b"\0")
        if part.text is not None:
            digest.update(part.text.encode("utf-8"))
        if part.data is not None:
            digest.update(hashlib.sha256(part.data).digest())
            digest.update((part.media_type or "").encode())
        digest.update(b"\1")
    return digest.hexdigest()


def request_hash(
    *,
    model: str,
    api_model: str,
    benchmark: str,
    dataset_revision: str,
    prompt_digest: str,
    decoding: Decoding,
) -> str:
    """What was sent, reduced to one hash: a stored record is reused only if this matches."""
    payload: dict[str, Any] = {
        "model": model,
        "api_model": api_model,
        "benchmark": benchmark,
        "dataset_revision": dataset_revision,
        "prompt": prompt_digest,
        "decoding": decoding.to_dict(),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
