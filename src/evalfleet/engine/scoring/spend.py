"""What a run's records cost: per (model, benchmark) its answers' and its judges' tokens and
USD (`usage.parquet`), and per judge apart (`judges.parquet`). Records written before costs
were kept add their tokens and nothing else.

A record's tokens and cost are the sums of its billed attempts (`evalfleet.core.record`): retries of
empty answers included (`retry_cost_usd` shows what they cost), and so are the ledger entries
of calls that stored no record (`add_unrecorded`). `estimated_cost_usd` is the part priced on
tokens counted here, where the provider reported no usage that could be trusted."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from evalfleet.core.record import LedgerEntry, Record
from evalfleet.storage.layout import JUDGE

USAGE_COLUMNS = [
    "model",
    "benchmark",
    "answers",
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "judgements",
    "judge_errors",
    "judge_input_tokens",
    "judge_output_tokens",
    "judge_cost_usd",
    # cost apart by kind of token (from each record's `cost`; records written before it
    # existed count in the totals above only)
    "cached_input_tokens",
    "input_cost_usd",  # uncached input
    "cached_input_cost_usd",
    "output_cost_usd",  # output without reasoning
    "reasoning_cost_usd",
    "judge_cached_input_tokens",
    "judge_reasoning_tokens",
    "judge_cached_input_cost_usd",
    "judge_reasoning_cost_usd",
    "batch_calls",  # answers and judgements answered in batch jobs (at the batch price)
    "batch_cost_usd",
    "total_cost_usd",  # answers and judgements
    # the per-attempt ledger: attempts billed, what the billed attempts before each call's last
    # cost (retried empty answers; a call that stored no record: all of its), and the part of
    # cost_usd priced on locally counted tokens
    "billed_attempts",
    "retry_cost_usd",
    "estimated_cost_usd",
    "judge_billed_attempts",
    "judge_retry_cost_usd",
    "judge_estimated_cost_usd",
]
COST_COLUMNS = [c for c in USAGE_COLUMNS if c.endswith("cost_usd")]
JUDGE_USAGE_COLUMNS = [
    "model",
    "benchmark",
    "judge",
    "judgements",
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
]


class UsageSums:
    """Tokens and USD summed as records are read, shard by shard: per (model, benchmark) for
    `usage.parquet` and per (model, benchmark, judge) for `judges.parquet`. Sums from several
    shards (or worker processes) merge into one."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], dict[str, float]] = {}
        self.judge_rows: dict[tuple[str, str, str], dict[str, float]] = {}

    def add_answer(self, model: str, benchmark: str, record: Record) -> None:
        _add(self._row(model, benchmark), "", record)

    def add_judgement(self, model: str, benchmark: str, judge: str, record: Record) -> None:
        """A judgement, under the model whose answer it grades."""
        _add(self._row(model, benchmark), "judge_", record)
        row = self.judge_rows.setdefault(
            (model, benchmark, judge), dict.fromkeys(JUDGE_USAGE_COLUMNS[3:], 0)
        )
        tokens = record.tokens
        row["judgements"] += 1
        row["errors"] += record.failed
        row["input_tokens"] += tokens.input_tokens
        row["output_tokens"] += tokens.output_tokens
        row["reasoning_tokens"] += tokens.reasoning_tokens
        row["cost_usd"] += record.spent_usd

    def add_unscored(self, record: Record) -> None:
        """A record no table scores (a failure answered again later, a request asked
        differently before): its billed attempts, all of them before the item's last."""
        prefix = "judge_" if record.stage == JUDGE else ""
        row = self._row(record.model, record.benchmark)
        tokens, cost = record.tokens, record.cost
        row[prefix + "input_tokens"] += tokens.input_tokens
        row[prefix + "output_tokens"] += tokens.output_tokens
        row[prefix + "reasoning_tokens"] += tokens.reasoning_tokens
        row[prefix + "cached_input_tokens"] += tokens.cached_input_tokens
        row[prefix + "cost_usd"] += record.spent_usd
        row[prefix + "billed_attempts"] += record.billed_attempts
        row[prefix + "retry_cost_usd"] += record.spent_usd
        row[prefix + "estimated_cost_usd"] += record.estimated_cost_usd
        if cost is not None:
            row[prefix + "cached_input_cost_usd"] += cost.cached_input
            row[prefix + "reasoning_cost_usd"] += cost.reasoning
            if not prefix:
                row["input_cost_usd"] += cost.input
                row["output_cost_usd"] += cost.output
        if record.stage == JUDGE and record.judge_model:
            judge = self.judge_rows.setdefault(
                (record.model, record.benchmark, record.judge_model),
                dict.fromkeys(JUDGE_USAGE_COLUMNS[3:], 0),
            )
            judge["input_tokens"] += tokens.input_tokens
            judge["output_tokens"] += tokens.output_tokens
            judge["reasoning_tokens"] += tokens.reasoning_tokens
            judge["cost_usd"] += record.spent_usd

    def add_unrecorded(self, entry: LedgerEntry) -> None:
        """A billed attempt of a call that stored no record (its ledger entry), under the
        model whose answer it was for."""
        prefix = "judge_" if entry.stage == JUDGE else ""
        row = self._row(entry.model, entry.benchmark)
        attempt = entry.attempt
        usage, cost = attempt.usage, attempt.cost
        if usage is None or cost is None:
            return
        row[prefix + "input_tokens"] += usage.input_tokens
        row[prefix + "output_tokens"] += usage.output_tokens
        row[prefix + "reasoning_tokens"] += usage.reasoning_tokens
        row[prefix + "cached_input_tokens"] += usage.cached_input_tokens
        row[prefix + "cost_usd"] += cost.total
        row[prefix + "cached_input_cost_usd"] += cost.cached_input
        row[prefix + "reasoning_cost_usd"] += cost.reasoning
        row[prefix + "billed_attempts"] += 1
        row[prefix + "retry_cost_usd"] += cost.total
        row[prefix + "estimated_cost_usd"] += cost.total if attempt.estimated else 0.0
        if not prefix:
            row["input_cost_usd"] += cost.input
            row["output_cost_usd"] += cost.output
        if entry.stage == JUDGE and entry.judge_model:
            judge = self.judge_rows.setdefault(
                (entry.model, entry.benchmark, entry.judge_model),
                dict.fromkeys(JUDGE_USAGE_COLUMNS[3:], 0),
            )
            judge["input_tokens"] += usage.input_tokens
            judge["output_tokens"] += usage.output_tokens
            judge["reasoning_tokens"] += usage.reasoning_tokens
            judge["cost_usd"] += cost.total

    def merge(self, other: UsageSums) -> None:
        for key, sums in other.rows.items():
            _sum_into(self._row(*key), sums)
        for judge_key, sums in other.judge_rows.items():
            empty: dict[str, float] = dict.fromkeys(JUDGE_USAGE_COLUMNS[3:], 0)
            mine = self.judge_rows.setdefault(judge_key, empty)
            _sum_into(mine, sums)

    def usage_table(self, keys: Iterable[tuple[str, str]]) -> pd.DataFrame:
        """One row per (model, benchmark) of `keys` (in their order, a row of zeros where
        nothing is stored yet), then any other pair that has records."""
        rows = {key: dict.fromkeys(USAGE_COLUMNS[2:], 0) for key in keys}
        for key, sums in self.rows.items():
            _sum_into(rows.setdefault(key, dict.fromkeys(USAGE_COLUMNS[2:], 0)), sums)
        frame = pd.DataFrame(
            [{"model": m, "benchmark": b, **spent} for (m, b), spent in rows.items()],
            columns=USAGE_COLUMNS,
        )
        frame["total_cost_usd"] = frame["cost_usd"] + frame["judge_cost_usd"]
        for column in COST_COLUMNS:
            frame[column] = frame[column].astype(float).round(6)
        return frame

    def judge_table(self) -> pd.DataFrame:
        """One row per (model, benchmark, judge): each judge's judgements priced apart."""
        frame = pd.DataFrame(
            [
                {"model": m, "benchmark": b, "judge": j, **v}
                for (m, b, j), v in self.judge_rows.items()
            ],
            columns=JUDGE_USAGE_COLUMNS,
        )
        frame["cost_usd"] = frame["cost_usd"].astype(float).round(6)
        return frame

    def _row(self, model: str, benchmark: str) -> dict[str, float]:
        return self.rows.setdefault((model, benchmark), dict.fromkeys(USAGE_COLUMNS[2:], 0))


def _sum_into(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Adds each figure of `part` to `total`'s (token counts stay whole numbers)."""
    for column, value in part.items():
        total[column] += value


_SUMMED = (
    "errors",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cost_usd",
    "cached_input_cost_usd",
    "reasoning_cost_usd",
    "billed_attempts",
    "retry_cost_usd",
    "estimated_cost_usd",
)
# The columns `_add` sums into, by prefix: named once, not per record.
_PREFIXED = {prefix: tuple(prefix + name for name in _SUMMED) for prefix in ("", "judge_")}


def _add(spent: dict[str, float], prefix: str, record: Record) -> None:
    """One record into a (model, benchmark) row: an answer, or with prefix "judge_" a
    judgement."""
    tokens = record.tokens
    (
        errors,
        inputs,
        outputs,
        reasoning,
        cached,
        cost_usd,
        cached_cost,
        reasoning_cost,
        billed,
        retried,
        estimated,
    ) = _PREFIXED[prefix]
    spent["judgements" if prefix else "answers"] += 1
    spent[errors] += record.failed
    spent[inputs] += tokens.input_tokens
    spent[outputs] += tokens.output_tokens
    spent[reasoning] += tokens.reasoning_tokens
    spent[cached] += tokens.cached_input_tokens
    spent[cost_usd] += record.spent_usd
    spent[billed] += record.billed_attempts
    if record.ledger:
        spent[retried] += record.retry_cost_usd
        spent[estimated] += record.estimated_cost_usd
    cost = record.cost
    if cost is not None:
        spent[cached_cost] += cost.cached_input
        spent[reasoning_cost] += cost.reasoning
        if not prefix:
            spent["input_cost_usd"] += cost.input
            spent["output_cost_usd"] += cost.output
    if record.batch:
        spent["batch_calls"] += 1
        spent["batch_cost_usd"] += record.spent_usd
