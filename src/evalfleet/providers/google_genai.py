"""Gemini generateContent through the official google-genai async client."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

import httpx2
from google import genai
from google.genai import _common, types
from google.genai import models as _models

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.base import ProviderClient, described, malformed, not_an_object
from evalfleet.providers.google_errors import map_google_error
from evalfleet.providers.media_parts import check_parts
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse, Usage

API_VERSION = "v1beta"  # google-genai 3.x defaults to v1; pin it
FILTERED = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
_LEVELS = {
    "minimal": types.ThinkingLevel.MINIMAL,
    "low": types.ThinkingLevel.LOW,
    "medium": types.ThinkingLevel.MEDIUM,
    "high": types.ThinkingLevel.HIGH,
    "xhigh": types.ThinkingLevel.XHIGH,
    "max": types.ThinkingLevel.XHIGH,
}


def gemini_parts(config: ModelConfig, parts: Sequence[Part]) -> list[types.Part]:
    """Neutral parts -> text and inline_data parts (images, audio) in the benchmark's order."""
    check_parts(config, parts)
    out: list[types.Part] = []
    for part in parts:
        if part.kind == "text":
            if part.text:
                out.append(types.Part.from_text(text=part.text))
        else:
            mime_type = part.media_type or "application/octet-stream"
            out.append(types.Part.from_bytes(data=part.data or b"", mime_type=mime_type))
    return out


def thinking_config(config: ModelConfig, decoding: Decoding) -> types.ThinkingConfig | None:
    """Thoughts are requested back (include_thoughts) so they can be kept apart."""
    effort = config.effort_for(decoding.reasoning_effort)
    level_style = config.thinking == "level"
    if not config.thinks(decoding.reasoning_effort):
        if effort != "none":
            return None
        if level_style:  # level models cannot turn thinking off: ask for the least
            return types.ThinkingConfig(thinking_level=types.ThinkingLevel.MINIMAL)
        return types.ThinkingConfig(thinking_budget=0)
    if level_style:
        return types.ThinkingConfig(include_thoughts=True, thinking_level=_LEVELS.get(effort or ""))
    budget = config.thinking_budget if config.thinking_budget is not None else -1  # -1: dynamic
    return types.ThinkingConfig(include_thoughts=True, thinking_budget=budget)


def generation_config(config: ModelConfig, decoding: Decoding) -> types.GenerateContentConfig:
    args: dict[str, Any] = {
        "max_output_tokens": config.output_limit(decoding.max_tokens),
        # One request per record: no hidden, separately billed continuation hops.
        "automatic_continuation": False,
        "thinking_config": thinking_config(config, decoding),
    }
    for name in ("temperature", "top_p", "seed"):
        value = getattr(decoding, name)
        if value is not None and name in config.accepts:
            args[name] = value
    return types.GenerateContentConfig(**args)


def request_params(
    config: ModelConfig, parts: Sequence[Part], decoding: Decoding
) -> dict[str, Any]:
    """The keyword arguments of `models.generate_content` (what `complete` sends): model,
    contents and the generation config, as SDK types."""
    contents = [types.Content(role="user", parts=gemini_parts(config, parts))]
    return {
        "model": config.api_model,
        "contents": contents,
        "config": generation_config(config, decoding),
    }


def request_body(api_client: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body `generate_content(**params)` sends (an inline batch request's `request`),
    built by the SDK's own converter as `AsyncModels._generate_content` builds it: contents and
    `generationConfig` in the wire's camelCase, bytes in base64; the model goes in the URL.
    `api_client` is a `genai.Client`'s `_api_client` (the converter asks it whether it talks
    to Vertex AI)."""
    parameters = types._GenerateContentParameters(
        model=params["model"], contents=params["contents"], config=params["config"]
    )
    body = _models._GenerateContentParameters_to_mldev(api_client, parameters, None, parameters)
    body.pop("config", None)
    body = _common.encode_unserializable_types(_common.convert_to_dict(body))
    # the SDK drops the `_url`/`_query` keys before sending
    return {k: v for k, v in body.items() if not k.startswith("_")}


def genai_client(config: ModelConfig, api_key: str) -> genai.Client:
    """The SDK client for a model, online or batch. Keep it while its `.aio` is used: its
    __del__ closes the HTTP client `.aio` sends with."""
    options = types.HttpOptions(
        base_url=config.base_url,
        api_version=API_VERSION,
        timeout=round(config.timeout_s * 1000),
        # An httpx2 transport keeps the SDK off its aiohttp path, which silently retries
        # once on connection errors; no retry_options: one attempt per call.
        async_client_args={"transport": httpx2.AsyncHTTPTransport()},
    )
    return genai.Client(api_key=api_key, vertexai=False, http_options=options)


class GoogleGenAIClient(ProviderClient):
    _map_error = staticmethod(map_google_error)

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        super().__init__(config, api_key)
        self._genai = genai_client(config, api_key)

    def request_params(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_params(self.config, parts, decoding)

    def request_body(self, parts: Sequence[Part], decoding: Decoding) -> dict[str, Any]:
        return request_body(self._genai._api_client, self.request_params(parts, decoding))

    _request = request_params  # what `complete` sends: the SDK call's keyword arguments

    def _send(self, params: dict[str, Any]) -> Awaitable[types.GenerateContentResponse]:
        return self._genai.aio.models.generate_content(**params)

    def _answer(self, raw: Any, body: types.GenerateContentResponse) -> ProviderResponse:
        """The SDK has read and typed the answer; its request id is in it, and Gemini sends
        no rate-limit headers."""
        return from_generate_response(body)

    async def aclose(self) -> None:
        await self._genai.aio.aclose()


def _filtered(reason: str, request_id: str | None) -> ProviderError:
    return ProviderError(
        ErrorKind.CONTENT_FILTERED, f"blocked: {reason}", status=200, request_id=request_id
    )


def _name(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def from_generate_response(response: types.GenerateContentResponse) -> ProviderResponse:
    """A parsed generateContent answer (online, or an inline batch response) ->
    ProviderResponse; raises for a blocked prompt or answer and for no candidates."""
    request_id = response.response_id
    feedback = response.prompt_feedback
    block = _name(feedback.block_reason) if feedback is not None else None
    if block and block != "BLOCKED_REASON_UNSPECIFIED":
        raise _filtered(f"prompt ({block})", request_id)
    if not response.candidates:
        raise ProviderError(
            ErrorKind.EMPTY_ANSWER, "response has no candidates", status=200, request_id=request_id
        )
    candidate = response.candidates[0]
    finish = _name(candidate.finish_reason)
    if finish in FILTERED:
        raise _filtered(f"answer ({finish})", request_id)
    answer: list[str] = []
    thoughts: list[str] = []
    for part in (candidate.content.parts if candidate.content else None) or ():
        if part.text is not None:
            (thoughts if part.thought else answer).append(part.text)
    return ProviderResponse(
        text="".join(answer),
        finish_reason=_FINISH.get(finish, finish.lower()) if finish else None,
        usage=_usage(response.usage_metadata),
        model_reported=response.model_version,
        request_id=request_id,
        reasoning_text="\n\n".join(thoughts) if thoughts else None,
        extra={"finish_reason": finish},
    )


def response_from_body(body: dict[str, Any], request_id: str | None = None) -> ProviderResponse:
    """A generateContent body in the wire's camelCase -> ProviderResponse, converted as the
    SDK converts an online answer. Its `responseId` is the request id; `request_id` is used
    when it has none."""
    if not isinstance(body, dict):
        raise not_an_object(body, request_id)
    try:
        converted = _models._GenerateContentResponse_from_mldev(dict(body), None)
        response = types.GenerateContentResponse._from_response(response=converted, kwargs={})
    except Exception as exc:  # fields of the wrong shape
        raise malformed(described(exc), request_id) from exc
    if response.response_id is None:
        response.response_id = request_id
    return from_generate_response(response)


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    """Gemini counts thoughts apart from candidates; our output count includes them."""
    if meta is None:
        return Usage(reported=False)
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + thoughts,
        reasoning_tokens=thoughts,
        cached_input_tokens=meta.cached_content_token_count or 0,
    )
