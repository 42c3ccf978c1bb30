"""Anthropic wire format: Messages, models list, errors and rate-limit headers."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from evalfleet.simulator.media import decode_base64, sniff_image_type
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
    bearer_present,
    limit_headers,
)
from evalfleet.simulator.walk import Dialect, PartKind, after_dot, read_content, read_turns

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MODEL_CREATED = "2026-01-01T00:00:00Z"

_ERRORS: dict[ErrorKind, str] = {
    "bad_request": "invalid_request_error",
    "unauthorized": "authentication_error",
    "not_found": "not_found_error",
    "rate_limited": "rate_limit_error",
    "server_error": "api_error",
    "unavailable": "api_error",
    "overloaded": "overloaded_error",
    "timeout": "timeout_error",
}


def rfc3339_in(seconds: float) -> str:
    moment = datetime.fromtimestamp(time.time() + max(0.0, seconds), UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Messages(Protocol):
    route = "anthropic.messages"
    request_id_header = "request-id"

    def auth_present(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        return bearer_present(headers) or bool(headers.get("x-api-key"))

    def parse(self, body: Any, match_info: Mapping[str, str]) -> ParsedRequest:
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model: Field required", "model")
        max_tokens = as_int(body.get("max_tokens"), "max_tokens")
        if max_tokens is None or max_tokens < 1:
            raise BadRequest("max_tokens: Field required (an integer >= 1)", "max_tokens")
        if body.get("stream"):
            raise BadRequest("stream: streaming is not supported by the simulator", "stream")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: expected a non-empty array", "messages")
        req = ParsedRequest(model=model, prompt_text=None, max_tokens=max_tokens)
        system = body.get("system")
        if system is not None:
            read_content(req, system, "system", _MESSAGES)
        read_turns(req, messages, "messages", _MESSAGES)
        req.seed = as_int(body.get("seed"), "seed")  # no Anthropic parameter; extra_body only
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "disabled":
            req.thinking = False
        return req

    def success(self, req: ParsedRequest, done: Completion, request_id: str) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if done.reasoning_text is not None:
            signature = hashlib.sha256(done.reasoning_text.encode()).hexdigest()[:32]
            content.append(
                {"type": "thinking", "thinking": done.reasoning_text, "signature": signature}
            )
        if done.text:
            content.append({"type": "text", "text": done.text, "citations": None})
        return {
            "id": f"msg_{request_id}",
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": content,
            "stop_reason": "max_tokens" if done.finish == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": done.input_tokens,
                "output_tokens": done.output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens_details": {"thinking_tokens": done.reasoning_tokens},
                "service_tier": "standard",
            },
        }

    def ratelimit_headers(self, limits: LimitState) -> dict[str, str]:
        return limit_headers(limits, "anthropic-ratelimit-{unit}-{field}", rfc3339_in)

    def error(
        self,
        kind: ErrorKind,
        message: str,
        request_id: str,
        limits: LimitState | None = None,
    ) -> Failure:
        etype = _ERRORS[kind]
        headers = self.headers(request_id, limits)
        if kind == "rate_limited" and limits is not None:
            headers["retry-after"] = str(max(1, math.ceil(limits.retry_after_s)))
        body = {
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": request_id,
        }
        return STATUS[kind], body, headers


def _check_source(source: Any, param: str, is_image: bool) -> None:
    if not isinstance(source, dict):
        raise BadRequest(f"{param}: Field required", param)
    stype = source.get("type")
    if stype in ("url", "file", "text", "content"):
        return
    if stype != "base64":
        raise BadRequest(f"{param}.type: unsupported source type {stype!r}", param)
    raw = decode_base64(source.get("data"), f"{param}.data")
    media_type = source.get("media_type")
    if not is_image:
        return
    if media_type not in IMAGE_TYPES:
        raise BadRequest(
            f"{param}.media_type: Input should be one of {', '.join(IMAGE_TYPES)}", param
        )
    sniffed = sniff_image_type(raw)
    if sniffed is not None and sniffed != media_type:
        raise BadRequest(f"{param}: Image does not match the provided media type {media_type}")


def _block(block: Any, param: str) -> tuple[PartKind, str | None]:
    btype = block.get("type") if isinstance(block, dict) else None
    if btype == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise BadRequest(f"{param}.text: Field required", f"{param}.text")
        return "prompt", text
    if btype == "thinking":
        return "text", str(block.get("thinking", ""))
    if btype in ("image", "document"):
        _check_source(block.get("source"), f"{param}.source", btype == "image")
        return "image", None
    if btype in ("redacted_thinking", "tool_use", "tool_result"):
        return "skip", None
    raise BadRequest(f"{param}.type: unsupported block type {btype!r}", param)


_MESSAGES = Dialect(
    read_part=_block, not_parts="expected a string or an array of blocks", item=after_dot
)


def model_info(model: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model,
        "display_name": model.replace("-", " ").title(),
        "created_at": MODEL_CREATED,
        "lifecycle": "active",
        "max_input_tokens": 200000,
        "max_tokens": 64000,
    }


def models_list(models: list[str]) -> dict[str, Any]:
    data = [model_info(m) for m in models]
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
