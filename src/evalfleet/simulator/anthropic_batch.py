"""Anthropic Message Batches on the wire.

Routes (also under ``/anthropic``): ``POST /v1/messages/batches`` (``{"requests": [{"custom_id",
"params"}]}``), ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches`` (newest first;
``limit`` 1-1000 default 20, ``after_id``, ``before_id``; ``has_more``, ``first_id``,
``last_id``), ``POST /v1/messages/batches/{id}/cancel`` and
``GET /v1/messages/batches/{id}/results``, the ``results_url`` of an ended batch, which names
this server (scheme, host and prefix of the request that asked). Management calls are logged as
``anthropic.batches.{create,retrieve,list,cancel,results}``; lines as ``anthropic.batch``.

The create checks the custom ids (``^[a-zA-Z0-9_-]{1,64}$``, unique: else 400); the params are
checked when the line is answered, as upstream: a bad one is an ``errored`` result with an
``invalid_request_error``. ``processing_status``: ``in_progress``, ``canceling`` (the cancel
answer only), ``ended``. ``request_counts`` has every line under ``processing`` until the batch
ends, then ``succeeded``/``errored``/``canceled``/``expired``. Result lines
``{"custom_id", "result": {"type": "succeeded", "message": {...}}}`` (usage
``service_tier: "batch"``), ``errored`` (with ``error``), ``canceled``, ``expired``, in no
input order. Cancelling an ended batch returns it unchanged.

Message batches carry no user metadata. To find a batch whose create answer was lost, list
(newest first) the batches created in the window of the lost call -- ``created_at`` has
microseconds -- with the request count (the sum of ``request_counts``) of the submission, and
once one has ended, compare the custom_id set of its results with the submission's.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from evalfleet.simulator.anthropic_routes import Messages
from evalfleet.simulator.batches import (
    Batch,
    BatchKind,
    Line,
    bounded_int,
    jsonl,
    managed,
    read_json,
    shuffled,
)
from evalfleet.simulator.engine import json_response
from evalfleet.simulator.protocol import BadRequest, ErrorKind, Protocol

if TYPE_CHECKING:
    from evalfleet.simulator.engine import Simulator

MAX_REQUESTS = 100_000
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_MESSAGES = Messages()


class AnthropicBatches(BatchKind):
    provider = "anthropic"
    route = "anthropic.batch"

    def protocol(self, batch: Batch) -> tuple[Protocol, dict[str, str]]:
        return _MESSAGES, {}

    def decorate(self, body: dict[str, Any]) -> dict[str, Any]:
        body["usage"]["service_tier"] = "batch"
        return body


KIND = AnthropicBatches()


def rfc3339(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _error(kind: ErrorKind, message: str, rid: str) -> web.Response:
    status, body, headers = _MESSAGES.error(kind, message, rid)
    return json_response(status, body, headers)


def _unauthorized(rid: str) -> web.Response:
    return _error("unauthorized", "No API key provided.", rid)


def results_url(request: web.Request, batch: Batch) -> str:
    prefix = "/anthropic" if request.path.startswith("/anthropic/") else ""
    path = f"{prefix}/v1/messages/batches/{batch.id}/results"
    return f"{request.scheme}://{request.host}{path}"


def batch_object(batch: Batch, url: str, canceling: bool = False) -> dict[str, Any]:
    ended = batch.ended and not canceling
    counts = batch.counts()
    if ended:
        request_counts = {
            "processing": 0,
            "succeeded": counts["succeeded"],
            "errored": counts["errored"],
            "canceled": counts["cancelled"],
            "expired": counts["expired"],
        }
    else:
        request_counts = {"processing": len(batch.lines), "succeeded": 0, "errored": 0}
        request_counts.update(canceled=0, expired=0)
    status = "canceling" if canceling else ("ended" if ended else "in_progress")
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": request_counts,
        "ended_at": rfc3339(batch.ended_at) if ended else None,
        "created_at": rfc3339(batch.created_at),
        "expires_at": rfc3339(batch.expires_at),
        "archived_at": None,
        "cancel_initiated_at": rfc3339(batch.cancel_at),
        "results_url": url if ended else None,
    }


def result_line(line: Line) -> dict[str, Any]:
    if line.fate == "succeeded":
        result: dict[str, Any] = {"type": "succeeded", "message": line.body}
    elif line.fate == "errored":
        result = {"type": "errored", "error": line.body}
    else:
        result = {"type": "canceled" if line.fate == "cancelled" else "expired"}
    return {"custom_id": line.custom_id, "result": result}


def read_requests(body: Any) -> list[Line]:
    if not isinstance(body, dict) or not isinstance(body.get("requests"), list):
        raise BadRequest("requests: Field required (an array)")
    requests = body["requests"]
    if not requests or len(requests) > MAX_REQUESTS:
        raise BadRequest(f"requests: expected between 1 and {MAX_REQUESTS} items")
    lines: list[Line] = []
    seen: set[str] = set()
    for i, item in enumerate(requests):
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(custom_id, str) or not _CUSTOM_ID.fullmatch(custom_id):
            raise BadRequest(f"requests.{i}.custom_id: expected 1-64 of [a-zA-Z0-9_-]")
        if custom_id in seen:
            raise BadRequest(
                f"requests.{i}.custom_id: Duplicate custom_id {custom_id!r}; custom_id values "
                "must be unique within a batch"
            )
        params = item.get("params")
        if not isinstance(params, dict):
            raise BadRequest(f"requests.{i}.params: Field required")
        seen.add(custom_id)
        lines.append(Line(custom_id=custom_id, request=params))
    return lines


# -- handlers --------------------------------------------------------------------------------
async def create(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        try:
            lines = read_requests(read_json(await request.read()))
        except BadRequest as err:
            return _error("bad_request", err.message, rid)
        models = {line.request.get("model") for line in lines}
        model = models.pop() if len(models) == 1 else None
        info = {"model": model if isinstance(model, str) else None}
        batch = sim.batches.new_batch("anthropic", f"msgbatch_{secrets.token_hex(12)}", lines, info)
        entry.update(batch_id=batch.id, model=info["model"], lines=len(lines))
        body = batch_object(batch, results_url(request, batch))
        return json_response(200, body, _MESSAGES.headers(rid, None))

    return await managed(sim, request, "anthropic.batches.create", _MESSAGES, handle, _unauthorized)


def _no_batch(rid: str, batch_id: str) -> web.Response:
    return _error("not_found", f"Message batch {batch_id} not found.", rid)


async def retrieve(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        batch = KIND.find(sim, request.match_info["batch_id"], entry)
        if batch is None:
            return _no_batch(rid, entry["batch_id"])
        sim.batches.advance(batch, KIND, sim)
        body = batch_object(batch, results_url(request, batch))
        return json_response(200, body, _MESSAGES.headers(rid, None))

    return await managed(
        sim, request, "anthropic.batches.retrieve", _MESSAGES, handle, _unauthorized
    )


async def cancel(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        batch = KIND.find(sim, request.match_info["batch_id"], entry)
        if batch is None:
            return _no_batch(rid, entry["batch_id"])
        cancelled = KIND.cancel(sim, batch, entry)
        body = batch_object(batch, results_url(request, batch), canceling=cancelled)
        return json_response(200, body, _MESSAGES.headers(rid, None))

    return await managed(sim, request, "anthropic.batches.cancel", _MESSAGES, handle, _unauthorized)


async def results(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        batch = KIND.find(sim, request.match_info["batch_id"], entry)
        if batch is None:
            return _no_batch(rid, entry["batch_id"])
        sim.batches.advance(batch, KIND, sim)
        if not batch.ended:
            message = f"Message batch {batch.id} is still in progress; its results are not ready."
            return _error("bad_request", message, rid)
        data = jsonl(result_line(line) for line in shuffled(batch, batch.lines))
        headers = {"Content-Type": "application/x-jsonl", **_MESSAGES.headers(rid, None)}
        return web.Response(status=200, body=data, headers=headers)

    return await managed(
        sim, request, "anthropic.batches.results", _MESSAGES, handle, _unauthorized
    )


async def list_batches(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        query = request.query
        try:
            limit = bounded_int(query.get("limit"), 20, 1, 1000, "limit")
        except BadRequest as err:
            return _error("bad_request", err.message, rid)
        batches = sim.batches.newest_first("anthropic")
        ids = [b.id for b in batches]
        after, before = query.get("after_id"), query.get("before_id")
        if after is not None:
            rest = batches[ids.index(after) + 1 :] if after in ids else []
            page = rest[:limit]
        elif before is not None:
            rest = batches[: ids.index(before)] if before in ids else []
            page = rest[-limit:]
        else:
            rest = batches
            page = rest[:limit]
        for batch in page:
            sim.batches.advance(batch, KIND, sim)
        data = [batch_object(b, results_url(request, b)) for b in page]
        body = {
            "data": data,
            "has_more": len(rest) > limit,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
        return json_response(200, body, _MESSAGES.headers(rid, None))

    return await managed(sim, request, "anthropic.batches.list", _MESSAGES, handle, _unauthorized)
