"""The record of one work item, built from what a provider call returned (`core.record` is
the record itself and the only code that knows its bytes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.record import CallError, Cost, Graded, Record, Usage
from providers.registry import ModelConfig
from providers.types import ProviderError, ProviderResponse
from providers.types import Usage as CallUsage
from tasks.work import WorkItem


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


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
) -> Record:
    """Everything about one call that a later reader needs. Never the API key. `batch` names
    the batch job that answered it (priced at the provider's batch price)."""
    # USD by kind of token (input, cached_input, output, reasoning, total); zeros on failure
    cost = config.cost_breakdown(
        response.usage if response else CallUsage(), batch=batch is not None
    )
    key = item.key
    usage = response.usage if response else None
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
        request=item.decoding,
        response=response.text if response else None,
        reasoning=response.reasoning_text if response else None,
        finish_reason=response.finish_reason if response else None,
        usage=None
        if usage is None
        else Usage(
            usage.input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens,
            usage.cached_input_tokens,
        ),
        cost_usd=cost["total"],
        cost=Cost(**cost),
        latency_s=latency_s,
        attempts=attempts,
        # every failed attempt, the final one included when the call failed
        attempt_errors=tuple(call_error(e) for e in attempt_errors),
        request_id=response.request_id if response else (error.request_id if error else None),
        started_at=iso(started),
        finished_at=iso(finished),
        error=call_error(error) if error else None,
        batch=batch,
    )


def call_error(error: ProviderError) -> CallError:
    return CallError(str(error.kind), error.status, error.message[:2000], error.request_id)
