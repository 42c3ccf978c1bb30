"""The checkpoint record of one work item (an answer or a judgement): the one contract for
its bytes. Every reader takes a `Record` and reads attributes; only this module knows the
JSON. Written once per item, never with a secret in it.

Validation is what quarantine relies on: bytes that are not a record of this schema (cut
short, garbage, a field of the wrong type, a cost that is not a finite number of USD at
least 0) raise `UnreadableRecord`, so nothing downstream (a budget, a table, a bill) takes
them as truth. Records written before a field existed read with its default.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import orjson

from core.types import Decoding

RECORD_VERSION = 2


class UnreadableRecord(ValueError):
    """Bytes that are not a record (reported, set aside, asked again)."""


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0  # reasoning included, for every provider
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Cost:
    """USD by kind of token (`total` is `cost_usd`)."""

    input: float = 0.0
    cached_input: float = 0.0
    output: float = 0.0
    reasoning: float = 0.0
    total: float = 0.0


@dataclass(frozen=True, slots=True)
class CallError:
    """Why a call (or one attempt of it) failed."""

    type: str
    status: int | None = None
    message: str = ""
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Graded:
    """The stored answer a judgement grades, and the digest of the text it graded."""

    key: str
    response_sha256: str


@dataclass(frozen=True, slots=True)
class Record:
    run_id: str
    stage: str  # "answer" or "judge"
    model: str  # the evaluated model (of the graded answer, for a judgement)
    benchmark: str
    sample_id: str
    epoch: int
    request_hash: str
    judge_model: str | None = None
    graded: Graded | None = None
    provider: str | None = None
    api_model: str | None = None
    model_reported: str | None = None
    request: Decoding = Decoding()
    response: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None  # None in records written before costs were kept
    cost: Cost | None = None
    latency_s: float | None = None
    attempts: int = 1
    attempt_errors: tuple[CallError, ...] = ()
    request_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    error: CallError | None = None
    batch: dict[str, Any] | None = None  # the batch job that answered it, if one did
    record_version: int = RECORD_VERSION

    @property
    def failed(self) -> bool:
        """The call failed for good (the record holds its error)."""
        return self.error is not None

    @property
    def tokens(self) -> Usage:
        return self.usage or Usage()

    @property
    def spent_usd(self) -> float:
        return self.cost_usd or 0.0

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict's deep copy costs more than the record's JSON,
        # on a worker's path for every answer
        usage, cost, graded, error = self.usage, self.cost, self.graded, self.error
        return {
            "record_version": self.record_version,
            "run_id": self.run_id,
            "stage": self.stage,
            "judge_model": self.judge_model,
            "model": self.model,
            "benchmark": self.benchmark,
            "sample_id": self.sample_id,
            "epoch": self.epoch,
            "request_hash": self.request_hash,
            "graded": None
            if graded is None
            else {"key": graded.key, "response_sha256": graded.response_sha256},
            "provider": self.provider,
            "api_model": self.api_model,
            "model_reported": self.model_reported,
            "request": self.request.to_dict(),
            "response": self.response,
            "reasoning": self.reasoning,
            "finish_reason": self.finish_reason,
            "usage": None
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
            },
            "cost_usd": self.cost_usd,
            "cost": None
            if cost is None
            else {
                "input": cost.input,
                "cached_input": cost.cached_input,
                "output": cost.output,
                "reasoning": cost.reasoning,
                "total": cost.total,
            },
            "latency_s": self.latency_s,
            "attempts": self.attempts,
            "attempt_errors": [_error_dict(e) for e in self.attempt_errors],
            "request_id": self.request_id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": None if error is None else _error_dict(error),
            "batch": self.batch,
        }

    @classmethod
    def from_bytes(cls, data: bytes) -> Record:
        """The record, or UnreadableRecord naming what is wrong with the bytes."""
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError:
            # orjson refuses a little that json reads (NaN, integers past 64 bits): what
            # json reads is read, so a record never changes state with the parser
            try:
                raw = json.loads(data)
            except (ValueError, UnicodeDecodeError) as exc:
                raise UnreadableRecord(f"not JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise UnreadableRecord("not a JSON object")
        try:
            return cls._of(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise UnreadableRecord(f"not a record ({exc})") from None

    @classmethod
    def read(cls, data: bytes | None) -> Record | None:
        """The record, or None for missing or unreadable bytes."""
        if not data:
            return None
        try:
            return cls.from_bytes(data)
        except UnreadableRecord:
            return None

    @classmethod
    def _of(cls, raw: dict[str, Any]) -> Record:
        usage = raw.get("usage")
        cost = raw.get("cost")
        graded = raw.get("graded")
        error = raw.get("error")
        return cls(
            run_id=_text(raw, "run_id", optional=True) or "",
            stage=_text(raw, "stage", optional=True) or "answer",
            model=_text(raw, "model"),
            benchmark=_text(raw, "benchmark"),
            sample_id=_text(raw, "sample_id"),
            epoch=_integer(raw.get("epoch"), "epoch"),
            request_hash=_text(raw, "request_hash", optional=True) or "",
            judge_model=_text(raw, "judge_model", optional=True),
            graded=Graded(**graded) if graded else None,
            provider=_text(raw, "provider", optional=True),
            api_model=_text(raw, "api_model", optional=True),
            model_reported=_text(raw, "model_reported", optional=True),
            request=Decoding(**(raw.get("request") or {})),
            response=_text(raw, "response", optional=True),
            reasoning=_text(raw, "reasoning", optional=True),
            finish_reason=_text(raw, "finish_reason", optional=True),
            usage=Usage(**{k: _integer(v, k) for k, v in usage.items()}) if usage else None,
            cost_usd=_usd(raw.get("cost_usd"), "cost_usd"),
            cost=Cost(**{k: _usd(v, f"cost.{k}") or 0.0 for k, v in cost.items()})
            if cost
            else None,
            latency_s=raw.get("latency_s"),
            attempts=int(raw.get("attempts") or 1),
            attempt_errors=tuple(CallError(**e) for e in raw.get("attempt_errors") or ()),
            request_id=_text(raw, "request_id", optional=True),
            started_at=_text(raw, "started_at", optional=True),
            finished_at=_text(raw, "finished_at", optional=True),
            error=CallError(**error) if error else None,
            batch=raw.get("batch"),
            record_version=int(raw.get("record_version") or RECORD_VERSION),
        )


def _error_dict(error: CallError) -> dict[str, Any]:
    return {
        "type": error.type,
        "status": error.status,
        "message": error.message,
        "request_id": error.request_id,
    }


def _text(raw: dict[str, Any], name: str, optional: bool = False) -> str | None:
    value = raw.get(name) if optional else raw[name]
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} is {type(value).__name__}, not text")
    return value


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is {type(value).__name__}, not an integer")
    return value


def _usd(value: Any, name: str) -> float | None:
    """A stored cost: None (a record from before costs were kept) or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is {type(value).__name__}, not a number of USD")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} is {value}, not a cost")
    return float(value)
