"""The raw view of one call: every attempt from the record's ledger, the decoding, the request
body and the response as stored.

The record does not keep the request body (a body holds the prompt's media, megabytes per
call, and every record would carry it again). The body shown is rebuilt, "as built": the
sample's parts as the run's plan holds them (downscaled as sent) and the record's decoding,
through the model's own client's `request_body`, the function the batch path sends. The client
is made with a placeholder key, and a body never holds a key or a header anyway. Media in it
(base64 or data: URLs) is replaced by a note: the item view shows the prompt's media beside it.
The raw HTTP response body is not kept either: the response is what the record stores of it.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from evalfleet.core.record import Attempt, Record, usage_dict
from evalfleet.core.types import Part
from evalfleet.engine.prepare.request_bodies import BodyOf, body_builder
from evalfleet.engine.store.stored import StoredRun
from evalfleet.reports.report_media import Layout

AS_BUILT = (
    "as built: rebuilt now from the sample's parts and this decoding by the model's client "
    "(the record keeps no request body); media replaced by a note, shown above"
)
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_MEDIA_CHARS = 256  # a longer base64 string (or any data: URL) is media


class RequestBuilder:
    """Rebuilds request bodies for the models of one run, a client per model made once."""

    def __init__(self, run: StoredRun) -> None:
        self.run = run
        self.clients: dict[str, BodyOf] = {}
        self.problems: dict[str, str] = {}
        # a sample's epochs of one decoding ask the same body: built once while they come
        # (items come sample by sample), the cache emptied when it grows
        self.built: dict[tuple[Any, ...], tuple[Any, str]] = {}

    def body(
        self, model: str, layout: Layout | None, prompt: str, record: Record
    ) -> tuple[Any, str]:
        """(the body with media replaced by notes, a note on how it was made) or (None, why
        not). `layout`: the sample's parts as sent (None: the dataset could not be read again,
        the body is built from the prompt text alone and says so)."""
        key = (model, id(layout), prompt, record.request)
        found = self.built.get(key)
        if found is None:
            if len(self.built) >= 256:
                self.built.clear()
            found = self.built[key] = self._build(model, layout, prompt, record)
        return found

    def _build(
        self, model: str, layout: Layout | None, prompt: str, record: Record
    ) -> tuple[Any, str]:
        client = self._client(model)
        if client is None:
            return None, f"not rebuilt: {self.problems[model]}"
        parts, notes = stand_ins(layout, prompt)
        try:
            built = client(parts, record.request)
        except Exception as exc:  # noqa: BLE001 - a part this model refuses: say so, show the rest
            return None, f"not rebuilt: {type(exc).__name__}: {str(exc)[:200]}"
        note = AS_BUILT if layout is not None else AS_BUILT + "; media unknown (dataset unread)"
        return without_media(built, notes), note

    def _client(self, model: str) -> BodyOf | None:
        if model in self.clients or model in self.problems:
            return self.clients.get(model)
        try:
            client = body_builder(self.run.request, model)
        except Exception as exc:  # noqa: BLE001 - a model no longer configured here
            self.problems[model] = str(exc).splitlines()[0][:200] if str(exc) else repr(exc)
            return None
        self.clients[model] = client
        return client


def stand_ins(layout: Layout | None, prompt: str) -> tuple[list[Part], dict[str, str]]:
    """The parts to build a body from, each media part's bytes a marker, and the note that
    replaces each marker's encoding in the body."""
    if layout is None:
        return [Part.of_text(prompt)], {}
    parts: list[Part] = []
    notes: dict[str, str] = {}
    for number, (kind, text, media_type, size) in enumerate(layout):
        if kind == "text":
            parts.append(Part.of_text(text or ""))
            continue
        marker = f"evalfleet-media-{number}".encode()
        notes[base64.b64encode(marker).decode()] = (
            f"<{kind} {media_type}, {size:,} bytes: part {number + 1} of the prompt, shown above>"
        )
        parts.append(Part(kind=kind, data=marker, media_type=media_type))  # type: ignore[arg-type]
    return parts, notes


def without_media(value: Any, notes: dict[str, str]) -> Any:
    """The JSON with each media marker's encoding (base64, or a data: URL of it) replaced by
    its note; any other data: URL or long base64 run too, should a client add one."""
    if isinstance(value, dict):
        return {k: without_media(v, notes) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_media(v, notes) for v in value]
    if isinstance(value, bytes | bytearray):
        return notes.get(base64.b64encode(value).decode(), f"<media: {len(value)} bytes>")
    if isinstance(value, str):
        encoded = value.rsplit(",", 1)[-1] if value.startswith("data:") else value
        if encoded in notes:
            return notes[encoded]
        if value.startswith("data:") or (len(value) > _MEDIA_CHARS and _BASE64.match(value)):
            return f"<media: {len(value)} characters>"
    return value


def attempt_dict(attempt: Attempt) -> dict[str, Any]:
    usage, cost = attempt.usage, attempt.cost
    return {
        "number": attempt.number,
        "outcome": attempt.outcome,
        "at": attempt.at,
        "latency_s": attempt.latency_s,
        "status": attempt.status,
        "request_id": attempt.request_id,
        "error": attempt.message or None,
        "finish_reason": attempt.finish_reason,
        "usage": None if usage is None else usage_dict(usage),
        "cost_usd": None if cost is None else cost.total,
        "estimated": attempt.estimated,
    }


def raw_of(record: Record, body: Any, body_note: str) -> dict[str, Any]:
    """The raw view of one answer's call (`detail["raw"]`)."""
    usage = record.usage
    return {
        "call": {
            "provider": record.provider,
            "api_model": record.api_model,
            "model_reported": record.reported_version,
            "request_id": record.request_id,
            "call_id": record.call_id,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
            "batch": record.batch,
        },
        "attempts": [attempt_dict(a) for a in record.ledger],
        "decoding": record.request.to_dict(),
        "request": body,
        "request_note": body_note,
        # its text and reasoning are the item's `response` and `reasoning`, not kept twice
        "response": {
            "finish_reason": record.finish_reason,
            "usage": None if usage is None else usage_dict(usage),
            "cost_usd": record.cost_usd,
            "error": None
            if record.error is None
            else {
                "type": record.error.type,
                "status": record.error.status,
                "message": record.error.message,
                "request_id": record.error.request_id,
            },
        },
        "response_note": "as stored in the record (the HTTP body itself is not kept)",
    }
