"""OpenAI chat completions (also any OpenAI-compatible server) through the official SDK.

The SDK's client sends every call (its authentication, headers, timeouts, connection pool
and error types), but the body is built here, once per sample: the SDK's typed request
building walks the base64 image of every call again (a seventh of a worker's time at hundreds
of calls in flight). A sample's `messages`, its image encoded, are serialised once and reused
by every epoch and model; each call adds its model and decoding arguments. The HTTP request
around it is also the SDK's, built once (`providers.sdk_post`). The answer is read from its
JSON as leniently as the SDK reads it.
"""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.base import ProviderClient, described, malformed, wire_body
from evalfleet.providers.media_parts import check_parts
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse, Usage

if TYPE_CHECKING:
    import httpx2

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


def response_from_body(body: Any, request_id: str | None) -> ProviderResponse:
    """A chat completion's JSON (an online answer, or a batch output line's `response.body`)
    -> ProviderResponse; raises for no choices, a filtered answer or a body that is not a chat
    completion. `remaining` (from the online call's headers) is left to the caller."""
    try:
        choices = body["choices"]
        if not choices:
            raise ProviderError(
                ErrorKind.EMPTY_ANSWER, "response has no choices", request_id=request_id
            )
        choice = choices[0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        finish_reason = choice.get("finish_reason")
        usage = _usage(body.get("usage"))
        if not isinstance(text, str):
            raise TypeError(f"message content is {type(text).__name__}")
    except ProviderError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError) as exc:  # not a chat completion
        raise malformed(described(exc), request_id) from exc
    if finish_reason == "content_filter":
        raise ProviderError(
            ErrorKind.CONTENT_FILTERED,
            "answer withheld by content filter",
            status=200,
            request_id=request_id,
        )
    return ProviderResponse(
        text=text,
        finish_reason=finish_reason,
        usage=usage,
        model_reported=body.get("model"),
        request_id=request_id,
        reasoning_text=message.get("reasoning_content"),
        extra={"system_fingerprint": body.get("system_fingerprint")},
    )


class BodyCache:
    """Each sample's `messages` serialised once (keyed by its parts list, kept alive here so
    its id is not reused), the most recent `size` of them."""

    def __init__(self, config: ModelConfig, size: int = 512) -> None:
        self.config = config
        self.size = size
        self._messages: OrderedDict[int, tuple[Sequence[Part], bytes]] = OrderedDict()

    def body(self, parts: Sequence[Part], decoding: Decoding) -> bytes:
        found = self._messages.get(id(parts))
        if found is None or found[0] is not parts:
            check_parts(self.config, parts)
            messages = [{"role": "user", "content": chat_content(parts)}]
            found = (parts, _dumps(messages))
            self._messages[id(parts)] = found
            if len(self._messages) > self.size:
                self._messages.popitem(last=False)
        else:
            self._messages.move_to_end(id(parts))
        rest = _dumps({"model": self.config.api_model, **decoding_arguments(self.config, decoding)})
        return b'{"messages":' + found[1] + b"," + rest[1:]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class OpenAIChatClient(ProviderClient):
    """The SDK (0.3 s of CPU to import) is imported when a client is made, not with this
    module: a report rebuilding request bodies (`body_of`) never sends one."""

    unreadable = (ValueError,)  # what json.loads raises for a body that is not JSON
    _convert = staticmethod(response_from_body)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        import openai

        from evalfleet.providers.openai_sdk import openai_client
        from evalfleet.providers.sdk_post import SdkPost

        super().__init__(config, api_key)
        # The SDK's aiohttp transport costs about a third less CPU per call than its default
        # httpx2 one at hundreds of calls in flight (measured against the simulator).
        self._client = openai_client(
            config, api_key, http_client=openai.DefaultAioHttpClient(timeout=config.timeout_s)
        )
        self._bodies = BodyCache(config)
        self._wire = SdkPost(self._client, "/chat/completions")

    def request_params(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_params(self.config, parts, decoding)

    def request_body(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_body(self.config, parts, decoding)

    @classmethod
    def body_of(cls, config: ModelConfig) -> Callable[[Sequence[Part], Decoding], dict[str, Any]]:
        """`request_body` of a client of `config`, without making one (nor importing its SDK)."""
        return partial(request_body, config)

    @staticmethod
    def _map_error(exc: Exception) -> ProviderError:
        from evalfleet.providers.openai_errors import map_openai_error

        return map_openai_error(exc)

    def _request(self, parts: Sequence[Part], decoding: Decoding) -> httpx2.Request:
        return self._wire.request(self._bodies.body(parts, decoding))

    def _send(self, request: httpx2.Request) -> Awaitable[httpx2.Response]:
        return self._wire.send(request)

    def _decode(self, raw: httpx2.Response) -> Any:
        return json.loads(raw.content)

    async def aclose(self) -> None:
        await self._client.close()


def _usage(usage: Any) -> Usage:
    if not usage:
        return Usage(reported=False)
    details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        reasoning_tokens=details.get("reasoning_tokens") or 0,
        cached_input_tokens=prompt_details.get("cached_tokens") or 0,
    )
