"""OpenAI Files and Batches on the wire.

Routes (also under ``/openai``): ``POST /v1/files`` (multipart: ``file``, ``purpose``),
``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``, ``POST /v1/batches`` (``input_file_id``,
``endpoint`` ``/v1/chat/completions`` or ``/v1/responses``, ``completion_window`` ``24h``,
``metadata``), ``GET /v1/batches/{id}``, ``GET /v1/batches`` (newest first, ``limit`` 1-100
default 20, ``after`` = the last id of the previous page) and ``POST /v1/batches/{id}/cancel``.
Management calls are logged as ``openai.files.{create,retrieve,content}`` and
``openai.batches.{create,retrieve,list,cancel}``; lines as ``openai.batch``.

The input file is checked when the batch is created: a line that is not JSON, lacks a
``custom_id`` (or repeats one), is not ``POST`` to the batch's endpoint, has no ``body.model``,
or names a second model makes the batch ``failed`` with ``errors.data`` (code, message, line,
param: upstream's shape; the codes are the simulator's own); a body the endpoint rejects is
answered with a 400 line instead.

Status: ``validating`` (the create answer), ``in_progress``, ``finalizing`` (all lines answered,
for ``finalize_s``), ``completed``; or ``expired``; or ``cancelling`` (the cancel answer) then
``cancelled``; ``failed`` for a rejected input file. ``request_counts.completed`` and ``failed``
count the answered lines as they are answered; cancelled and expired lines count in neither.

When the batch ends, the output file (``purpose: batch_output``) holds one line per success and
the error file one per failure, each ``{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error": null}``; cancelled and expired lines go to the error file as
``{"response": null, "error": {"code": "batch_expired" | "batch_cancelled", "message"}}``
(``batch_expired`` is upstream's; ``batch_cancelled`` the simulator's, by analogy). A file with
no line is not created (its id stays null). Lines are not in input order.
Cancelling an ended batch returns it unchanged.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any

from aiohttp import web

from evalfleet.simulator.batches import (
    Batch,
    BatchKind,
    BatchStore,
    Line,
    bounded_int,
    jsonl,
    managed,
    read_json,
    shuffled,
)
from evalfleet.simulator.engine import json_response
from evalfleet.simulator.openai_routes import ChatCompletions, Responses
from evalfleet.simulator.protocol import BadRequest, Protocol

if TYPE_CHECKING:
    from evalfleet.simulator.engine import Simulator

ENDPOINTS: dict[str, Protocol] = {
    "/v1/chat/completions": ChatCompletions(),
    "/v1/responses": Responses(),
}
UPLOAD_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data")
_AUTH = ChatCompletions()


class OpenAIBatches(BatchKind):
    provider = "openai"
    route = "openai.batch"

    def protocol(self, batch: Batch) -> tuple[Protocol, dict[str, str]]:
        return ENDPOINTS[batch.info["endpoint"]], {}

    def on_end(self, store: BatchStore, batch: Batch) -> None:
        ok: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for line in shuffled(batch, batch.lines):
            record = {"id": _line_id(batch, line), "custom_id": line.custom_id}
            if line.fate in ("succeeded", "errored"):
                response: dict[str, Any] = {
                    "status_code": line.status,
                    "request_id": line.request_id,
                    "body": line.body,
                }
                (ok if line.fate == "succeeded" else failed).append(
                    {**record, "response": response, "error": None}
                )
            else:
                code = f"batch_{line.fate}"
                message = (
                    "This request could not be executed before the completion window expired."
                    if line.fate == "expired"
                    else "This request was not executed because the batch was cancelled."
                )
                failed.append(
                    {**record, "response": None, "error": {"code": code, "message": message}}
                )
        for key, records, suffix in (
            ("output_file_id", ok, "output"),
            ("error_file_id", failed, "error"),
        ):
            if records:
                name = f"{batch.id}_{suffix}.jsonl"
                file = store.add_file(name, "batch_output", jsonl(records), batch.ended_at)
                batch.info[key] = file.id


KIND = OpenAIBatches()


def _line_id(batch: Batch, line: Line) -> str:
    return "batch_req_" + hashlib.sha256(f"{batch.id}\n{line.custom_id}".encode()).hexdigest()[:24]


def _error(
    status: int,
    message: str,
    rid: str,
    *,
    param: str | None = None,
    code: str | None = None,
    etype: str = "invalid_request_error",
) -> web.Response:
    body = {"error": {"message": message, "type": etype, "param": param, "code": code}}
    return json_response(status, body, {"x-request-id": rid})


def _unauthorized(rid: str) -> web.Response:
    message = "No API key provided. Pass it in the Authorization header."
    return _error(401, message, rid, code="invalid_api_key")


def _ts(value: float | None) -> int | None:
    return None if value is None else int(value)


def file_object(file: Any) -> dict[str, Any]:
    return {
        "id": file.id,
        "object": "file",
        "bytes": len(file.data),
        "created_at": int(file.created_at),
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
        "status_details": None,
        "expires_at": None,
    }


def batch_object(batch: Batch, status: str | None = None) -> dict[str, Any]:
    """The Batch resource; ``status`` overrides the derived one (the create and cancel
    answers)."""
    if status is None:
        status = batch.end_state or ("finalizing" if batch.finalizing() else "in_progress")
    counts = batch.counts()
    started = status not in ("validating", "failed")
    input_tokens, output_tokens, reasoning = batch.usage()
    info = batch.info
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": info["endpoint"],
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "input_file_id": info["input_file_id"],
        "completion_window": info["completion_window"],
        "status": status,
        "output_file_id": info.get("output_file_id"),
        "error_file_id": info.get("error_file_id"),
        "created_at": int(batch.created_at),
        "in_progress_at": int(batch.created_at) if started else None,
        "expires_at": int(batch.expires_at),
        "finalizing_at": _ts(batch.all_done_at) if status in ("finalizing", "completed") else None,
        "completed_at": _ts(batch.ended_at) if status == "completed" else None,
        "failed_at": _ts(batch.ended_at) if status == "failed" else None,
        "expired_at": _ts(batch.ended_at) if status == "expired" else None,
        "cancelling_at": _ts(batch.cancel_at),
        "cancelled_at": _ts(batch.ended_at) if status == "cancelled" else None,
        "request_counts": {
            "total": len(batch.lines),
            "completed": counts["succeeded"],
            "failed": counts["errored"],
        },
        "metadata": info.get("metadata"),
        "model": info.get("model"),
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def _check_metadata(metadata: Any) -> dict[str, str] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or len(metadata) > 16:
        raise BadRequest("metadata: expected an object of at most 16 string pairs", "metadata")
    for key, value in metadata.items():
        if not isinstance(value, str) or len(key) > 64 or len(value) > 512:
            raise BadRequest(
                "metadata: keys are strings of at most 64 characters, values strings of at "
                "most 512",
                "metadata",
            )
    return metadata


def read_input_file(
    data: bytes, endpoint: str
) -> tuple[list[Line], list[dict[str, Any]], str | None]:
    """The lines of a batch input file, the validation errors, and the model."""
    lines: list[Line] = []
    errors: list[dict[str, Any]] = []
    models: list[str] = []
    seen: set[str] = set()

    def fail(code: str, message: str, number: int | None, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "param": param, "line": number})

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        fail("invalid_file_format", "The input file is not UTF-8 encoded JSONL.", None)
        return [], errors, None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            fail("invalid_json_line", "This line is not parseable as valid JSON.", number)
            continue
        custom_id = record.get("custom_id")
        body = record.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            fail("missing_required_parameter", "custom_id is required.", number, "custom_id")
        elif custom_id in seen:
            fail(
                "duplicate_custom_id",
                f"The custom_id {custom_id!r} is used more than once in this batch.",
                number,
                "custom_id",
            )
        elif record.get("method") != "POST":
            fail("invalid_method", "Only POST requests are supported.", number, "method")
        elif record.get("url") != endpoint:
            fail(
                "mismatched_endpoint",
                f"The url {record.get('url')!r} does not match the batch endpoint {endpoint}.",
                number,
                "url",
            )
        elif not isinstance(body, dict) or not isinstance(body.get("model"), str):
            fail("missing_required_parameter", "body.model is required.", number, "body.model")
        else:
            seen.add(custom_id)
            if body["model"] not in models:
                models.append(body["model"])
                if len(models) == 2:
                    fail(
                        "model_mismatch",
                        "All requests of a batch must use the same model; this line uses "
                        f"{body['model']!r}, earlier lines {models[0]!r}.",
                        number,
                        "body.model",
                    )
            lines.append(Line(custom_id=custom_id, request=body))
    if not lines and not errors:
        fail("empty_file", "The batch input file has no requests.", None)
    return lines, errors, models[0] if models else None


# -- handlers --------------------------------------------------------------------------------
async def files_create(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        if not request.content_type.startswith("multipart/"):
            return _error(400, "Expected a multipart/form-data upload.", rid)
        form = await request.post()
        purpose, upload = form.get("purpose"), form.get("file")
        if purpose not in UPLOAD_PURPOSES:
            message = f"purpose: expected one of {', '.join(UPLOAD_PURPOSES)}"
            return _error(400, message, rid, param="purpose")
        if not isinstance(upload, web.FileField):
            return _error(400, "file: a file part is required", rid, param="file")
        file = sim.batches.add_file(upload.filename or "upload", str(purpose), upload.file.read())
        entry["file_id"] = file.id
        return json_response(200, file_object(file), {"x-request-id": rid})

    return await managed(sim, request, "openai.files.create", _AUTH, handle, _unauthorized)


async def files_retrieve(sim: Simulator, request: web.Request) -> web.Response:
    return await _file(sim, request, "openai.files.retrieve", content=False)


async def files_content(sim: Simulator, request: web.Request) -> web.Response:
    return await _file(sim, request, "openai.files.content", content=True)


async def _file(sim: Simulator, request: web.Request, route: str, content: bool) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        file_id = entry["file_id"] = request.match_info["file_id"]
        file = sim.batches.files.get(file_id)
        if file is None:
            return _error(404, f"No such File object: {file_id}", rid, param="id")
        if content:
            headers = {"Content-Type": "application/octet-stream", "x-request-id": rid}
            return web.Response(status=200, body=file.data, headers=headers)
        return json_response(200, file_object(file), {"x-request-id": rid})

    return await managed(sim, request, route, _AUTH, handle, _unauthorized)


async def batches_create(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        try:
            body = read_json(await request.read())
            if not isinstance(body, dict):
                raise BadRequest("the request body must be a JSON object")
            endpoint = body.get("endpoint")
            if endpoint not in ENDPOINTS:
                raise BadRequest(
                    f"endpoint: the simulator supports {' and '.join(ENDPOINTS)}", "endpoint"
                )
            if body.get("completion_window") != "24h":
                raise BadRequest("completion_window: only '24h' is supported", "completion_window")
            metadata = _check_metadata(body.get("metadata"))
            file_id = body.get("input_file_id")
            file = sim.batches.files.get(file_id) if isinstance(file_id, str) else None
            if file is None:
                return _error(404, f"No such File object: {file_id}", rid, param="input_file_id")
            if file.purpose != "batch":
                raise BadRequest(
                    f"input_file_id: the file has purpose {file.purpose!r}, not 'batch'",
                    "input_file_id",
                )
        except BadRequest as err:
            return _error(400, err.message, rid, param=err.param)
        lines, errors, model = read_input_file(file.data, endpoint)
        if errors:
            lines = []  # a failed batch runs nothing: request_counts.total is 0
        info = {
            "endpoint": endpoint,
            "input_file_id": file.id,
            "completion_window": "24h",
            "metadata": metadata,
            "model": model,
        }
        batch_id = f"batch_{secrets.token_hex(12)}"
        batch = sim.batches.new_batch("openai", batch_id, lines, info, errors or None)
        entry.update(batch_id=batch.id, model=model, lines=len(lines))
        status = "failed" if batch.errors else "validating"
        return json_response(200, batch_object(batch, status), {"x-request-id": rid})

    return await managed(sim, request, "openai.batches.create", _AUTH, handle, _unauthorized)


def _no_batch(rid: str, batch_id: str) -> web.Response:
    return _error(404, f"No batch found with id '{batch_id}'.", rid, param="batch_id")


async def batches_retrieve(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        batch = KIND.find(sim, request.match_info["batch_id"], entry)
        if batch is None:
            return _no_batch(rid, entry["batch_id"])
        sim.batches.advance(batch, KIND, sim)
        return json_response(200, batch_object(batch), {"x-request-id": rid})

    return await managed(sim, request, "openai.batches.retrieve", _AUTH, handle, _unauthorized)


async def batches_cancel(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        batch = KIND.find(sim, request.match_info["batch_id"], entry)
        if batch is None:
            return _no_batch(rid, entry["batch_id"])
        cancelled = KIND.cancel(sim, batch, entry)
        status = "cancelling" if cancelled else None
        return json_response(200, batch_object(batch, status), {"x-request-id": rid})

    return await managed(sim, request, "openai.batches.cancel", _AUTH, handle, _unauthorized)


async def batches_list(sim: Simulator, request: web.Request) -> web.Response:
    async def handle(rid: str, entry: dict[str, Any]) -> web.Response:
        try:
            limit = bounded_int(request.query.get("limit"), 20, 1, 100, "limit")
        except BadRequest as err:
            return _error(400, err.message, rid, param=err.param)
        batches = sim.batches.newest_first("openai")
        after = request.query.get("after")
        if after is not None:
            ids = [b.id for b in batches]
            batches = batches[ids.index(after) + 1 :] if after in ids else []
        page = batches[:limit]
        for batch in page:
            sim.batches.advance(batch, KIND, sim)
        data = [batch_object(b) for b in page]
        body = {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": len(batches) > limit,
        }
        return json_response(200, body, {"x-request-id": rid})

    return await managed(sim, request, "openai.batches.list", _AUTH, handle, _unauthorized)
