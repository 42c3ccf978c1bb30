"""Gemini (Google GenAI) wire format: generateContent, models list, errors.

Requests are read in both proto-JSON spellings (camelCase and snake_case), as the SDK mixes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalfleet.simulator.media import decode_base64
from evalfleet.simulator.protocol import (
    STATUS,
    BadRequest,
    Completion,
    ErrorKind,
    Failure,
    LimitState,
    ParsedRequest,
    Protocol,
    as_int,
)
from evalfleet.simulator.walk import Dialect, PartKind, read_content, read_turns

_ERRORS: dict[ErrorKind, str] = {
    "bad_request": "INVALID_ARGUMENT",
    "unauthorized": "UNAUTHENTICATED",
    "not_found": "NOT_FOUND",
    "rate_limited": "RESOURCE_EXHAUSTED",
    "server_error": "INTERNAL",
    "unavailable": "UNAVAILABLE",
    # Gemini has no 529: an overloaded model answers 503 UNAVAILABLE.
    "overloaded": "UNAVAILABLE",
    "timeout": "DEADLINE_EXCEEDED",
}
_STATUS: dict[ErrorKind, int] = {**STATUS, "overloaded": 503}


def _get(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _bad(where: str, what: str) -> BadRequest:
    return BadRequest(f"* GenerateContentRequest.{where}: {what}")


def _part(part: Any, param: str) -> tuple[PartKind, str | None]:
    if not isinstance(part, dict):
        raise _bad(param, "expected an object")
    text = part.get("text")
    if isinstance(text, str):
        return ("text" if part.get("thought") else "prompt"), text
    inline = _get(part, "inlineData", "inline_data")
    file = _get(part, "fileData", "file_data")
    if isinstance(inline, dict):
        decode_base64(inline.get("data"), f"{param}.inline_data.data", urlsafe=True)
        mime = _get(inline, "mimeType", "mime_type")
    elif isinstance(file, dict):
        mime = _get(file, "mimeType", "mime_type")
    else:
        return "skip", None  # function calls, thought signatures, ...
    return ("audio" if isinstance(mime, str) and mime.startswith("audio/") else "image"), None


# Gemini's contents hold parts only: no plain-string content, and its messages name no param.
_GEMINI = Dialect(read_part=_part, not_parts="expected an array", bad=_bad, strings=False)


class GenerateContent(Protocol):
    route = "gemini.generate"
    usage_field = "usageMetadata"
    input_tokens_field = "promptTokenCount"

    def auth_present(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        return bool(headers.get("x-goog-api-key") or query.get("key"))

    def parse(self, body: Any, match_info: Mapping[str, str]) -> ParsedRequest:
        if not isinstance(body, dict):
            raise BadRequest("Invalid JSON payload received: expected an object.")
        model = match_info["model"]
        contents = body.get("contents")
        if isinstance(contents, dict):
            contents = [contents]
        if not isinstance(contents, list) or not contents:
            raise BadRequest("* GenerateContentRequest.contents: contents is not specified")
        req = ParsedRequest(model=model, prompt_text=None)
        system = _get(body, "systemInstruction", "system_instruction")
        if isinstance(system, dict):
            read_content(req, system.get("parts"), "system_instruction.parts", _GEMINI)
        elif isinstance(system, str):
            req.text_chars += len(system)
        read_turns(req, contents, "contents", _GEMINI, content_key="parts", default_role="user")
        config = _get(body, "generationConfig", "generation_config") or {}
        if not isinstance(config, dict):
            raise BadRequest("* GenerateContentRequest.generation_config: expected an object")
        req.seed = as_int(config.get("seed"), "generation_config.seed")
        req.max_tokens = as_int(
            _get(config, "maxOutputTokens", "max_output_tokens"),
            "generation_config.max_output_tokens",
        )
        thinking = _get(config, "thinkingConfig", "thinking_config") or {}
        if isinstance(thinking, dict):
            req.show_thinking = bool(_get(thinking, "includeThoughts", "include_thoughts"))
            if _get(thinking, "thinkingBudget", "thinking_budget") == 0:
                req.thinking = False
        return req

    def success(self, req: ParsedRequest, done: Completion, request_id: str) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if done.reasoning_text is not None and req.show_thinking:
            parts.append({"text": done.reasoning_text, "thought": True})
        if done.text:
            parts.append({"text": done.text})
        content: dict[str, Any] = {"role": "model"}
        if parts:
            content["parts"] = parts
        visible = done.visible_tokens
        usage: dict[str, Any] = {
            "promptTokenCount": done.input_tokens,
            "candidatesTokenCount": visible,
            "totalTokenCount": done.input_tokens + done.output_tokens,
        }
        if done.reasoning_tokens:
            usage["thoughtsTokenCount"] = done.reasoning_tokens
        return {
            "candidates": [
                {
                    "content": content,
                    "finishReason": "MAX_TOKENS" if done.finish == "length" else "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": usage,
            "modelVersion": req.model,
            "responseId": request_id,
        }

    def error(
        self,
        kind: ErrorKind,
        message: str,
        request_id: str,
        limits: LimitState | None = None,
    ) -> Failure:
        status, code = _STATUS[kind], _ERRORS[kind]
        error: dict[str, Any] = {"code": status, "message": message, "status": code}
        if kind == "rate_limited":
            delay = math.ceil(limits.retry_after_s) if limits is not None else 1
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.Help",
                    "links": [
                        {
                            "description": "Learn more about Gemini API quotas",
                            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                        }
                    ],
                },
                *quota_failure(limits),
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay}s"},
            ]
        return status, {"error": error}, {}

    def ratelimit_headers(self, limits: LimitState) -> dict[str, str]:
        """Gemini states its limits in no header: only a 429's body names the quota it hit
        and its value (`quota_failure`)."""
        return {}


def quota_failure(limits: LimitState | None) -> list[dict[str, Any]]:
    """The `google.rpc.QuotaFailure` detail of a 429, as Gemini sends it: which per-minute
    quota was hit (requests or input tokens) and its value."""
    if limits is None or not limits.limited_by:
        return []
    if limits.limited_by == "requests":
        metric, quota, value = (
            "generate_content_requests",
            "GenerateRequestsPerMinute",
            (limits.requests_limit),
        )
    else:
        metric, quota, value = (
            "generate_content_input_token_count",
            "GenerateContentInputTokensPerMinute",
            (limits.tokens_limit),
        )
    return [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": f"generativelanguage.googleapis.com/{metric}",
                    "quotaId": f"{quota}PerProjectPerModel",
                    "quotaValue": str(value),
                }
            ],
        }
    ]


def model_resource(model: str, thinking: bool) -> dict[str, Any]:
    return {
        "name": f"models/{model}",
        "version": "001",
        "displayName": model,
        "description": "evalfleet simulator model",
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent"],
        "thinking": thinking,
    }


def not_found(message: str) -> Failure:
    return GenerateContent().error("not_found", message, "")
