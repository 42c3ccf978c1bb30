"""Anthropic Message Batches through the official async SDK, its retries off.

The payload is the create body `{"requests": [{"custom_id", "params": <the online call's
body>}]}`, compact JSON, UTF-8, sent as it is (`client.post(..., content=payload)`, the SDK's
own route for a raw body) so that what is digested is what is sent.

Message batches carry no metadata: the job's tag lives only in the custom ids, which the
caller makes with `providers.batch.custom_id(tag, index)`. That is what `find` reads, and only
once a batch has ended (its results name the custom ids); a batch still in progress shows
nothing but its request count and creation time, so `find` can only guess it (see
`AnthropicBatchClient.find`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from anthropic.types.messages import MessageBatch

from evalfleet.providers.anthropic_errors import map_anthropic_error, map_error_body
from evalfleet.providers.anthropic_messages import anthropic_client, from_message, request_body
from evalfleet.providers.batch import (
    BatchClient,
    BatchLine,
    BatchNotEnded,
    BatchStatus,
    LineResult,
    check_lines,
    check_size,
    counts,
    custom_id_matches,
    never_run,
    tag_token,
)
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError

PATH = "/v1/messages/batches"


class AnthropicBatchClient(BatchClient):
    max_lines = 100_000  # requests per batch
    max_bytes = 256_000_000  # "256 MB" per create request (decimal: the stricter reading)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        self._client = anthropic_client(config, api_key)

    def payload(self, lines: Sequence[BatchLine], tag: str) -> bytes:
        """The create body `submit` sends. The tag is not in it: it is in the custom ids, if
        the caller made them with `custom_id(tag, index)`."""
        tag_token(tag)  # not empty
        check_lines(lines, self.max_lines)
        requests = [
            {
                "custom_id": line.custom_id,
                "params": request_body(self.config, line.parts, line.decoding),
            }
            for line in lines
        ]
        data = json.dumps({"requests": requests}, separators=(",", ":"), ensure_ascii=False)
        return check_size(data.encode("utf-8"), self.max_bytes)

    async def submit(self, lines: Sequence[BatchLine], tag: str) -> str:
        data = self.payload(lines, tag)
        try:
            batch = await self._client.post(
                PATH,
                cast_to=MessageBatch,
                content=data,
                options={"headers": {"Content-Type": "application/json"}},
            )
        except Exception as exc:
            raise map_anthropic_error(exc) from exc
        return batch.id

    async def _retrieve(self, provider_id: str) -> MessageBatch:
        try:
            return await self._client.messages.batches.retrieve(provider_id)
        except Exception as exc:
            raise map_anthropic_error(exc) from exc

    async def status(self, provider_id: str) -> BatchStatus:
        return _status(await self._retrieve(provider_id))

    async def results(self, provider_id: str) -> list[LineResult]:
        """One result per request. A succeeded message's id stands for the request id (a
        batch result has no request-id header)."""
        batch = await self._retrieve(provider_id)
        if batch.processing_status != "ended":
            raise BatchNotEnded(f"batch {provider_id} is {batch.processing_status}, not ended")
        out: list[LineResult] = []
        try:
            decoder = await self._client.messages.batches.results(provider_id)
            async for item in decoder:
                out.append(_line_result(item, provider_id))
        except ProviderError:
            raise
        except Exception as exc:
            raise map_anthropic_error(exc) from exc
        return out

    async def find(
        self, tag: str, created_after: float, expected_lines: int | None = None
    ) -> str | None:
        """The batch of the job tagged `tag` created at or after `created_after`, or None.

        Lists batches newest first back to `created_after`. An ended batch is identified for
        certain: the first custom id of its results was made by `custom_id(tag, ...)`. A
        batch still in progress cannot be read: it is matched only by its creation time (in
        the window) and request count (`expected_lines`, which is needed for this), and only
        when exactly one such batch exists in the window and no ended one matched -- a guess,
        which `results` later confirms or refutes by the custom ids (a different job's ids do
        not match the tag). Two in-progress candidates give None; so does an in-progress
        batch when `expected_lines` is not given.
        """
        guesses: list[str] = []
        try:
            async for batch in self._client.messages.batches.list(limit=100):
                if batch.created_at.timestamp() < created_after:
                    break  # newest first: the rest are older still
                if batch.processing_status == "ended":
                    if await self._first_custom_id_matches(batch.id, tag):
                        return batch.id
                elif expected_lines is not None and _total(batch) == expected_lines:
                    guesses.append(batch.id)
        except ProviderError:
            raise
        except Exception as exc:
            raise map_anthropic_error(exc) from exc
        return guesses[0] if len(guesses) == 1 else None

    async def _first_custom_id_matches(self, provider_id: str, tag: str) -> bool:
        decoder = await self._client.messages.batches.results(provider_id)
        try:
            async for item in decoder:
                return custom_id_matches(tag, item.custom_id)
            return False
        finally:
            await decoder.close()

    async def cancel(self, provider_id: str) -> None:
        try:
            await self._client.messages.batches.cancel(provider_id)
        except Exception as exc:
            error = map_anthropic_error(exc)
            refused = error.kind in (ErrorKind.BAD_REQUEST, ErrorKind.SERVER_ERROR)
            if refused and (await self.status(provider_id)).ended:
                return  # an ended batch cannot be cancelled: nothing to do then
            raise error from exc

    async def aclose(self) -> None:
        await self._client.close()


def _total(batch: MessageBatch) -> int:
    rc = batch.request_counts
    return rc.processing + rc.succeeded + rc.errored + rc.canceled + rc.expired


def _status(batch: MessageBatch) -> BatchStatus:
    rc = batch.request_counts
    ended = batch.processing_status == "ended"
    if not ended:
        detail = "cancelling" if batch.processing_status == "canceling" else "in_progress"
    elif batch.cancel_initiated_at is not None:
        detail = "cancelled"
    elif rc.expired:
        detail = "expired"
    else:
        detail = "completed"
    return BatchStatus(
        provider_id=batch.id,
        state="ended" if ended else "in_progress",
        detail=detail,
        counts=counts(
            total=_total(batch),
            processing=rc.processing,
            succeeded=rc.succeeded,
            errored=rc.errored,
            cancelled=rc.canceled,
            expired=rc.expired,
        ),
    )


def _line_result(item: Any, provider_id: str) -> LineResult:
    custom_id = item.custom_id
    result = item.result
    if result.type == "succeeded":
        message = result.message
        try:
            response = from_message(message, getattr(message, "id", None))
        except ProviderError as error:
            return LineResult(custom_id, error=error)
        response.extra["batch_id"] = provider_id
        return LineResult(custom_id, response=response)
    if result.type == "errored":
        body = result.error.model_dump() if hasattr(result.error, "model_dump") else result.error
        return LineResult(custom_id, error=map_error_body(body))
    if result.type in ("canceled", "expired"):
        return never_run(custom_id, "expired" if result.type == "expired" else "cancelled")
    message = f"unknown batch result type {result.type!r}"
    return LineResult(custom_id, error=ProviderError(ErrorKind.MALFORMED_RESPONSE, message))
