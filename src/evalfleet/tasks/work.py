"""Work items: one answer (model, benchmark, sample, epoch) or one judgement of an answer,
with its decoding settings and the hash of exactly what is sent."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalfleet.core.types import Decoding, Part
from evalfleet.storage import layout
from evalfleet.storage.layout import ItemKey


@dataclass(frozen=True, slots=True)
class WorkItem:
    run_id: str
    key: ItemKey
    decoding: Decoding
    request_hash: str
    #: The driver needs the answer's text back (to judge it); otherwise only the outcome.
    return_response: bool = False
    #: For a judgement: the store key and text digest of the answer it grades.
    graded: tuple[str, str] | None = None
    #: Sent again after its worker was lost: its record may already be stored.
    recheck: bool = False

    @property
    def store_key(self) -> str:
        return layout.record_key(self.run_id, self.key, self.request_hash)

    @property
    def hash_prefix(self) -> str:
        return self.request_hash[: layout.HASH_CHARS]

    def failure_key(self, unix_ms: int) -> str:
        return layout.failure_key(self.run_id, self.key, self.request_hash, unix_ms)


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


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_hash(
    *,
    model: str,
    api_model: str,
    benchmark: str,
    dataset_revision: str,
    prompt_digest: str,
    decoding: Decoding,
    graded: str | None = None,
) -> str:
    """What was sent, reduced to one hash: a stored record is reused only if this matches.

    A judgement's hash also covers the digest of the answer it grades (`graded`), so a
    re-answered item is judged again and nothing else is.
    """
    payload = _payload(model, api_model, benchmark, dataset_revision, prompt_digest, decoding)
    if graded is not None:
        payload["graded"] = graded
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()


def _payload(
    model: str,
    api_model: str,
    benchmark: str,
    dataset_revision: str,
    prompt_digest: str,
    decoding: Decoding,
) -> dict[str, Any]:
    return {
        "model": model,
        "api_model": api_model,
        "benchmark": benchmark,
        "dataset_revision": dataset_revision,
        "prompt": prompt_digest,
        "decoding": decoding.to_dict(),
    }


def _canonical(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def answer_hash_parts(
    *, model: str, api_model: str, benchmark: str, dataset_revision: str, decoding: Decoding
) -> tuple[Any, bytes]:
    """`request_hash` of an answer, split around its prompt digest for the many samples of
    one (model, benchmark, epoch): the hash state after the JSON before the prompt (its keys
    sort first), and the JSON after it. The hash is the state copied, updated with the
    digest's JSON (`prompt_json`), then the tail: the same as `request_hash` in a fifth of
    the time (a plan of a million items spends most of its time here)."""
    probe = "\0"
    head = _canonical(_payload(model, api_model, benchmark, dataset_revision, probe, decoding))
    before, after = head.split(json.dumps(probe), 1)
    return hashlib.sha256(before.encode()), after.encode()


def prompt_json(prompt_digest: str) -> bytes:
    return json.dumps(prompt_digest).encode()


def answer_hasher(
    *, model: str, api_model: str, benchmark: str, dataset_revision: str, decoding: Decoding
) -> Callable[[str], str]:
    """`request_hash` of an answer as a function of its prompt digest alone
    (`answer_hash_parts`)."""
    start, tail = answer_hash_parts(
        model=model,
        api_model=api_model,
        benchmark=benchmark,
        dataset_revision=dataset_revision,
        decoding=decoding,
    )

    def hashed(prompt_digest: str) -> str:
        digest = start.copy()
        digest.update(prompt_json(prompt_digest))
        digest.update(tail)
        return digest.hexdigest()

    return hashed
