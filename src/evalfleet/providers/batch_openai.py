"""OpenAI Files + Batches (`/v1/chat/completions` or `/v1/responses`) through the official
async SDK, its retries off.

The payload is the JSONL input file: one line per request,
`{"custom_id", "method": "POST", "url": endpoint, "body": <the online call's body>}`, compact
JSON, UTF-8. `submit` uploads it (`files.create`, purpose "batch") and creates the batch with
`completion_window="24h"` and `metadata={"evalfleet_job": tag}`.

Results come from the output file (answered lines, HTTP 200) and the error file (lines
answered with an HTTP error, and lines never run: `batch_expired`, `batch_cancelled`). A batch
that failed validation as a whole has neither: its input file is read back and each line gets
an error (see `OpenAIBatchClient.results`).

`find` lists batches newest first and matches `metadata.evalfleet_job`: a batch that was
created is found for certain, whatever its state, as long as it is listed (OpenAI keeps
batches listed; `created_at` is in whole seconds, so the window starts at the second of
`created_after`). An upload whose batch was never created leaves only a file, which `find`
does not report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from evalfleet.providers import openai_chat, openai_responses
from evalfleet.providers.batch import (
    BatchClient,
    BatchInputError,
    BatchLine,
    BatchNotEnded,
    BatchStatus,
    LineResult,
    check_lines,
    check_size,
    counts,
    never_run,
    tag_token,
)
from evalfleet.providers.openai_errors import kind_for_status, map_openai_error
from evalfleet.providers.openai_sdk import openai_client
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError

ENDPOINTS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
METADATA_KEY = "evalfleet_job"
ENDED = ("completed", "failed", "expired", "cancelled")
# Whole-batch validation errors that go away with time (the organisation's queue is full).
_QUEUE_CODES = ("token_limit_exceeded", "rate_limit_exceeded", "request_limit_exceeded")


def _dumps(record: Any) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class OpenAIBatchClient(BatchClient):
    max_lines = 50_000  # requests per batch
    max_bytes = 200_000_000  # "200 MB" per input file (decimal: the stricter reading)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        if config.api not in ENDPOINTS:
            raise ValueError(f"{config.id}: api {config.api!r} has no OpenAI batch endpoint")
        self.endpoint = ENDPOINTS[config.api]
        self._module: ModuleType = openai_chat if config.api == "chat" else openai_responses
        self._client = openai_client(config, api_key)

    # -- building ------------------------------------------------------------------------------
    def line_record(self, line: BatchLine) -> dict[str, Any]:
        """One input-file line: the online call's body under the line's custom id."""
        body = self._module.request_body(self.config, line.parts, line.decoding)
        return {"custom_id": line.custom_id, "method": "POST", "url": self.endpoint, "body": body}

    def payload(self, lines: Sequence[BatchLine], tag: str) -> bytes:
        """The input file uploaded by `submit` (the tag goes in the batch's metadata, not in
        the file)."""
        _check_tag(tag)
        check_lines(lines, self.max_lines)
        data = b"".join(_dumps(self.line_record(line)) + b"\n" for line in lines)
        return check_size(data, self.max_bytes)

    # -- calls ---------------------------------------------------------------------------------
    async def submit(self, lines: Sequence[BatchLine], tag: str) -> str:
        data = self.payload(lines, tag)
        name = f"evalfleet-{tag_token(tag)}.jsonl"
        try:
            file = await self._client.files.create(
                file=(name, data, "application/jsonl"), purpose="batch"
            )
            batch = await self._client.batches.create(
                input_file_id=file.id,
                endpoint=self.endpoint,  # type: ignore[arg-type]
                completion_window="24h",
                metadata={METADATA_KEY: tag},
            )
        except Exception as exc:
            raise map_openai_error(exc) from exc
        return batch.id

    async def _retrieve(self, provider_id: str) -> Any:
        try:
            return await self._client.batches.retrieve(provider_id)
        except Exception as exc:
            raise map_openai_error(exc) from exc

    async def status(self, provider_id: str) -> BatchStatus:
        return _status(await self._retrieve(provider_id))

    async def results(self, provider_id: str) -> list[LineResult]:
        """One result per line of the output and error files. A batch that failed validation
        gets one per input line instead: a line the validation named -> bad_request (terminal),
        the others -> server_error (retryable: they were never run), every line ->
        rate_limited when the organisation's queue was full (`token_limit_exceeded`), and
        bad_request for any other whole-file error."""
        batch = await self._retrieve(provider_id)
        if batch.status not in ENDED:
            raise BatchNotEnded(f"batch {provider_id} is {batch.status}, not ended")
        if batch.status == "failed":
            return await self._failed(batch)
        out: list[LineResult] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                out.extend(self._line_result(r, provider_id) for r in await self._jsonl(file_id))
        return out

    async def find(
        self, tag: str, created_after: float, expected_lines: int | None = None
    ) -> str | None:
        """The newest batch with `metadata.evalfleet_job == tag` created in the window, in any
        state (`expected_lines` is not needed: the metadata is certain)."""
        floor = math.floor(created_after)
        try:
            async for batch in self._client.batches.list(limit=100):
                if batch.created_at < floor:
                    break  # newest first: the rest are older still
                if (batch.metadata or {}).get(METADATA_KEY) == tag:
                    return batch.id
        except Exception as exc:
            raise map_openai_error(exc) from exc
        return None

    async def cancel(self, provider_id: str) -> None:
        try:
            await self._client.batches.cancel(provider_id)
        except Exception as exc:
            error = map_openai_error(exc)
            refused = error.kind in (ErrorKind.BAD_REQUEST, ErrorKind.SERVER_ERROR)
            if refused and (await self.status(provider_id)).ended:
                return  # upstream refuses to cancel an ended batch: nothing to do then
            raise error from exc

    async def aclose(self) -> None:
        await self._client.close()

    # -- reading -------------------------------------------------------------------------------
    async def _jsonl(self, file_id: str) -> list[dict[str, Any]]:
        try:
            content = await self._client.files.content(file_id)
        except Exception as exc:
            raise map_openai_error(exc) from exc
        records = []
        for raw in content.text.splitlines():
            if raw.strip():
                try:
                    records.append(json.loads(raw))
                except ValueError as exc:
                    raise ProviderError(
                        ErrorKind.MALFORMED_RESPONSE,
                        f"file {file_id}: a line is not JSON: {exc}",
                    ) from exc
        return records

    def _line_result(self, record: dict[str, Any], provider_id: str) -> LineResult:
        custom_id = str(record.get("custom_id"))
        response = record.get("response")
        if not isinstance(response, dict):
            given = record.get("error")
            error: dict[str, Any] = given if isinstance(given, dict) else {}
            code = str(error.get("code") or "")
            if code == "batch_expired":
                return never_run(custom_id, "expired")
            if code in ("batch_cancelled", "batch_canceled"):
                return never_run(custom_id, "cancelled")
            message = f"batch line error {code or 'without a code'}: {error.get('message')}"
            return LineResult(custom_id, error=ProviderError(ErrorKind.SERVER_ERROR, message))
        status = response.get("status_code")
        request_id = response.get("request_id")
        body = response.get("body")
        if status == 200:
            try:
                result = self._module.response_from_body(body, request_id)
            except ProviderError as error:
                return LineResult(custom_id, error=error)
            result.extra["batch_id"] = provider_id
            return LineResult(custom_id, response=result)
        return LineResult(custom_id, error=_http_error(status, body, request_id))

    async def _failed(self, batch: Any) -> list[LineResult]:
        errors = list(batch.errors.data or ()) if batch.errors is not None else []
        by_line = {e.line: e for e in errors if e.line is not None}
        whole = [e for e in errors if e.line is None]
        summary = "; ".join(f"{e.code}: {e.message}" for e in errors) or "no reason given"
        out = []
        for number, record in enumerate(await self._jsonl(batch.input_file_id), start=1):
            custom_id = str(record.get("custom_id"))
            if number in by_line:
                e = by_line[number]
                kind, message = ErrorKind.BAD_REQUEST, f"batch failed validation: {e.code}: "
                message += str(e.message)
            elif whole:
                queue = any(e.code in _QUEUE_CODES for e in whole)
                kind = ErrorKind.RATE_LIMITED if queue else ErrorKind.BAD_REQUEST
                message = f"batch failed validation: {summary}"
            else:
                kind = ErrorKind.SERVER_ERROR
                message = f"batch failed validation at other lines, not run: {summary}"
            out.append(LineResult(custom_id, error=ProviderError(kind, message)))
        return out


def _check_tag(tag: str) -> None:
    tag_token(tag)  # not empty
    if len(tag) > 512:
        raise BatchInputError("an OpenAI batch tag (a metadata value) has at most 512 characters")


def _http_error(status: Any, body: Any, request_id: str | None) -> ProviderError:
    """A line answered with an HTTP error: the kind the online call would get."""
    status = int(status) if isinstance(status, int) else 500
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return ProviderError(
        kind_for_status(status, code if isinstance(code, str) else None),
        f"Error code: {status} - {body}",
        status=status,
        request_id=request_id,
    )


def _status(batch: Any) -> BatchStatus:
    rc = batch.request_counts
    total = rc.total if rc is not None else 0
    done = rc.completed if rc is not None else 0
    failed = rc.failed if rc is not None else 0
    rest = max(0, total - done - failed)
    ended = batch.status in ENDED
    given: dict[str, int] = {"total": total, "succeeded": done, "errored": failed}
    if not ended:
        given["processing"] = rest
    elif batch.status in ("expired", "cancelled"):
        given[batch.status] = rest
    message = ""
    if batch.errors is not None and batch.errors.data:
        message = "; ".join(
            f"line {e.line}: {e.code}: {e.message}" if e.line else f"{e.code}: {e.message}"
            for e in batch.errors.data
        )
    return BatchStatus(
        provider_id=batch.id,
        state="ended" if ended else "in_progress",
        detail=batch.status,
        counts=counts(**given),
        message=message,
    )
