"""Anthropic Messages API through the official async SDK."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

import anthropic
from anthropic.types import Message

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.anthropic_errors import map_anthropic_error
from evalfleet.providers.base import ProviderClient, parse_body, wire_body
from evalfleet.providers.media_parts import b64, check_parts, refuse
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse, Usage

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
MIN_THINKING_BUDGET = 1024
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


def messages_content(config: ModelConfig, parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Neutral parts -> content blocks in the benchmark's order; images as base64 blocks."""
    check_parts(config, parts)
    blocks: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if part.kind == "text":
            if part.text:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": part.text})
            continue
        if part.media_type not in IMAGE_TYPES:
            raise refuse(config, index, part, f"{part.media_type} is not an image type it takes")
        source = {"type": "base64", "media_type": part.media_type, "data": b64(part.data)}
        blocks.append({"type": "image", "source": source})
    return blocks


def thinking_arguments(config: ModelConfig, decoding: Decoding, max_tokens: int) -> dict[str, Any]:
    """`thinking` (and `output_config.effort` for adaptive thinking), or nothing."""
    effort = config.effort_for(decoding.reasoning_effort)
    if not config.thinks(decoding.reasoning_effort):
        return {"thinking": {"type": "disabled"}} if config.thinking else {}
    if (config.thinking or "enabled") == "adaptive":
        args: dict[str, Any] = {"thinking": {"type": "adaptive"}}
        effort = "low" if effort == "minimal" else effort
        if effort in EFFORTS:
            args["output_config"] = {"effort": effort}
        return args
    # The budget counts toward max_tokens and must stay below it.
    budget = min(config.thinking_budget or MIN_THINKING_BUDGET, max_tokens - 1)
    if budget < MIN_THINKING_BUDGET:
        raise ProviderError(
            ErrorKind.BAD_REQUEST,
            f"{config.id}: max_tokens {max_tokens} leaves no room for a thinking budget of "
            f"{MIN_THINKING_BUDGET} tokens",
        )
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def messages_arguments(config: ModelConfig, decoding: Decoding) -> dict[str, Any]:
    """anthropic 2.x has no sampling keywords: accepted ones go through extra_body."""
    max_tokens = config.output_limit(decoding.max_tokens)
    args = {"max_tokens": max_tokens, **thinking_arguments(config, decoding, max_tokens)}
    thinking_on = args.get("thinking", {}).get("type", "disabled") != "disabled"
    names = ("seed",) if thinking_on else ("temperature", "top_p", "seed")
    extra = {
        name: getattr(decoding, name)
        for name in names
        if getattr(decoding, name) is not None and name in config.accepts
    }
    if extra:
        args["extra_body"] = extra
    return args


def request_params(
    config: ModelConfig, parts: Sequence[Part], decoding: Decoding
) -> dict[str, Any]:
    """The keyword arguments of `messages.create` but the per-call timeout: model, messages,
    max_tokens, thinking, and sampling in `extra_body`."""
    content = messages_content(config, parts)
    return {
        "model": config.api_model,
        "messages": [{"role": "user", "content": content}],
        **messages_arguments(config, decoding),
    }


def request_body(config: ModelConfig, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
    """The JSON body the online call sends (`extra_body` merged): a batch request's `params`."""
    return wire_body(request_params(config, parts, decoding))


def from_message(message: Any, request_id: str | None) -> ProviderResponse:
    """A parsed Message -> ProviderResponse; raises for a refusal. `remaining` is left to the
    caller."""
    if message.stop_reason == "refusal":
        raise ProviderError(
            ErrorKind.CONTENT_FILTERED, "the model refused", status=200, request_id=request_id
        )
    texts = [b.text for b in message.content if b.type == "text"]
    thoughts = [b.thinking for b in message.content if b.type == "thinking"]
    return ProviderResponse(
        text="".join(texts),
        finish_reason=_FINISH.get(message.stop_reason, message.stop_reason),
        usage=_usage(getattr(message, "usage", None)),
        model_reported=message.model,
        request_id=request_id,
        reasoning_text="\n\n".join(thoughts) if thoughts else None,
        extra={"stop_reason": message.stop_reason},
    )


def response_from_body(body: dict[str, Any], request_id: str | None) -> ProviderResponse:
    """A Message body (a batch result's `message`) -> ProviderResponse, read leniently as the
    SDK reads an online answer."""
    return parse_body(body, request_id, Message, from_message)


def anthropic_client(config: ModelConfig, api_key: str) -> anthropic.AsyncAnthropic:
    """The SDK client for a model, online or batch: its base URL and timeout, the SDK's own
    retries off (`evalfleet.providers.retry` decides, so every attempt is counted once)."""
    return anthropic.AsyncAnthropic(
        api_key=api_key,
        base_url=config.base_url,
        max_retries=0,
        timeout=config.timeout_s,
    )


class AnthropicMessagesClient(ProviderClient):
    request_id_header = "request-id"
    decode_awaits = True  # the SDK's raw answer parses in a coroutine
    _map_error = staticmethod(map_anthropic_error)

    def _convert(self, body: Any, request_id: str | None) -> ProviderResponse:
        return from_message(body, request_id)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        self._client = anthropic_client(config, api_key)

    def request_params(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_params(self.config, parts, decoding)

    def request_body(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_body(self.config, parts, decoding)

    _request = request_params  # what `complete` sends: the SDK call's keyword arguments

    def _send(self, params: dict[str, Any]) -> Awaitable[Any]:
        # An explicit per-call timeout also lifts the SDK's non-streaming guard.
        return self._client.messages.with_raw_response.create(
            timeout=self.config.timeout_s, **params
        )

    def _decode(self, raw: Any) -> Any:
        return raw.parse()

    async def aclose(self) -> None:
        await self._client.close()


def _usage(usage: Any) -> Usage:
    """input_tokens excludes cache reads and writes: add them, as the other providers do."""
    if usage is None:
        return Usage(reported=False)
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    details = usage.output_tokens_details
    return Usage(
        input_tokens=(usage.input_tokens or 0) + cache_read + cache_write,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=(getattr(details, "thinking_tokens", None) or 0) if details else 0,
        cached_input_tokens=cache_read,
    )
