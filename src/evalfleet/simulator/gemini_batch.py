"""Gemini batch jobs (inline requests) on the wire, as google-genai 3.3.0 reads them.

Routes (under ``/v1`` and ``/v1beta``, also with the ``/gemini`` prefix):
``POST models/{model}:batchGenerateContent`` with
``{"batch": {"displayName", "inputConfig": {"requests": {"requests": [{"request": {...},
"metadata": {"key": ...}}]}}}}``, ``GET batches/{id}``, ``GET batches`` (newest first;
``pageSize`` 1-1000 default 50, ``pageToken``; ``{"operations": [...], "nextPageToken"}``) and
``POST batches/{id}:cancel`` (answers ``{}``). A file source (``inputConfig.fileName``) is
refused with 400: the simulator takes inline requests only. Management calls are logged as
``gemini.batches.{create,retrieve,list,cancel}``; lines as ``gemini.batch`` (custom id: the
metadata ``key``, else the line number); their ``batch_id`` is the name, ``batches/{id}``.

Each answer is an operation ``{"name": "batches/{id}", "metadata": {"@type", "name", "model",
"displayName", "createTime", "updateTime", "endTime", "state", "batchStats", "output"},
"done": true, "response": {...}}``; the SDK reads ``name`` and ``metadata`` (its
``BatchJob.dest.inlined_responses`` comes from ``metadata.output.inlinedResponses
.inlinedResponses``). ``state``: ``BATCH_STATE_PENDING`` (the create answer),
``BATCH_STATE_RUNNING``, then ``BATCH_STATE_SUCCEEDED`` (also with failed lines),
``BATCH_STATE_CANCELLED`` or ``BATCH_STATE_EXPIRED``; the SDK maps them to ``JOB_STATE_*``.
Once ended, the output holds one entry per request in input order: ``{"response": {...},
"metadata"}`` or ``{"error": {"code", "message"}, "metadata"}`` with a google.rpc code (13
INTERNAL for a failed line, 3 INVALID_ARGUMENT for a bad request, 1 CANCELLED, 4
DEADLINE_EXCEEDED for an expired one). Gemini batches have no user metadata; the display name is
where a client keeps its own (a run id, a submission token). Cancelling an ended batch is a
no-op.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from aiohttp import web

from evalfleet.simulator.anthropic_batch import rfc3339
from evalfleet.simulator.batches import Batch, BatchKind, Line, bounded_int, managed, read_json
from evalfleet.simulator.engine import json_response
from evalfleet.simulator.gemini_routes import GenerateContent, not_found
from evalfleet.simulator.protocol import BadRequest, Protocol

if TYPE_CHECKING:
    from evalfleet.simulator.engine import Simulator

_GEMINI = GenerateContent()
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_STATES = {
    "completed": "BATCH_STATE_SUCCEEDED",
    "expired": "BATCH_STATE_EXPIRED",
    "cancelled": "BATCH_STATE_CANCELLED",
    "failed": "BATCH_STATE_FAILED",
}
_RPC_CODES = {400: 3, 404: 5, 429: 8, 500: 13, 503: 14, 504: 4}


class GeminiBatches(BatchKind):
    provider = "gemini"
    route = "gemini.batch"

    def protocol(self, batch: Batch) -> tuple[Protocol, dict[str, str]]:
        return _GEMINI, {"model": batch.info["model"]}

    def public_id(self, batch_id: str) -> str:
        return f"batches/{batch_id}"


KIND = GeminiBatches()


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _error(status_kind: str, message: str, rid: str) -> web.Response:
    status, body, headers = _GEMINI.error(status_kind, message, rid)  # type: ignore[arg-type]
    return json_response(status, body, headers)


def _unauthorized(rid: str) -> web.Response:
    return _error("unauthorized", "API key not provided.", rid)


def inlined_response(line: Line) -> dict[str, Any]:
    if line.fate == "succeeded":
        out: dict[str, Any] = {"response": line.body}
    elif line.fate == "errored":
        body = line.body or {}
        message = body.get("error", {}).get("message", "Internal error encountered.")
        out = {"error": {"code": _RPC_CODES.get(line.status or 500, 13), "message": message}}
    elif line.fate == "cancelled":
        out = {"error": {"code": 1, "message": "The request was cancelled before it ran."}}
    else:
        out = {"error": {"code": 4, "message": "The batch expired before the request ran."}}
    if line.meta is not None:
        out["metadata"] = line.meta
    return out


def operation(batch: Batch, state: str | None = None) -> dict[str, Any]:
    """The batch as a long-running operation; ``state`` overrides the derived one."""
    name = f"batches/{batch.id}"
    if state is None:
        state = _STATES.get(batch.end_state or "", "BATCH_STATE_RUNNING")
    counts = batch.counts()
    done_times = [line.done_at for line in batch.lines if line.done_at is not None]
    updated = batch.ended_at if batch.ended else max(done_times, default=batch.created_at)
    metadata: dict[str, Any] = {
        "@type": _TYPE + "GenerateContentBatch",
        "name": name,
        "model": f"models/{batch.info['model']}",
        "createTime": rfc3339(batch.created_at),
        "updateTime": rfc3339(updated),
        "state": state,
        "batchStats": {
            "requestCount": str(len(batch.lines)),
            "successfulRequestCount": str(counts["succeeded"]),
            "failedRequestCount": str(counts["errored"]),
            "pendingRequestCount": str(counts["pending"]),
        },
    }
    if batch.info.get("display_name") is not None:
        metadata["displayName"] = batch.info["display_name"]
    op: dict[str, Any] = {"name": name, "metadata": metadata}
    if batch.ended and state in _STATES.values():
        metadata["endTime"] = rfc3339(batch.ended_at)
        output = {
            "inlinedResponses": {"inlinedResponses": [inlined_response(x) for x in batch.lines]}
        }
        metadata["output"] = output
        op["done"] = True
        op["response"] = {"@type": _TYPE + "GenerateContentBatchOutput", **output}
    return op


def read_batch(body: Any) -> tuple[str | None, list[Line]]:
    """The display name and the lines of a batchGenerateContent body."""
    batch = body.get("batch") if isinstance(body, dict) else None
    if not isinstance(batch, dict):
        raise BadRequest("* BatchGenerateContentRequest.batch: batch is not specified")
    config = _get(batch, "inputConfig", "input_config")
    if not isinstance(config, dict):
        raise BadRequest("* GenerateContentBatch.input_config: input_config is not specified")
    if _get(config, "fileName", "file_name") is not None:
        raise BadRequest("input_config.file_name: the simulator takes inline requests only")
    holder = config.get("requests")
    requests = holder.get("requests") if isinstance(holder, dict) else None
    if not isinstance(requests, list) or not requests:
        raise BadRequest("* InputConfig.requests.requests: expected a non-empty list")
    lines = []
    for i, item in enumerate(requests):
        inner = item.get("request") if isinstance(item, dict) else None
        if not isinstance(inner, dict):
            raise BadRequest(f"* InlinedRequests.requests[{i}].request: expected an object")
        meta = item.get("metadata")
        key = meta.get("key") if isinstance(meta, dict) else None
        custom_id = str(key) if key is not None else str(i)
        lines.append(Line(custom_id=custom_id, request=inner, meta=meta))
    name = _get(batch, "displayName", "display_name")
    return (name if isinstance(name, str) else None), lines


# -- handlers --------------------------------------------------------------------------------
async def create(sim: Simulator, request: web.Request, model: str) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        entry["model"] = model
        try:
            display_name, lines = read_batch(read_json(await request.read()))
        except BadRequest as err:
            return _error("bad_request", err.message, rid)
        info = {"model": model, "display_name": display_name}
        batch = sim.batches.new_batch("gemini", secrets.token_hex(10), lines, info)
        entry.update(batch_id=KIND.public_id(batch.id), lines=len(lines))
        return json_response(200, operation(batch, "BATCH_STATE_PENDING"))

    return await managed(sim, request, "gemini.batches.create", _GEMINI, handle, _unauthorized)


async def batch_action(sim: Simulator, request: web.Request) -> web.Response:
    """GET batches/{id} and POST batches/{id}:cancel."""
    batch_id, _, action = request.match_info["name"].partition(":")
    cancel = request.method == "POST"
    route = "gemini.batches.cancel" if cancel else "gemini.batches.retrieve"

    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        if action != ("cancel" if cancel else ""):
            status, body, headers = not_found(f"Method not found: batches/{batch_id}:{action}")
            return json_response(status, body, headers)
        batch = KIND.find(sim, batch_id, entry)
        if batch is None:
            status, body, headers = not_found(f"Batch batches/{batch_id} not found.")
            return json_response(status, body, headers)
        if cancel:
            KIND.cancel(sim, batch, entry)
            return json_response(200, {})
        sim.batches.advance(batch, KIND, sim)
        return json_response(200, operation(batch))

    return await managed(sim, request, route, _GEMINI, handle, _unauthorized)


async def list_batches(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        try:
            size = bounded_int(request.query.get("pageSize"), 50, 1, 1000, "pageSize")
        except BadRequest as err:
            return _error("bad_request", err.message, rid)
        batches = sim.batches.newest_first("gemini")
        token = request.query.get("pageToken")
        if token:
            ids = [b.id for b in batches]
            if token not in ids:
                return _error("bad_request", "Invalid page token.", rid)
            batches = batches[ids.index(token) + 1 :]
        page = batches[:size]
        for batch in page:
            sim.batches.advance(batch, KIND, sim)
        body: dict[str, Any] = {"operations": [operation(b) for b in page]}
        if len(batches) > size:
            body["nextPageToken"] = page[-1].id
        return json_response(200, body)

    return await managed(sim, request, "gemini.batches.list", _GEMINI, handle, _unauthorized)
