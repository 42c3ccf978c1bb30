"""Gemini batch jobs with inline requests (`models/{model}:batchGenerateContent`) through the
official google-genai client (v1beta pinned, no retry options, an explicit timeout).

The payload is the create body
`{"batch": {"displayName": tag, "inputConfig": {"requests": {"requests": [{"request":
<the online generateContent body>, "metadata": {"key": custom_id}}]}}}}`, serialised as the SDK
serialises every request body (`json.dumps` with its defaults), and sent through the SDK's API
client as it is. (`batches.create` would rebuild each request with its own converter, which
adds the model to every request: not the online body.) Status, listing, results and cancel go
through `client.aio.batches`, except that `status` reads the job once through the API client
too, for its `batchStats` (the SDK's `BatchJob` leaves them out for the Gemini API).

The tag is the display name, so `find` identifies a job for certain in any state: it lists
jobs newest first and matches `display_name == tag`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
from evalfleet.providers.google_errors import map_google_error, map_rpc_error
from evalfleet.providers.google_genai import (
    from_generate_response,
    genai_client,
    request_body,
    request_params,
)
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError

# BATCH_STATE_* (the wire) and JOB_STATE_* (the SDK) -> how the job ended
_ENDS = {
    "SUCCEEDED": "completed",
    "PARTIALLY_SUCCEEDED": "completed",
    "FAILED": "failed",
    "CANCELLED": "cancelled",
    "EXPIRED": "expired",
}
_RPC_CANCELLED, _RPC_DEADLINE_EXCEEDED = 1, 4


def _state_name(state: Any) -> str:
    """ "BATCH_STATE_RUNNING" / JobState.JOB_STATE_RUNNING -> "RUNNING"."""
    name = str(getattr(state, "value", state) or "UNSPECIFIED")
    for prefix in ("BATCH_STATE_", "JOB_STATE_"):
        name = name.removeprefix(prefix)
    return name


class GoogleBatchClient(BatchClient):
    # Inline requests have no documented count limit, only the size one; this bound never
    # binds before the size does (every line is far over 100 bytes).
    max_lines = 200_000
    max_bytes = 20_000_000 - 1  # inline requests "under 20 MB" in total

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        self._genai = genai_client(config, api_key)

    def _body(self, lines: Sequence[BatchLine], tag: str) -> dict[str, Any]:
        tag_token(tag)  # not empty
        if len(tag) > 512:
            raise BatchInputError(
                "a Gemini batch tag (its display name) has at most 512 characters"
            )
        check_lines(lines, self.max_lines)
        api_client = self._genai._api_client
        requests = [
            {
                "request": request_body(
                    api_client, request_params(self.config, line.parts, line.decoding)
                ),
                "metadata": {"key": line.custom_id},
            }
            for line in lines
        ]
        return {
            "batch": {
                "displayName": tag,
                "inputConfig": {"requests": {"requests": requests}},
            }
        }

    def payload(self, lines: Sequence[BatchLine], tag: str) -> bytes:
        """The create body `submit` sends, the tag as its display name."""
        data = json.dumps(self._body(lines, tag)).encode("utf-8")
        return check_size(data, self.max_bytes)

    async def submit(self, lines: Sequence[BatchLine], tag: str) -> str:
        body = self._body(lines, tag)
        check_size(json.dumps(body).encode("utf-8"), self.max_bytes)
        path = f"models/{self.config.api_model}:batchGenerateContent"
        try:
            # The SDK sends json.dumps(body): the payload's bytes.
            answer = await self._genai.aio._api_client.async_request("post", path, body)
        except Exception as exc:
            raise map_google_error(exc) from exc
        try:
            return str(json.loads(answer.body or "")["name"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderError(
                ErrorKind.MALFORMED_RESPONSE,
                f"batch create answered without a name: {str(answer.body)[:300]}",
                status=200,
            ) from exc

    async def status(self, provider_id: str) -> BatchStatus:
        try:
            answer = await self._genai.aio._api_client.async_request("get", provider_id, {})
            operation = json.loads(answer.body or "")
        except ValueError as exc:
            raise ProviderError(
                ErrorKind.MALFORMED_RESPONSE, f"batch {provider_id}: malformed answer: {exc}"
            ) from exc
        except Exception as exc:
            raise map_google_error(exc) from exc
        return _status(provider_id, operation)

    async def results(self, provider_id: str) -> list[LineResult]:
        """One result per inline response, in input order. A job that failed as a whole has
        no responses: the list is empty and `status(...).message` says why."""
        try:
            job = await self._genai.aio.batches.get(name=provider_id)
        except Exception as exc:
            raise map_google_error(exc) from exc
        end = _ENDS.get(_state_name(job.state))
        if end is None:
            raise BatchNotEnded(f"batch {provider_id} is {_state_name(job.state).lower()}")
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        return [_line_result(i, r, end, provider_id) for i, r in enumerate(responses)]

    async def find(
        self, tag: str, created_after: float, expected_lines: int | None = None
    ) -> str | None:
        """The newest job whose display name is `tag`, created at or after `created_after`,
        in any state (`expected_lines` is not needed: the display name is certain)."""
        try:
            pager = await self._genai.aio.batches.list(config={"page_size": 100})
            async for job in pager:
                created = job.create_time.timestamp() if job.create_time else None
                if created is not None and created < created_after:
                    break  # newest first: the rest are older still
                if job.display_name == tag:
                    return job.name
        except Exception as exc:
            raise map_google_error(exc) from exc
        return None

    async def cancel(self, provider_id: str) -> None:
        try:
            await self._genai.aio.batches.cancel(name=provider_id)
        except Exception as exc:
            error = map_google_error(exc)
            if error.kind == ErrorKind.BAD_REQUEST and (await self.status(provider_id)).ended:
                return  # an ended job cannot be cancelled: nothing to do
            raise error from exc

    async def aclose(self) -> None:
        await self._genai.aio.aclose()


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _status(provider_id: str, operation: dict[str, Any]) -> BatchStatus:
    metadata = operation.get("metadata") or {}
    state = _state_name(metadata.get("state"))
    end = _ENDS.get(state)
    stats = metadata.get("batchStats") or {}
    total = _int(stats.get("requestCount"))
    succeeded = _int(stats.get("successfulRequestCount"))
    errored = _int(stats.get("failedRequestCount"))
    pending = _int(stats.get("pendingRequestCount"))
    given = {"total": total, "succeeded": succeeded, "errored": errored}
    if end is None:
        given["processing"] = pending
    elif end in ("expired", "cancelled"):  # lines never run count in none of the stats
        given[end] = max(0, total - succeeded - errored)
    error = operation.get("error") or metadata.get("error") or {}
    message = (
        f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) and error else ""
    )
    return BatchStatus(
        provider_id=str(operation.get("name") or provider_id),
        state="in_progress" if end is None else "ended",
        detail=state.lower() if end is None else end,
        counts=counts(**given),
        message=message,
    )


def _line_result(index: int, item: Any, end: str, provider_id: str) -> LineResult:
    metadata = item.metadata or {}
    custom_id = str(metadata.get("key", index))
    if item.response is not None:
        try:
            response = from_generate_response(item.response)
        except ProviderError as error:
            return LineResult(custom_id, error=error)
        response.extra["batch_id"] = provider_id
        return LineResult(custom_id, response=response)
    if item.error is not None:
        code = item.error.code
        if end == "expired" and code == _RPC_DEADLINE_EXCEEDED:
            return never_run(custom_id, "expired")
        if end == "cancelled" and code == _RPC_CANCELLED:
            return never_run(custom_id, "cancelled")
        return LineResult(custom_id, error=map_rpc_error(code, item.error.message))
    message = "inline response has neither a response nor an error"
    return LineResult(custom_id, error=ProviderError(ErrorKind.MALFORMED_RESPONSE, message))
