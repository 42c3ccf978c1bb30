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
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # AttributeError: a nested field that is no JSON object (`"usage": [1]`)
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
        # Checked field by field in loops rather than a call each: aggregation and the
        # read-back decode every record of a run (a million, for the largest).
        get = raw.get
        for name in _TEXTS:
            if type(raw[name]) is not str:
                _text(raw, name)  # raises, naming the field
        for name in _OPTIONAL_TEXTS:
            value = get(name)
            if value is not None and type(value) is not str:
                _text(raw, name, optional=True)
        epoch = raw.get("epoch")
        if type(epoch) is not int:
            _integer(epoch, "epoch")
        usage = get("usage")
        if usage:
            for name, value in usage.items():
                if type(value) is not int:
                    _integer(value, name)
        cost_usd = get("cost_usd")
        if cost_usd is not None:
            cost_usd = _usd(cost_usd, "cost_usd")
        cost = get("cost")
        if cost:
            cost = {name: _usd(value, f"cost.{name}") or 0.0 for name, value in cost.items()}
        graded, error, request = get("graded"), get("error"), get("request")
        return cls(
            run_id=get("run_id") or "",
            stage=get("stage") or "answer",
            model=raw["model"],
            benchmark=raw["benchmark"],
            sample_id=raw["sample_id"],
            epoch=epoch,
            request_hash=get("request_hash") or "",
            judge_model=get("judge_model"),
            graded=Graded(**graded) if graded else None,
            provider=get("provider"),
            api_model=get("api_model"),
            model_reported=get("model_reported"),
            request=Decoding(**request) if request else _NO_DECODING,
            response=get("response"),
            reasoning=get("reasoning"),
            finish_reason=get("finish_reason"),
            usage=Usage(**usage) if usage else None,
            cost_usd=cost_usd,
            cost=Cost(**cost) if cost else None,
            latency_s=get("latency_s"),
            attempts=int(get("attempts") or 1),
            attempt_errors=tuple(CallError(**e) for e in get("attempt_errors") or ()),
            request_id=get("request_id"),
            started_at=get("started_at"),
            finished_at=get("finished_at"),
            error=CallError(**error) if error else None,
            batch=get("batch"),
            record_version=int(get("record_version") or RECORD_VERSION),
        )


_TEXTS = ("model", "benchmark", "sample_id")
_OPTIONAL_TEXTS = (
    "run_id",
    "stage",
    "request_hash",
    "judge_model",
    "provider",
    "api_model",
    "model_reported",
    "response",
    "reasoning",
    "finish_reason",
    "request_id",
    "started_at",
    "finished_at",
)
_NO_DECODING = Decoding()


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
    if type(value) is float and 0.0 <= value < math.inf:  # the usual case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is {type(value).__name__}, not a number of USD")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} is {value}, not a cost")
    return float(value)
