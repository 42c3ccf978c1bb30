"""OpenAI Responses API (reasoning models) through the official async SDK."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from openai.types.responses import Response

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.base import ProviderClient, parse_body, wire_body
from evalfleet.providers.media_parts import check_parts, data_url
from evalfleet.providers.openai_errors import map_openai_error
from evalfleet.providers.openai_sdk import openai_client
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse, Usage

# `response.error.code` of a failed response; anything else is a problem with the input.
_FAILED_KINDS = {
    "server_error": ErrorKind.SERVER_ERROR,
    "rate_limit_exceeded": ErrorKind.RATE_LIMITED,
}


def responses_content(config: ModelConfig, parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Neutral parts -> Responses input content, in the benchmark's order (no audio here)."""
    check_parts(config, parts)
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.kind == "text":
            content.append({"type": "input_text", "text": part.text or ""})
        else:
            content.append({"type": "input_image", "image_url": data_url(part), "detail": "auto"})
    return content


def responses_arguments(config: ModelConfig, decoding: Decoding) -> dict[str, Any]:
    """Sampling only where the model takes it.

    The Responses API has no seed; a server that takes one anyway (the simulator, some
    gateways) lists `seed` in the model's `accepts` and gets it in the body.
    """
    args: dict[str, Any] = {"max_output_tokens": config.output_limit(decoding.max_tokens)}
    for name in ("temperature", "top_p"):
        value = getattr(decoding, name)
        if value is not None and name in config.accepts:
            args[name] = value
    if decoding.seed is not None and "seed" in config.accepts:
        args["extra_body"] = {"seed": decoding.seed}
    effort = config.effort_for(decoding.reasoning_effort)
    if effort is not None:
        reasoning: dict[str, Any] = {"effort": effort}
        summary = config.extra.get("reasoning_summary")
        if summary:
            reasoning["summary"] = summary
        args["reasoning"] = reasoning
    return args


def request_params(
    config: ModelConfig, parts: Sequence[Part], decoding: Decoding
) -> dict[str, Any]:
    """The keyword arguments of `responses.create` (what `complete` sends): model, input and
    the decoding arguments, a seed in `extra_body` where the model takes one."""
    content = responses_content(config, parts)
    return {
        "model": config.api_model,
        "input": [{"role": "user", "content": content}],
        **responses_arguments(config, decoding),
    }


def request_body(config: ModelConfig, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
    """The JSON body the online call sends (`extra_body` merged): the `body` of a batch line."""
    return wire_body(request_params(config, parts, decoding))


def from_response(response: Any, request_id: str | None) -> ProviderResponse:
    """A parsed Responses answer -> ProviderResponse; raises for filtered or failed answers.
    `remaining` (from the online call's headers) is left to the caller."""
    finish = _finish_reason(response, request_id)
    return ProviderResponse(
        text=response.output_text,
        finish_reason=finish,
        usage=_usage(response.usage),
        model_reported=response.model,
        request_id=request_id,
        reasoning_text=_reasoning_text(response.output),
        extra={"response_id": response.id},
    )


def response_from_body(body: dict[str, Any], request_id: str | None) -> ProviderResponse:
    """A Responses body (a batch output line's `response.body`) -> ProviderResponse, read
    leniently as the SDK reads an online answer."""
    return parse_body(body, request_id, Response, from_response)


class OpenAIResponsesClient(ProviderClient):
    _map_error = staticmethod(map_openai_error)

    def _convert(self, body: Any, request_id: str | None) -> ProviderResponse:
        return from_response(body, request_id)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        self._client = openai_client(config, api_key)

    def request_params(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_params(self.config, parts, decoding)

    def request_body(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_body(self.config, parts, decoding)

    _request = request_params  # what `complete` sends: the SDK call's keyword arguments

    def _send(self, params: dict[str, Any]) -> Awaitable[Any]:
        return self._client.responses.with_raw_response.create(**params)

    def _decode(self, raw: Any) -> Any:
        return raw.parse()

    async def aclose(self) -> None:
        await self._client.close()


def _finish_reason(response: Any, request_id: str | None) -> str:
    """The finish reason ("stop", "length", ...); raises for filtered or failed answers."""
    if response.status == "completed":
        return "stop"
    if response.status == "incomplete":
        details = response.incomplete_details
        reason = details.reason if details is not None else None
        if reason == "content_filter":
            raise ProviderError(
                ErrorKind.CONTENT_FILTERED,
                "answer withheld by content filter",
                status=200,
                request_id=request_id,
            )
        return "length" if reason == "max_output_tokens" else (reason or "incomplete")
    if response.status == "failed" and response.error is not None:
        kind = _FAILED_KINDS.get(response.error.code, ErrorKind.BAD_REQUEST)
        message = f"response failed: {response.error.code}: {response.error.message}"
        raise ProviderError(kind, message, status=200, request_id=request_id)
    raise ProviderError(
        ErrorKind.MALFORMED_RESPONSE,
        f"response has status {response.status!r}",
        status=200,
        request_id=request_id,
    )


def _reasoning_text(output: Sequence[Any]) -> str | None:
    """Reasoning summaries (and any reasoning content) kept apart from the answer."""
    texts: list[str] = []
    for item in output:
        if item.type == "reasoning":
            texts.extend(s.text for s in item.summary)
            texts.extend(c.text for c in item.content or ())
    return "\n\n".join(texts) if texts else None


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage(reported=False)
    out_details = usage.output_tokens_details
    in_details = usage.input_tokens_details
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=(out_details.reasoning_tokens or 0) if out_details else 0,
        cached_input_tokens=(in_details.cached_tokens or 0) if in_details else 0,
    )
