"""The record of one work item, built from its call's attempts (`core.record` is the record
itself and the only code that knows its bytes).

A call's attempts are its ledger: each one as it landed, the billed ones (every 200, whatever
it held) with their usage and cost. The record's usage and cost are the ledger's sums, so what
the provider billed for retried empty answers is never lost.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evalfleet.core.record import Attempt, CallError, Cost, Graded, LedgerEntry, Record, Usage
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse
from evalfleet.providers.types import Usage as CallUsage
from evalfleet.providers.usage import Billed, billed_usage
from evalfleet.tasks.work import WorkItem

ANSWERED = "answer"  # the outcome of an attempt that ended the call with an answer


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


def new_call_id() -> str:
    """Names one call's ledger entries apart from another call's of the same item."""
    return secrets.token_hex(6)


def billed_attempt(
    number: int,
    config: ModelConfig,
    answer: ProviderResponse,
    billed: Billed,
    *,
    outcome: str,
    landed: float,
    latency_s: float | None = None,
    message: str = "",
    batch: bool = False,
) -> Attempt:
    """An attempt the provider answered with a 200: billed at `billed`'s usage."""
    usage = billed.usage
    cost = config.cost_breakdown(usage, batch=batch)
    return Attempt(
        number=number,
        outcome=outcome,
        at=iso(landed),
        latency_s=None if latency_s is None else round(latency_s, 4),
        status=200,
        request_id=answer.request_id,
        message=message[:2000],
        finish_reason=answer.finish_reason,
        usage=_stored_usage(usage),
        cost=Cost(**cost),
        estimated=billed.estimated,
    )


def failed_attempt(
    number: int, error: ProviderError, *, landed: float, latency_s: float | None = None
) -> Attempt:
    """An attempt that got no billed answer (a refusal, a server error, a timeout)."""
    return Attempt(
        number=number,
        outcome=str(error.kind),
        at=iso(landed),
        latency_s=None if latency_s is None else round(latency_s, 4),
        status=error.status,
        request_id=error.request_id,
        message=error.message[:2000],
    )


def ledger_entry(item: WorkItem, call_id: str, attempt: Attempt) -> LedgerEntry:
    key = item.key
    return LedgerEntry(
        run_id=item.run_id,
        stage=key.stage,
        judge_model=key.judge or None,
        model=key.model,
        benchmark=key.benchmark,
        sample_id=key.sample_id,
        epoch=key.epoch,
        request_hash=item.request_hash,
        call_id=call_id,
        attempt=attempt,
    )


def build_record(
    item: WorkItem,
    config: ModelConfig,
    *,
    response: ProviderResponse | None,
    error: ProviderError | None,
    attempts: int,
    attempt_errors: list[ProviderError],
    started: float,
    finished: float,
    latency_s: float | None,
    batch: dict[str, Any] | None = None,
    ledger: Sequence[Attempt] | None = None,
    call_id: str | None = None,
) -> Record:
    """Everything about one call that a later reader needs. Never the API key. `batch` names
    the batch job that answered it (priced at the provider's batch price). Usage and cost are
    the sums of the `ledger`'s billed attempts; without one, the call was one attempt (a
    batch line): `response` billed as reported (its text counted where it reported none),
    or `error`."""
    key = item.key
    if ledger is None:
        ledger = [_only_attempt(attempts, config, response, error, finished, batch is not None)]
    billed = [attempt for attempt in ledger if attempt.usage is not None]
    return Record(
        run_id=item.run_id,
        stage=key.stage,
        judge_model=key.judge or None,
        model=key.model,
        benchmark=key.benchmark,
        sample_id=key.sample_id,
        epoch=key.epoch,
        request_hash=item.request_hash,
        graded=Graded(*item.graded) if item.graded else None,
        provider=config.provider,
        api_model=config.api_model,
        model_reported=response.model_reported if response else None,
        system_fingerprint=_fingerprint(response),
        request=item.decoding,
        response=response.text if response else None,
        reasoning=response.reasoning_text if response else None,
        finish_reason=response.finish_reason if response else None,
        usage=_usage_sum(billed) if billed else None,
        cost_usd=_cost_sum(billed).total,
        cost=_cost_sum(billed),
        latency_s=latency_s,
        attempts=attempts,
        # every failed attempt, the final one included when the call failed
        attempt_errors=tuple(call_error(e) for e in attempt_errors),
        request_id=response.request_id if response else (error.request_id if error else None),
        started_at=iso(started),
        finished_at=iso(finished),
        error=call_error(error) if error else None,
        batch=batch,
        call_id=call_id,
        ledger=tuple(ledger),
    )


def _fingerprint(response: ProviderResponse | None) -> str | None:
    """OpenAI chat's `system_fingerprint`, where the provider sent one."""
    value = response.extra.get("system_fingerprint") if response else None
    return value if isinstance(value, str) and value else None


def _only_attempt(
    number: int,
    config: ModelConfig,
    response: ProviderResponse | None,
    error: ProviderError | None,
    landed: float,
    batch: bool,
) -> Attempt:
    if response is not None:
        billed = billed_usage(config, (), response)
        return billed_attempt(
            number, config, response, billed, outcome=ANSWERED, landed=landed, batch=batch
        )
    error = error or ProviderError(ErrorKind.UNKNOWN, "no answer")
    return failed_attempt(number, error, landed=landed)


def call_error(error: ProviderError) -> CallError:
    return CallError(str(error.kind), error.status, error.message[:2000], error.request_id)


def _stored_usage(usage: CallUsage) -> Usage:
    return Usage(
        usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_input_tokens
    )


def _usage_sum(billed: list[Attempt]) -> Usage:
    usages = [a.usage for a in billed if a.usage is not None]
    return Usage(
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        reasoning_tokens=sum(u.reasoning_tokens for u in usages),
        cached_input_tokens=sum(u.cached_input_tokens for u in usages),
    )


def _cost_sum(billed: list[Attempt]) -> Cost:
    costs = [a.cost for a in billed if a.cost is not None]
    if len(costs) == 1:
        return costs[0]
    # rounded past any price's precision: sums of floats carry residue (0.001040999...)
    return Cost(
        input=round(sum(c.input for c in costs), 12),
        cached_input=round(sum(c.cached_input for c in costs), 12),
        output=round(sum(c.output for c in costs), 12),
        reasoning=round(sum(c.reasoning for c in costs), 12),
        total=round(sum(c.total for c in costs), 12),
    )
