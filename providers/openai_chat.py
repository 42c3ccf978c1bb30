"""OpenAI chat completions (also any OpenAI-compatible server) through the official SDK."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from core.types import Decoding, Part
from providers.base import ProviderClient, parse_body, wire_body
from providers.media_parts import check_parts
from providers.openai_errors import map_openai_error
from providers.registry import ModelConfig
from providers.retry_after import remaining_from_headers
from providers.types import ErrorKind, ProviderError, ProviderResponse, Usage

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def chat_content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Neutral parts -> chat `content` list, keeping the benchmark's order."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.kind == "text":
            content.append({"type": "text", "text": part.text or ""})
        elif part.kind == "image":
            b64 = base64.b64encode(part.data or b"").decode("ascii")
            url = f"data:{part.media_type};base64,{b64}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        elif part.kind == "audio":
            fmt = _AUDIO_FORMATS.get(part.media_type or "")
            if fmt is None:
                raise ProviderError(
                    ErrorKind.BAD_REQUEST,
                    f"OpenAI chat takes wav or mp3 audio, not {part.media_type}",
                )
            b64 = base64.b64encode(part.data or b"").decode("ascii")
            content.append({"type": "input_audio", "input_audio": {"data": b64, "format": fmt}})
    return content


def decoding_arguments(config: ModelConfig, decoding: Decoding) -> dict[str, Any]:
    """Only the parameters this model accepts; the max-tokens name the model wants."""
    accepts = config.accepts
    args: dict[str, Any] = {}
    if "max_completion_tokens" in accepts:
        args["max_completion_tokens"] = config.output_limit(decoding.max_tokens)
    elif "max_tokens" in accepts:
        args["max_tokens"] = config.output_limit(decoding.max_tokens)
    for name in ("temperature", "top_p", "seed", "reasoning_effort"):
        value = getattr(decoding, name)
        if value is not None and name in accepts:
            args[name] = value
    return args


def request_params(
    config: ModelConfig, parts: Sequence[Part], decoding: Decoding
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create`: model, messages and the decoding
    arguments the model takes. They are also the JSON body on the wire (no `extra_body`), so a
    batch line carries exactly what the online call sends."""
    check_parts(config, parts)
    return {
        "model": config.api_model,
        "messages": [{"role": "user", "content": chat_content(parts)}],
        **decoding_arguments(config, decoding),
    }


def request_body(config: ModelConfig, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
    """The JSON body the online call sends (the `body` of a batch line)."""
    return wire_body(request_params(config, parts, decoding))


def from_completion(completion: Any, request_id: str | None) -> ProviderResponse:
    """A parsed chat completion -> ProviderResponse; raises for no choices or a filtered answer.
    `remaining` (from the online call's headers) is left to the caller."""
    if not completion.choices:
        raise ProviderError(
            ErrorKind.EMPTY_ANSWER, "response has no choices", request_id=request_id
        )
    choice = completion.choices[0]
    usage = _usage(completion.usage)
    text = choice.message.content or ""
    if choice.finish_reason == "content_filter":
        raise ProviderError(
            ErrorKind.CONTENT_FILTERED,
            "answer withheld by content filter",
            status=200,
            request_id=request_id,
        )
    return ProviderResponse(
        text=text,
        finish_reason=choice.finish_reason,
        usage=usage,
        model_reported=completion.model,
        request_id=request_id,
        reasoning_text=getattr(choice.message, "reasoning_content", None),
        extra={"system_fingerprint": completion.system_fingerprint},
    )


def response_from_body(body: dict[str, Any], request_id: str | None) -> ProviderResponse:
    """A chat completion body (a batch output line's `response.body`) -> ProviderResponse,
    read leniently as the SDK reads an online answer."""
    return parse_body(body, request_id, ChatCompletion, from_completion)


class OpenAIChatClient(ProviderClient):
    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        # The SDK's aiohttp transport costs about a third less CPU per call than its default
        # httpx2 one at hundreds of calls in flight (measured against the simulator).
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
            http_client=openai.DefaultAioHttpClient(timeout=config.timeout_s),
        )

    def request_params(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_params(self.config, parts, decoding)

    def request_body(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_body(self.config, parts, decoding)

    async def complete(self, parts: Sequence[Part], decoding: Decoding) -> ProviderResponse:
        params = self.request_params(parts, decoding)
        try:
            raw = await self._client.chat.completions.with_raw_response.create(**params)
        except Exception as exc:  # every SDK failure goes through one taxonomy
            raise map_openai_error(exc) from exc
        request_id = raw.headers.get("x-request-id")
        try:
            completion = raw.parse()
        except Exception as exc:  # a 200 whose body is not a chat completion
            raise ProviderError(
                ErrorKind.MALFORMED_RESPONSE,
                f"malformed response body: {str(exc)[:300]}",
                status=raw.status_code,
                request_id=request_id,
            ) from exc
        response = from_completion(completion, request_id)
        response.remaining = remaining_from_headers(raw.headers)
        return response

    async def aclose(self) -> None:
        await self._client.close()


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = usage.completion_tokens_details
    prompt_details = usage.prompt_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details else 0,
        cached_input_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
    )
