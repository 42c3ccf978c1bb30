"""The record of one work item (an answer or a judgement): one JSON object, written once."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from providers.registry import ModelConfig
from providers.types import ProviderError, ProviderResponse, Usage
from tasks.work import WorkItem

RECORD_VERSION = 2


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
) -> dict[str, Any]:
    """Everything about one call that a later reader needs. Never the API key. `batch` names
    the batch job that answered it (priced at the provider's batch price)."""
    usage = response.usage.to_dict() if response else None
    # USD by kind of token (input, cached_input, output, reasoning, total); zeros on failure
    cost = config.cost_breakdown(response.usage if response else Usage(), batch=batch is not None)
    # attempt_errors lists every failed attempt, the final one included when the call failed.
    key = item.key
    return {
        "record_version": RECORD_VERSION,
        "run_id": item.run_id,
        "stage": key.stage,
        "judge_model": key.judge or None,
        "model": key.model,
        "benchmark": key.benchmark,
        "sample_id": key.sample_id,
        "epoch": key.epoch,
        "request_hash": item.request_hash,
        "graded": (
            {"key": item.graded[0], "response_sha256": item.graded[1]} if item.graded else None
        ),
        "provider": config.provider,
        "api_model": config.api_model,
        "model_reported": response.model_reported if response else None,
        "request": item.decoding.to_dict(),
        "response": response.text if response else None,
        "reasoning": response.reasoning_text if response else None,
        "finish_reason": response.finish_reason if response else None,
        "usage": usage,
        "cost_usd": cost["total"],
        "cost": cost,
        "latency_s": latency_s,
        "attempts": attempts,
        "attempt_errors": [e.to_dict() for e in attempt_errors],
        "request_id": (response.request_id if response else (error.request_id if error else None)),
        "started_at": iso(started),
        "finished_at": iso(finished),
        "error": error.to_dict() if error else None,
        "batch": batch,
    }


def encode_record(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_record(data: bytes) -> dict[str, Any] | None:
    """None for a truncated or undecodable record (reported, then treated as missing), and
    for one whose cost is not a finite number of USD at least 0: a budget, a table or a bill
    would take it as truth."""
    try:
        record = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or "sample_id" not in record:
        return None
    parts = record.get("cost") or {}
    if not isinstance(parts, dict) or not all(
        map(_a_cost, [record.get("cost_usd"), *parts.values()])
    ):
        return None
    return record


def _a_cost(value: Any) -> bool:
    """A stored cost: None (an old record without one) or a finite number >= 0."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0
