"""OpenAI wire format: Chat Completions, Responses, models list, errors and rate-limit headers."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from evalfleet.simulator.media import check_data_url, decode_base64
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
    retry_after_headers,
)
from evalfleet.simulator.walk import Dialect, PartKind, read_turns

MODEL_CREATED = 1767225600  # 2026-01-01T00:00:00Z

_ERRORS: dict[ErrorKind, tuple[str, str | None]] = {
    # kind: (error.type, error.code)
    "bad_request": ("invalid_request_error", None),
    "unauthorized": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "model_not_found"),
    "rate_limited": ("requests", "rate_limit_exceeded"),
    "server_error": ("server_error", None),
    "unavailable": ("server_error", None),
    "overloaded": ("server_error", None),
    "timeout": ("server_error", None),
}


def go_duration(seconds: float) -> str:
    """Format like Go's time.Duration: ``12ms``, ``1s``, ``6m0s``, ``1h2m3.5s``."""
    ms = max(0, round(seconds * 1000))
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _body(d: Any) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise BadRequest("the request body must be a JSON object")
    model = d.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter", "model")
    if d.get("stream"):
        raise BadRequest("stream=true is not supported by the simulator", "stream")
    return d


def _text(part: dict[str, Any], param: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise BadRequest(f"{param}.text: expected a string", f"{param}.text")
    return text


def _unsupported(ptype: Any, param: str) -> BadRequest:
    return BadRequest(f"{param}.type: unsupported content part type {ptype!r}", param)


def _chat_part(part: Any, param: str) -> tuple[PartKind, str | None]:
    ptype = part.get("type") if isinstance(part, dict) else None
    if ptype == "text":
        return "prompt", _text(part, param)
    if ptype == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        check_data_url(url, f"{param}.image_url.url")
        return "image", None
    if ptype == "input_audio":
        audio = part.get("input_audio")
        audio = audio if isinstance(audio, dict) else {}
        if audio.get("format") not in ("wav", "mp3"):
            raise BadRequest(f"{param}.input_audio.format: expected 'wav' or 'mp3'", param)
        decode_base64(audio.get("data"), f"{param}.input_audio.data")
        return "audio", None
    if ptype == "file":
        file = part.get("file")
        data = file.get("file_data") if isinstance(file, dict) else None
        if data is not None:
            check_data_url(data, f"{param}.file.file_data")
        return "image", None
    raise _unsupported(ptype, param)


def _responses_part(part: Any, param: str) -> tuple[PartKind, str | None]:
    ptype = part.get("type") if isinstance(part, dict) else None
    if ptype in ("input_text", "output_text"):
        return ("prompt" if ptype == "input_text" else "text"), _text(part, param)
    if ptype == "input_image":
        if part.get("image_url") is not None:
            check_data_url(part.get("image_url"), f"{param}.image_url")
        elif not part.get("file_id"):
            raise BadRequest(f"{param}: image_url or file_id is required", param)
        return "image", None
    if ptype == "input_file":
        if part.get("file_data") is not None:
            check_data_url(part.get("file_data"), f"{param}.file_data")
        return "image", None
    raise _unsupported(ptype, param)


_NOT_PARTS = "expected a string or an array of parts"
# A missing content (an assistant turn of tool calls) is no content.
_CHAT = Dialect(read_part=_chat_part, not_parts=_NOT_PARTS, none_is_empty=True)
_RESPONSES = Dialect(read_part=_responses_part, not_parts=_NOT_PARTS, none_is_empty=True)


class _OpenAIBase(Protocol):
    request_id_header = "x-request-id"

    def auth_present(self, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        return bearer_present(headers)

    def ratelimit_headers(self, limits: LimitState) -> dict[str, str]:
        return limit_headers(limits, "x-ratelimit-{field}-{unit}", go_duration)

    def error(
        self,
        kind: ErrorKind,
        message: str,
        request_id: str,
        limits: LimitState | None = None,
    ) -> Failure:
        etype, code = _ERRORS[kind]
        if kind == "rate_limited" and limits is not None and limits.limited_by == "tokens":
            etype = "tokens"
        headers = self.headers(request_id, limits)
        if kind == "rate_limited" and limits is not None:
            headers.update(retry_after_headers(limits.retry_after_s))
        body = {"error": {"message": message, "type": etype, "param": None, "code": code}}
        return STATUS[kind], body, headers


class ChatCompletions(_OpenAIBase):
    route = "openai.chat"
    input_tokens_field = "prompt_tokens"

    def parse(self, body: Any, match_info: Mapping[str, str]) -> ParsedRequest:
        d = _body(body)
        messages = d.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: expected a non-empty array", "messages")
        req = ParsedRequest(model=d["model"], prompt_text=None)
        read_turns(req, messages, "messages", _CHAT)
        req.seed = as_int(d.get("seed"), "seed")
        limit = d.get("max_completion_tokens")
        req.max_tokens = as_int(d.get("max_tokens") if limit is None else limit, "max_tokens")
        if d.get("reasoning_effort") == "none":
            req.thinking = False
        return req

    def success(self, req: ParsedRequest, done: Completion, request_id: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": done.text,
            "refusal": None,
            "annotations": [],
        }
        if done.reasoning_text is not None:
            # Not part of OpenAI's schema: what vLLM-style servers send; the SDK keeps extras.
            message["reasoning_content"] = done.reasoning_text
        return {
            "id": f"chatcmpl-{request_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": done.finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": done.input_tokens,
                "completion_tokens": done.output_tokens,
                "total_tokens": done.input_tokens + done.output_tokens,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": done.reasoning_tokens,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_evalfleet_sim",
        }


class Responses(_OpenAIBase):
    route = "openai.responses"

    def parse(self, body: Any, match_info: Mapping[str, str]) -> ParsedRequest:
        d = _body(body)
        req = ParsedRequest(model=d["model"], prompt_text=None)
        instructions = d.get("instructions")
        if isinstance(instructions, str):
            req.text_chars += len(instructions)
        items = d.get("input")
        if isinstance(items, str):
            req.text_chars += len(items)
            req.prompt_text = items
        elif isinstance(items, list):
            read_turns(req, items, "input", _RESPONSES)
        else:
            raise BadRequest("input: expected a string or an array of items", "input")
        req.seed = as_int(d.get("seed"), "seed")  # not an OpenAI parameter; extra_body only
        req.max_tokens = as_int(d.get("max_output_tokens"), "max_output_tokens")
        reasoning = d.get("reasoning")
        if isinstance(reasoning, dict) and reasoning.get("effort") == "none":
            req.thinking = False
        return req

    def success(self, req: ParsedRequest, done: Completion, request_id: str) -> dict[str, Any]:
        incomplete = done.finish == "length"
        output: list[dict[str, Any]] = []
        if done.reasoning_text is not None:
            output.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{request_id}",
                    "summary": [{"type": "summary_text", "text": done.reasoning_text}],
                }
            )
        output.append(
            {
                "type": "message",
                "id": f"msg_{request_id}",
                "role": "assistant",
                "status": "incomplete" if incomplete else "completed",
                "content": [{"type": "output_text", "text": done.text, "annotations": []}],
            }
        )
        return {
            "id": f"resp_{request_id}",
            "object": "response",
            "created_at": int(time.time()),
            "model": req.model,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "error": None,
            "instructions": None,
            "max_output_tokens": req.max_tokens,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": done.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": done.output_tokens,
                "output_tokens_details": {"reasoning_tokens": done.reasoning_tokens},
                "total_tokens": done.input_tokens + done.output_tokens,
            },
        }


def model_object(model: str, profile: Any = None) -> dict[str, Any]:
    """A model entry; with what the profile says of it (vLLM's max_model_len, a gateway's
    input_modalities) when configured."""
    body = {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": "evalfleet-sim"}
    if profile is not None and profile.max_model_len is not None:
        body["max_model_len"] = profile.max_model_len
    if profile is not None and profile.input_modalities is not None:
        body["input_modalities"] = list(profile.input_modalities)
    return body


def models_list(models: list[str], profiles: Any = None) -> dict[str, Any]:
    data = [model_object(m, profiles.get(m) if profiles else None) for m in models]
    return {"object": "list", "data": data}


def not_found(message: str, request_id: str) -> Failure:
    return ChatCompletions().error("not_found", message, request_id)
