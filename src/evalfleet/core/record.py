"""The checkpoint record of one work item (an answer or a judgement): the one contract for
its bytes. Every reader takes a `Record` and reads attributes; only this module knows the
JSON. Written once per item, never with a secret in it.

Every attempt of a call is in its record's `ledger`: when it landed, its status, and for a
billed one (a 200, whatever its content) its usage and cost. The record's `usage` and `cost`
are the sums over its billed attempts, so an answer retried after an empty reply costs what
the provider billed for all of them. An attempt that is billed and then refused (an empty
answer, usage that cannot be trusted) is also written on its own (`LedgerEntry`) before the
next attempt is sent: a call whose process ended between attempts still shows what it cost.

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

from evalfleet.core.types import Decoding

RECORD_VERSION = 3  # 3: the per-attempt ledger and the call id
STAGES = ("answer", "judge")


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
class Attempt:
    """One attempt of a call. `usage` is None for an attempt that was not billed (a refusal,
    a server error, a timeout); `estimated` marks usage counted locally by the provider's
    token rules because the provider reported none, or none that could be trusted."""

    number: int  # 1 for the first attempt
    outcome: str  # "answer", or the error kind that ended the attempt
    at: str | None = None  # when it landed
    latency_s: float | None = None
    status: int | None = None  # the HTTP status, None where no answer came
    request_id: str | None = None
    message: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    cost: Cost | None = None
    estimated: bool = False

    @property
    def billed(self) -> bool:
        return self.usage is not None

    @property
    def cost_usd(self) -> float:
        return self.cost.total if self.cost is not None else 0.0


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
    system_fingerprint: str | None = None  # OpenAI chat's backend configuration, where sent
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
    call_id: str | None = None  # names the call's ledger entries (`LedgerEntry`)
    ledger: tuple[Attempt, ...] = ()  # every attempt, in order (records before version 3: none)
    # the run whose stored answer this is, copied by `run --reuse-from` (None: asked here)
    reused_from: str | None = None
    record_version: int = RECORD_VERSION

    @property
    def reported_version(self) -> str | None:
        """What the provider said answered: its model id, with OpenAI's `system_fingerprint`
        where one came ("gpt-4o-2024-08-06 fp_abc"); None when it said nothing."""
        words = [w for w in (self.model_reported, self.system_fingerprint) if w]
        return " ".join(words) or None

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

    @property
    def billed_attempts(self) -> int:
        """Attempts the provider billed (a record before the ledger: its one answer, if any)."""
        if not self.ledger:
            return 0 if self.usage is None else 1
        return sum(1 for attempt in self.ledger if attempt.usage is not None)

    @property
    def retry_cost_usd(self) -> float:
        """What the billed attempts before the last one cost: retries of empty answers."""
        billed = [a for a in self.ledger if a.usage is not None]
        return sum(a.cost_usd for a in billed[:-1])

    @property
    def cost_estimated(self) -> bool:
        """Some of its cost comes from locally counted tokens, not the provider's usage."""
        return any(attempt.estimated for attempt in self.ledger)

    @property
    def estimated_cost_usd(self) -> float:
        """The part of its cost priced on locally counted tokens."""
        return sum(attempt.cost_usd for attempt in self.ledger if attempt.estimated)

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict's deep copy costs more than the record's JSON,
        # on a worker's path for every answer
        usage, cost, graded, error = self.usage, self.cost, self.graded, self.error
        out = {
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
            "usage": None if usage is None else usage_dict(usage),
            "cost_usd": self.cost_usd,
            "cost": None if cost is None else _cost_dict(cost),
            "latency_s": self.latency_s,
            "attempts": self.attempts,
            "attempt_errors": [_error_dict(e) for e in self.attempt_errors],
            "request_id": self.request_id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": None if error is None else _error_dict(error),
            "batch": self.batch,
        }
        if self.record_version >= 3:  # a record read in an older format is written back as read
            out["call_id"] = self.call_id
            out["ledger"] = [_attempt_dict(a) for a in self.ledger]
        if self.system_fingerprint is not None:  # only when sent: other records stay as they were
            out["system_fingerprint"] = self.system_fingerprint
        if self.reused_from is not None:  # written only when set: other records stay as they were
            out["reused_from"] = self.reused_from
        return out

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
        epoch = epoch if type(epoch) is int else _integer(epoch, "epoch")
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
        stage = get("stage") or "answer"
        if stage not in STAGES:
            raise ValueError(f"stage is {stage!r}, not one of {', '.join(STAGES)}")
        version = get("record_version")
        if version is not None and (type(version) is not int or not 1 <= version <= RECORD_VERSION):
            raise ValueError(f"record_version is {version!r}, not 1 to {RECORD_VERSION}")
        ledger = get("ledger")
        return cls(
            run_id=get("run_id") or "",
            stage=stage,
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
            system_fingerprint=get("system_fingerprint"),
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
            call_id=get("call_id"),
            ledger=tuple(_attempt_of(a) for a in ledger) if ledger else (),
            reused_from=get("reused_from"),
            record_version=version or RECORD_VERSION,
        )


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A billed attempt that was refused (an empty answer, usage that cannot be trusted),
    stored on its own before the next attempt is sent (`evalfleet.storage.layout.ledger_key`). The
    record of the call lists it again; an entry whose call never stored a record is what a
    call ended between attempts cost."""

    run_id: str
    stage: str
    judge_model: str | None
    model: str
    benchmark: str
    sample_id: str
    epoch: int
    request_hash: str
    call_id: str
    attempt: Attempt

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "record_version": RECORD_VERSION,
                "run_id": self.run_id,
                "stage": self.stage,
                "judge_model": self.judge_model,
                "model": self.model,
                "benchmark": self.benchmark,
                "sample_id": self.sample_id,
                "epoch": self.epoch,
                "request_hash": self.request_hash,
                "call_id": self.call_id,
                "attempt": _attempt_dict(self.attempt),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LedgerEntry:
        """The entry, or UnreadableRecord naming what is wrong with the bytes."""
        try:
            raw = json.loads(data)
            if not isinstance(raw, dict):
                raise TypeError("not a JSON object")
            for name in ("run_id", "stage", "model", "benchmark", "sample_id", "call_id"):
                _text(raw, name)
            if raw["stage"] not in STAGES:
                raise ValueError(f"stage is {raw['stage']!r}")
            return cls(
                run_id=raw["run_id"],
                stage=raw["stage"],
                judge_model=_text(raw, "judge_model", optional=True),
                model=raw["model"],
                benchmark=raw["benchmark"],
                sample_id=raw["sample_id"],
                epoch=_integer(raw.get("epoch"), "epoch"),
                request_hash=_text(raw, "request_hash", optional=True) or "",
                call_id=raw["call_id"],
                attempt=_attempt_of(raw["attempt"]),
            )
        except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
            raise UnreadableRecord(f"not a ledger entry ({exc})") from None


_TEXTS = ("model", "benchmark", "sample_id")
_OPTIONAL_TEXTS = (
    "run_id",
    "stage",
    "request_hash",
    "judge_model",
    "provider",
    "api_model",
    "model_reported",
    "system_fingerprint",
    "reused_from",
    "response",
    "reasoning",
    "finish_reason",
    "request_id",
    "started_at",
    "finished_at",
    "call_id",
)
_NO_DECODING = Decoding()


def _error_dict(error: CallError) -> dict[str, Any]:
    return {
        "type": error.type,
        "status": error.status,
        "message": error.message,
        "request_id": error.request_id,
    }


def usage_dict(usage: Usage) -> dict[str, int]:
    """Token counts as stored (and as the report's raw view shows them)."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
    }


def _cost_dict(cost: Cost) -> dict[str, float]:
    return {
        "input": cost.input,
        "cached_input": cost.cached_input,
        "output": cost.output,
        "reasoning": cost.reasoning,
        "total": cost.total,
    }


def _attempt_dict(attempt: Attempt) -> dict[str, Any]:
    usage, cost = attempt.usage, attempt.cost
    return {
        "number": attempt.number,
        "outcome": attempt.outcome,
        "at": attempt.at,
        "latency_s": attempt.latency_s,
        "status": attempt.status,
        "request_id": attempt.request_id,
        "message": attempt.message,
        "finish_reason": attempt.finish_reason,
        "usage": None if usage is None else usage_dict(usage),
        "cost": None if cost is None else _cost_dict(cost),
        "estimated": attempt.estimated,
    }


def _attempt_of(raw: Any) -> Attempt:
    """An attempt of the ledger, its numbers checked as a record's are (usage: integers at
    least 0; cost: finite USD at least 0)."""
    if not isinstance(raw, dict):
        raise TypeError(f"a ledger entry is {type(raw).__name__}, not an object")
    usage, cost = raw.get("usage"), raw.get("cost")
    if usage is not None:
        for name, value in usage.items():
            if _integer(value, name) < 0:
                raise ValueError(f"{name} is {value}, not a count of tokens")
    if cost is not None:
        cost = {name: _usd(value, f"cost.{name}") or 0.0 for name, value in cost.items()}
    number = raw.get("number")
    number = number if type(number) is int else _integer(number, "number")
    return Attempt(
        number=number,
        outcome=_text(raw, "outcome") or "",
        at=raw.get("at"),
        latency_s=raw.get("latency_s"),
        status=raw.get("status"),
        request_id=raw.get("request_id"),
        message=raw.get("message") or "",
        finish_reason=raw.get("finish_reason"),
        usage=Usage(**usage) if usage is not None else None,
        cost=Cost(**cost) if cost is not None else None,
        estimated=bool(raw.get("estimated")),
    )


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
