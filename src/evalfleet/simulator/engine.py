"""The protocol-neutral request pipeline: parse, count the attempt, rate-limit, inject faults,
wait, answer, log. One ``Simulator`` holds all mutable server state (the batch store too;
batch lines are answered by ``Simulator.complete``, as online requests are)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from dataclasses import replace
from typing import Any

from aiohttp import web

from evalfleet.simulator import answering
from evalfleet.simulator.answering import AnswerKey, estimate_tokens, prompt_sha256
from evalfleet.simulator.batches import BatchStore
from evalfleet.simulator.config import Faults, ModelProfile, ProfileCache, SimulatorConfig
from evalfleet.simulator.faults import AttemptCounter, LatencySampler, fault_draw, pick_fault
from evalfleet.simulator.protocol import (
    BadRequest,
    Completion,
    ErrorKind,
    LimitState,
    ParsedRequest,
    Protocol,
    reported,
    retry_after_headers,
)
from evalfleet.simulator.ratelimit import RateLimiter
from evalfleet.simulator.reqlog import RequestLog, blank_entry

_FAULT_ERRORS: dict[str, tuple[ErrorKind, str]] = {
    "http_500": ("server_error", "The server had an error while processing your request."),
    "http_503": ("unavailable", "The service is temporarily unavailable."),
    "http_529": ("overloaded", "Overloaded"),
}
DEFAULT_OUTPUT_LIMIT = 16_000  # what an `empty_length` answer spends when none was asked for
_FAIL_FIRST_KINDS: dict[int, ErrorKind] = {
    429: "rate_limited",
    500: "server_error",
    503: "unavailable",
    529: "overloaded",
}


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    out = {"Content-Type": "application/json"}
    if headers:
        out.update(headers)
    return web.Response(status=status, body=_dumps(body), headers=out)


class Simulator:
    def __init__(
        self, config: SimulatorConfig, key: AnswerKey, log_path: str | None = None
    ) -> None:
        self.config = config
        self.key = key
        self.profiles = ProfileCache(config)
        self.limiter = RateLimiter()
        self.attempts = AttemptCounter()
        self.latency = LatencySampler(config.seed)
        self.log = RequestLog(log_path)
        self.batches = BatchStore(config.batch)
        self._id_prefix = f"sim{secrets.token_hex(3)}"
        self._id_counter = 0
        self._stopping: asyncio.Event | None = None
        self.in_flight = 0  # model requests received and not yet answered

    # -- lifecycle -------------------------------------------------------------------------
    def stopping_event(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    def reset(self) -> None:
        """Forget rate-limit windows and attempt counts (between tests on a shared server)."""
        self.limiter.reset()
        self.attempts.reset()

    def next_request_id(self) -> str:
        self._id_counter += 1
        return f"req_{self._id_prefix}{self._id_counter:06x}"

    # -- the pipeline ----------------------------------------------------------------------
    async def handle(self, proto: Protocol, request: web.Request) -> web.Response:
        started = time.monotonic()
        rid = self.next_request_id()
        entry = new_entry(proto.route, rid, request)
        self.in_flight += 1
        try:
            response = await self._process(proto, request, rid, entry)
            entry["status"] = response.status
            return response
        finally:
            self.in_flight -= 1
            entry["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
            self.log.write(entry)

    def _fail(
        self,
        proto: Protocol,
        entry: dict[str, Any],
        rid: str,
        kind: ErrorKind,
        message: str,
        outcome: str | None = None,
        limits: LimitState | None = None,
        retry_after_ms: int | None = None,
    ) -> web.Response:
        status, body, headers = proto.error(kind, message, rid, limits)
        if retry_after_ms is not None:
            for name, value in retry_after_headers(retry_after_ms / 1000).items():
                headers.setdefault(name, value)
        entry["outcome"] = outcome or kind
        return json_response(status, body, headers)

    async def _process(
        self, proto: Protocol, request: web.Request, rid: str, entry: dict[str, Any]
    ) -> web.Response:
        entry["auth"] = auth = proto.auth_present(request.headers, request.query)
        if self.config.require_auth and not auth:
            message = "No API key provided. Pass it in the Authorization header."
            return self._fail(proto, entry, rid, "unauthorized", message)
        try:
            raw = await request.read()
            body = json.loads(raw)
        except ValueError:
            return self._fail(proto, entry, rid, "bad_request", "The body is not valid JSON.")
        try:
            req = proto.parse(body, request.match_info)
        except BadRequest as err:
            return self._fail(proto, entry, rid, "bad_request", err.message)

        sha = None if req.prompt_text is None else prompt_sha256(req.prompt_text)
        entry.update(model=req.model, prompt_sha256=sha, seed=req.seed, max_tokens=req.max_tokens)
        profile = self.profiles.get(req.model)
        n = self.attempts.next(hash((proto.route, req.model, sha, req.seed, req.max_tokens)))
        entry["n"] = n
        done = self.complete(req, sha, profile)
        entry.update(input_tokens=done.input_tokens, output_tokens=done.output_tokens)

        limits = None
        if profile.requests_per_minute is not None or profile.tokens_per_minute is not None:
            ok, limits = self.limiter.check(
                req.model,
                profile.requests_per_minute,
                profile.tokens_per_minute,
                done.input_tokens + done.output_tokens,
                time.monotonic(),
            )
            if not ok:
                message = _limit_message(req.model, limits)
                return self._fail(proto, entry, rid, "rate_limited", message, limits=limits)

        faults = profile.faults
        delay = self.latency.seconds(profile.latency, done.output_tokens)
        if n < faults.fail_first_n:
            await asyncio.sleep(delay)
            return self._fail_first(proto, entry, rid, faults, n, limits)

        fault = None
        if profile.has_fault_rates:
            fault = pick_fault(faults, fault_draw(self.config.seed, req.model, sha, req.seed, n))
        if fault == "hang":
            entry["outcome"] = "hang"
            await self._hang(faults.hang_s)
            return self._fail(proto, entry, rid, "timeout", "Deadline exceeded.", "hang")
        if delay > 0:
            await asyncio.sleep(delay)
        if fault in _FAULT_ERRORS:
            kind, message = _FAULT_ERRORS[fault]
            return self._fail(proto, entry, rid, kind, message, fault, None, faults.retry_after_ms)
        if fault == "malformed_json":
            entry["outcome"] = fault
            headers = {"Content-Type": "application/json", **proto.headers(rid, limits)}
            return web.Response(status=200, body=proto.malformed(rid), headers=headers)
        if fault == "empty_content":
            done = replace(
                done,
                text="",
                output_tokens=done.reasoning_tokens,
                finish="stop",
                correct=None if done.correct is None else False,
            )
        elif fault == "truncate":
            done = _truncate(done, len(done.text) // 2)
        elif fault == "empty_length":
            spent = req.max_tokens or DEFAULT_OUTPUT_LIMIT
            done = replace(
                done,
                text="",
                reasoning_text=None,
                output_tokens=spent,
                reasoning_tokens=spent,
                finish="length",
                correct=None if done.correct is None else False,
            )
        entry["outcome"] = fault or ("length" if done.finish == "length" else "ok")
        entry.update(output_tokens=done.output_tokens, correct=done.correct)
        body = reported(proto.success(req, done, rid), profile)
        if fault in ("no_usage", "negative_usage"):
            body = proto.usage_faulted(body, fault)
        return json_response(200, body, proto.headers(rid, limits))

    def _fail_first(
        self,
        proto: Protocol,
        entry: dict[str, Any],
        rid: str,
        faults: Faults,
        n: int,
        limits: LimitState | None,
    ) -> web.Response:
        kind = _FAIL_FIRST_KINDS[faults.fail_first_status]
        retry_ms = faults.retry_after_ms
        fake_limits = None
        if kind == "rate_limited":
            fake_limits = _fake_limits(limits, 1000 if retry_ms is None else retry_ms)
        message = f"Simulated failure of attempt {n + 1} of {faults.fail_first_n}."
        return self._fail(proto, entry, rid, kind, message, "fail_first", fake_limits, retry_ms)

    def complete(self, req: ParsedRequest, sha: str | None, profile: ModelProfile) -> Completion:
        """The model's answer with usage, cut to the request's output-token limit."""
        thinking = profile.thinking and req.thinking is not False
        ans = answering.answer(
            self.key,
            req.model,
            sha,
            req.seed,
            accuracy=profile.accuracy,
            thinking=thinking,
            reasoning_tokens=profile.reasoning_tokens,
            prompt=req.prompt_text,
            unformatted_rate=profile.unformatted_rate,
            images=req.images,
            blind_factor=self.config.blind_factor,
        )
        cfg = self.config
        input_tokens = (
            max(1, estimate_tokens(req.text_chars))
            + req.images * cfg.image_tokens
            + req.audios * cfg.audio_tokens
        )
        reasoning = ans.reasoning_tokens
        done = Completion(
            text=ans.text,
            reasoning_text=ans.reasoning_text,
            input_tokens=input_tokens,
            output_tokens=reasoning + estimate_tokens(len(ans.text)),
            reasoning_tokens=reasoning,
            finish="stop",
            correct=ans.correct,
        )
        limit = req.max_tokens
        if limit is not None and done.output_tokens > limit:
            reasoning = min(reasoning, limit)
            done = replace(done, reasoning_tokens=reasoning, output_tokens=reasoning)
            done = _truncate(done, max(0, limit - reasoning) * 4)
        return done

    async def _hang(self, seconds: float) -> None:
        """Sleep past any sane client timeout, but end at once when the server stops."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping_event().wait(), seconds)


def new_entry(route: str, rid: str, request: web.Request) -> dict[str, Any]:
    """A request-log line with every field present; the handler fills it in."""
    retry_header = request.headers.get("x-stainless-retry-count")
    attempt = int(retry_header) if retry_header and retry_header.isdigit() else None
    return blank_entry(route, rid, attempt)


def _truncate(done: Completion, chars: int) -> Completion:
    """Cut the visible text; the final answer at its end is lost, so it is no longer correct."""
    text = done.text[:chars]
    return replace(
        done,
        text=text,
        output_tokens=done.reasoning_tokens + estimate_tokens(len(text)),
        finish="length",
        correct=None if done.correct is None else False,
    )


def _limit_message(model: str, limits: LimitState) -> str:
    if limits.limited_by == "requests":
        what, limit = "requests per min (RPM)", limits.requests_limit
    else:
        what, limit = "tokens per min (TPM)", limits.tokens_limit
    wait = f"{limits.retry_after_s:.3f}".rstrip("0").rstrip(".")
    return f"Rate limit reached for {model} on {what}: Limit {limit}. Please try again in {wait}s."


def _fake_limits(limits: LimitState | None, retry_ms: int) -> LimitState:
    """Limit state for a simulated (fail-first) 429."""
    if limits is not None:
        return replace(limits, retry_after_s=retry_ms / 1000, limited_by="requests")
    return LimitState(
        requests_limit=None,
        requests_remaining=0,
        requests_reset_s=retry_ms / 1000,
        tokens_limit=None,
        tokens_remaining=0,
        tokens_reset_s=retry_ms / 1000,
        retry_after_s=retry_ms / 1000,
        limited_by="requests",
    )
