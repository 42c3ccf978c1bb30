"""Batch jobs, protocol-neutral: the store (OpenAI files and every provider's batches, in memory
and, with ``batch.state_path``, in a JSON file a restarted simulator reads back), the batch clock,
each batch's lifecycle, and answering one line through the online engine.

Lifecycle. A batch of ``n`` lines created at ``t0`` has line ``i`` due at
``t0 + completion_s * (i + 1) / n``; nothing runs in the background: every call that touches a
batch (retrieve, list, cancel, results) first brings it up to the clock's present, answering the
lines due by then in input order. Then:

- all lines answered and ``finalize_s`` more passed: the batch ends ``completed``;
- ``expire_after_s`` passed before all were due: it ends ``expired`` at ``t0 + expire_after_s``;
  the lines due by then keep their answers, the others are ``expired``;
- a cancel: the lines due by the cancel keep their answers, the others are ``cancelled``, and
  the batch ends at once (the cancel call's own answer still says cancelling/canceling).

The create call itself answers nothing, so with ``completion_s: 0`` a batch completes at the
first call that touches it (a cancel then finds it completed and changes nothing). The clock
is wall time plus an offset (``POST /_sim/batches/advance``), so a test can make a day pass.

Each line is answered like the online route (parse, ``Simulator.complete``, the protocol's
success body), never twice, and logged once under the provider's line route
(``openai.batch``, ``anthropic.batch``, ``gemini.batch``) with the batch id and custom id;
cancelled and expired lines are logged too (status ``null``, outcome ``cancelled`` or
``expired``). Per-model faults, latency and rate limits do not apply to lines; instead a line
fails with a 500 when ``batch_line_draw`` (seeded, per request content and attempt) falls under
``batch.line_failure_rate``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from evalfleet.simulator.answering import prompt_sha256
from evalfleet.simulator.config import BatchConfig, ConfigError
from evalfleet.simulator.faults import batch_line_draw
from evalfleet.simulator.protocol import BadRequest, ParsedRequest, Protocol, reported
from evalfleet.simulator.reqlog import blank_entry

if TYPE_CHECKING:
    from evalfleet.simulator.config import ModelProfile, ProfileCache, SimulatorConfig
    from evalfleet.simulator.protocol import Completion
    from evalfleet.simulator.reqlog import RequestLog


class Simulator(typing.Protocol):
    """What answering a batch line needs of the simulator (`simulator.engine.Simulator`)."""

    config: SimulatorConfig
    profiles: ProfileCache
    log: RequestLog
    batches: BatchStore

    def next_request_id(self) -> str: ...

    def complete(
        self, req: ParsedRequest, sha: str | None, profile: ModelProfile
    ) -> Completion: ...


STATE_VERSION = 1
FATES = ("succeeded", "errored", "cancelled", "expired")
END_STATES = ("completed", "expired", "cancelled", "failed")


@dataclass
class Line:
    custom_id: str
    request: dict[str, Any]  # the provider's request body (OpenAI body, Anthropic params, ...)
    meta: Any = None  # returned with the answer (Gemini's per-request metadata)
    fate: str | None = None  # None while pending, else one of FATES
    status: int | None = None  # HTTP status of the answer (succeeded/errored only)
    body: dict[str, Any] | None = None  # the provider's success or error body
    request_id: str | None = None
    usage: list[int] | None = None  # [input, output, reasoning] tokens of a success
    done_at: float | None = None


@dataclass
class Batch:
    id: str
    provider: str  # "openai", "anthropic", "gemini"
    created_at: float
    completion_s: float
    finalize_s: float
    expire_after_s: float
    lines: list[Line]
    info: dict[str, Any] = field(default_factory=dict)  # provider fields (endpoint, metadata...)
    seq: int = 0  # creation order, for equal created_at
    cancel_at: float | None = None
    ended_at: float | None = None
    end_state: str | None = None  # one of END_STATES once ended
    errors: list[dict[str, Any]] | None = None  # why it failed validation (OpenAI)

    @property
    def ended(self) -> bool:
        return self.end_state is not None

    @property
    def all_done_at(self) -> float:
        return self.created_at + self.completion_s

    @property
    def expires_at(self) -> float:
        return self.created_at + self.expire_after_s

    def due(self, index: int) -> float:
        return self.created_at + self.completion_s * (index + 1) / max(1, len(self.lines))

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(FATES, 0)
        out["pending"] = 0
        for line in self.lines:
            out[line.fate or "pending"] += 1
        return out

    def finalizing(self) -> bool:
        """All lines answered, not yet ended."""
        return not self.ended and all(line.fate is not None for line in self.lines)

    def usage(self) -> tuple[int, int, int]:
        totals = [0, 0, 0]
        for line in self.lines:
            if line.usage:
                for k in range(3):
                    totals[k] += line.usage[k]
        return totals[0], totals[1], totals[2]


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    created_at: float
    data: bytes


def shuffled(batch: Batch, lines: Iterable[Line]) -> list[Line]:
    """Lines in a fixed order that is not the input order (as the providers warn: match on
    custom_id)."""
    return sorted(
        lines, key=lambda x: hashlib.sha256(f"{batch.id}\n{x.custom_id}".encode()).digest()
    )


class BatchStore:
    """Files and batches of all providers; the batch clock; persistence."""

    def __init__(self, config: BatchConfig) -> None:
        self.config = config
        self.path = Path(config.state_path) if config.state_path else None
        self.offset = 0.0
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, Batch] = {}
        self.attempts: dict[str, int] = {}
        self._seq = 0
        if self.path is not None and self.path.exists():
            self._load(self.path)

    # -- clock -----------------------------------------------------------------------------
    def now(self) -> float:
        return time.time() + self.offset

    def advance_clock(self, seconds: float) -> None:
        self.offset += seconds
        self.save()

    # -- ids and records ---------------------------------------------------------------------
    def new_batch(
        self,
        provider: str,
        batch_id: str,
        lines: list[Line],
        info: dict[str, Any],
        errors: list[dict[str, Any]] | None = None,
    ) -> Batch:
        self._seq += 1
        cfg = self.config
        batch = Batch(
            id=batch_id,
            provider=provider,
            created_at=self.now(),
            completion_s=cfg.completion_s,
            finalize_s=cfg.finalize_s,
            expire_after_s=cfg.expire_after_s,
            lines=lines,
            info=info,
            seq=self._seq,
            errors=errors,
        )
        if errors:
            batch.end_state, batch.ended_at = "failed", batch.created_at
        self.batches[batch_id] = batch
        self.save()
        return batch

    def get(self, provider: str, batch_id: str) -> Batch | None:
        batch = self.batches.get(batch_id)
        return batch if batch is not None and batch.provider == provider else None

    def newest_first(self, provider: str) -> list[Batch]:
        found = [b for b in self.batches.values() if b.provider == provider]
        return sorted(found, key=lambda b: (b.created_at, b.seq), reverse=True)

    def add_file(
        self, filename: str, purpose: str, data: bytes, created_at: float | None = None
    ) -> StoredFile:
        file = StoredFile(
            id=f"file-{secrets.token_hex(12)}",
            filename=filename,
            purpose=purpose,
            created_at=self.now() if created_at is None else created_at,
            data=data,
        )
        self.files[file.id] = file
        self.save()
        return file

    def next_attempt(self, key: str) -> int:
        n = self.attempts.get(key, 0)
        self.attempts[key] = n + 1
        return n

    # -- lifecycle ---------------------------------------------------------------------------
    def advance(self, batch: Batch, kind: BatchKind, sim: Simulator) -> None:
        """Bring ``batch`` up to the clock's present (see the module docstring)."""
        if batch.ended:
            return
        now = self.now()
        cutoff = now if batch.cancel_at is None else min(now, batch.cancel_at)
        expiring = batch.expires_at <= cutoff and batch.all_done_at > batch.expires_at
        if expiring:
            cutoff = batch.expires_at
        changed = False
        for i, line in enumerate(batch.lines):
            if line.fate is None and batch.due(i) <= cutoff:
                kind.answer(sim, batch, line)
                line.done_at = batch.due(i)
                changed = True
        end: tuple[str, float] | None = None
        if batch.cancel_at is not None:
            end = ("cancelled", batch.cancel_at)
        elif expiring:
            end = ("expired", batch.expires_at)
        elif batch.finalizing() and now >= batch.all_done_at + batch.finalize_s:
            end = ("completed", batch.all_done_at + batch.finalize_s)
        if end is not None:
            fate = "expired" if end[0] == "expired" else "cancelled"
            for line in batch.lines:
                if line.fate is None:
                    kind.close(sim, batch, line, fate)
            batch.end_state, batch.ended_at = end
            kind.on_end(self, batch)
            changed = True
        if changed:
            self.save()

    def cancel(self, batch: Batch, kind: BatchKind, sim: Simulator) -> bool:
        """Cancel ``batch`` unless it has ended; True if this call cancelled it."""
        self.advance(batch, kind, sim)
        if batch.ended:
            return False
        batch.cancel_at = self.now()
        self.advance(batch, kind, sim)
        return True

    # -- persistence -------------------------------------------------------------------------
    def save(self) -> None:
        if self.path is None:
            return
        state = {
            "version": STATE_VERSION,
            "offset": self.offset,
            "seq": self._seq,
            "attempts": self.attempts,
            "files": [
                {**asdict(f), "data": base64.b64encode(f.data).decode()}
                for f in self.files.values()
            ],
            "batches": [asdict(b) for b in self.batches.values()],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.path)

    def _load(self, path: Path) -> None:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            if state.get("version") != STATE_VERSION:
                raise ValueError(f"unknown version {state.get('version')!r}")
            self.offset = float(state["offset"])
            self._seq = int(state["seq"])
            self.attempts = {str(k): int(v) for k, v in state["attempts"].items()}
            for f in state["files"]:
                stored = StoredFile(**{**f, "data": base64.b64decode(f["data"])})
                self.files[stored.id] = stored
            for b in state["batches"]:
                lines = [Line(**x) for x in b.pop("lines")]
                batch = Batch(**b, lines=lines)
                self.batches[batch.id] = batch
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"cannot read batch state {path}: {err}") from None


class BatchKind:
    """One provider's batch lines: which protocol answers them and how they are logged.
    Subclasses set ``provider`` and ``route`` and may refine the hooks."""

    provider = ""
    route = ""  # the request-log route of one line

    def protocol(self, batch: Batch) -> tuple[Protocol, dict[str, str]]:
        """The online protocol that answers this batch's lines, and its URL match info."""
        raise NotImplementedError

    def public_id(self, batch_id: str) -> str:
        """The batch id as clients see it (and the request log records it)."""
        return batch_id

    def decorate(self, body: dict[str, Any]) -> dict[str, Any]:
        """Adjust a success body for the batch tier."""
        return body

    def on_end(self, store: BatchStore, batch: Batch) -> None:
        """Called once when the batch ends (OpenAI writes its output files here)."""

    # -- management calls --------------------------------------------------------------------
    def find(self, sim: Simulator, batch_id: str, entry: dict[str, Any]) -> Batch | None:
        """The batch of this provider a call names; its id (as clients see it) and model go in
        the call's log entry."""
        entry["batch_id"] = self.public_id(batch_id)
        batch = sim.batches.get(self.provider, batch_id)
        if batch is not None:
            entry["model"] = batch.info.get("model")
        return batch

    def cancel(self, sim: Simulator, batch: Batch, entry: dict[str, Any]) -> bool:
        """Cancel ``batch`` unless it has ended (the log entry says which); True if cancelled."""
        cancelled = sim.batches.cancel(batch, self, sim)
        entry["outcome"] = "ok" if cancelled else "already_ended"
        return cancelled

    # -- answering ---------------------------------------------------------------------------
    def _entry(self, batch: Batch, line: Line, rid: str | None) -> dict[str, Any]:
        entry = blank_entry(self.route, rid)
        batch_id = self.public_id(batch.id)
        entry.update(batch_id=batch_id, custom_id=line.custom_id, auth=True, latency_ms=0.0)
        return entry

    def _parse(self, batch: Batch, line: Line) -> tuple[Protocol, ParsedRequest | BadRequest]:
        proto, match_info = self.protocol(batch)
        try:
            return proto, proto.parse(line.request, match_info)
        except BadRequest as err:
            return proto, err

    def answer(self, sim: Simulator, batch: Batch, line: Line) -> None:
        """Answer one line as the online route would, or fail it; log it."""
        rid = sim.next_request_id()
        entry = self._entry(batch, line, rid)
        proto, req = self._parse(batch, line)
        line.request_id = rid
        if isinstance(req, BadRequest):
            status, body, _ = proto.error("bad_request", req.message, rid)
            line.fate, line.status, line.body = "errored", status, body
            entry.update(status=status, outcome="bad_request")
            sim.log.write(entry)
            return
        sha = None if req.prompt_text is None else prompt_sha256(req.prompt_text)
        entry.update(model=req.model, prompt_sha256=sha, seed=req.seed, max_tokens=req.max_tokens)
        n = sim.batches.next_attempt(
            f"{self.route}\n{req.model}\n{sha}\n{req.seed}\n{req.max_tokens}"
        )
        entry["n"] = n
        rate = sim.config.batch.line_failure_rate
        if rate and batch_line_draw(sim.config.seed, req.model, sha, req.seed, n) < rate:
            message = "The server had an error while processing your request."
            status, body, _ = proto.error("server_error", message, rid)
            line.fate, line.status, line.body = "errored", status, body
            entry.update(status=status, outcome="server_error")
            sim.log.write(entry)
            return
        profile = sim.profiles.get(req.model)
        done = sim.complete(req, sha, profile)
        line.fate, line.status = "succeeded", 200
        line.body = self.decorate(reported(proto.success(req, done, rid), profile))
        line.usage = [done.input_tokens, done.output_tokens, done.reasoning_tokens]
        entry.update(
            status=200,
            outcome="length" if done.finish == "length" else "ok",
            correct=done.correct,
            input_tokens=done.input_tokens,
            output_tokens=done.output_tokens,
        )
        sim.log.write(entry)

    def close(self, sim: Simulator, batch: Batch, line: Line, fate: str) -> None:
        """A line that will never be answered (cancelled or expired); logged, not answered."""
        line.fate = fate
        entry = self._entry(batch, line, None)
        _, req = self._parse(batch, line)
        if isinstance(req, ParsedRequest):
            sha = None if req.prompt_text is None else prompt_sha256(req.prompt_text)
            entry.update(
                model=req.model, prompt_sha256=sha, seed=req.seed, max_tokens=req.max_tokens
            )
        entry.update(status=None, outcome=fate)
        sim.log.write(entry)


# -- management calls ------------------------------------------------------------------------
Handler = Callable[[str, dict[str, Any]], Awaitable[web.Response]]

_OUTCOMES = {200: "ok", 400: "bad_request", 401: "unauthorized", 404: "not_found"}


async def managed(
    sim: Simulator,
    request: web.Request,
    route: str,
    proto: Protocol,
    handler: Handler,
    unauthorized: Callable[[str], web.Response],
) -> web.Response:
    """Run one batch-management call: check the key, call ``handler(request_id, log_entry)``
    (which may add ``batch_id``, ``model``... to the entry), log one line."""
    started = time.monotonic()
    rid = sim.next_request_id()
    retry_header = request.headers.get("x-stainless-retry-count")
    attempt = int(retry_header) if retry_header and retry_header.isdigit() else None
    entry = blank_entry(route, rid, attempt)
    entry["batch_id"] = None
    entry["auth"] = auth = proto.auth_present(request.headers, request.query)
    try:
        if sim.config.require_auth and not auth:
            response = unauthorized(rid)
        else:
            response = await handler(rid, entry)
        entry["status"] = response.status
        if entry["outcome"] == "client_closed":
            entry["outcome"] = _OUTCOMES.get(response.status, "error")
        return response
    finally:
        entry["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
        sim.log.write(entry)


def bounded_int(value: str | None, default: int, low: int, high: int, name: str) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer", name) from None
    if not low <= number <= high:
        raise BadRequest(f"{name}: must be between {low} and {high}", name)
    return number


def read_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise BadRequest("The body is not valid JSON.") from None


def jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in records
    )
