"""Cost before a run: `evalfleet run ... --estimate`.

It plans exactly what the run would request, without opening the run: the store is listed and
its records read, nothing is written and nothing is sent. Per (model, benchmark, stage) it
reports the items of the run, those already stored (not requested again, not counted in the
cost; answers `--reuse-from` will copy from an earlier run count as stored), those to
request, their expected input and output tokens and three costs at the registry's prices
(the batch price for a model in batch mode; no prompt caching assumed): the expected one, a
low one (each answer as short as the benchmark's typical answer) and a high one (each answer
using its whole output budget).

- Input tokens: `providers.token_rules.estimate_prompt_tokens` of each prompt (the rules per
  provider and their sources are in that module).
- Output tokens per item (`output_source`): "measured", the mean output tokens (reasoning
  included) of the model's stored answers in this store: this run's records, and the usage
  tables of the store's other runs' latest results; the same benchmark's when there are any,
  else any benchmark's. Else "registry", the model's `expected_output_tokens`. Else "typical",
  the benchmark's `typical_answer_tokens` (its judge's `reply_tokens`). Always capped by the
  request's output limit (`providers.pricing`). The low figure takes the typical length where
  it is shorter; a model that reasons (`reasoning` yes) writes its reasoning beyond it.
- Judgements (stage "judge", the judge model's rows): for an answer already stored, the grader
  prompt it will get; for an answer still to request, the grader prompt with an empty answer
  plus the answer's expected length (the measured mean of the visible, non-reasoning output,
  else the expected output tokens). Whether the judge wants an answer can depend on the answer
  (ZeroBench's judge reads only answers that broke the format, `JudgeSpec.answer_decides`):
  an answer not given yet is asked as if it were unformatted prose, so the expected and high
  figures of those rows are an upper bound, and the low one counts none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalfleet.core.types import Part
from evalfleet.engine.prepare.resolve import ResolvedRun
from evalfleet.engine.prepare.reuse import reusable
from evalfleet.engine.run.identity import RunError
from evalfleet.engine.run.items import answer_items, judged_benchmarks, planned_judgements
from evalfleet.engine.run.state import Reconciled, list_records, reconcile
from evalfleet.engine.store.about import ResultsAbout
from evalfleet.engine.store.manifest import read_manifest
from evalfleet.providers.pricing import expected_item_cost_usd, expected_output_tokens
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.token_rules import estimate_prompt_tokens
from evalfleet.storage import layout
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey

if TYPE_CHECKING:
    from evalfleet.core.types import Decoding

COLUMNS = [
    "model",
    "benchmark",
    "stage",
    "items",
    "stored",
    "to_request",
    "input_tokens",
    "output_tokens",
    "output_per_item",
    "output_source",
    "reasons",
    "batch",
    "cost_usd",
    "low_cost_usd",
    "high_cost_usd",
]
# What an answer not given yet is taken to be when asking whether the judge would want it:
# prose without the asked-for format.
PLACEHOLDER_ANSWER = "an answer in prose"
RESULTS_SKIP = ("leaderboard",)


@dataclass
class _Mean:
    """Output tokens of stored, successful calls: total and visible (without reasoning)."""

    output: int = 0
    visible: int = 0
    calls: int = 0

    def add(self, output: int, reasoning: int, calls: int = 1) -> None:
        self.output += output
        self.visible += output - min(reasoning, output)
        self.calls += calls


@dataclass
class Measured:
    """Mean output tokens per (stage, model, benchmark), and per (stage, model) overall."""

    by_benchmark: dict[tuple[str, str, str], _Mean] = field(default_factory=dict)
    by_model: dict[tuple[str, str], _Mean] = field(default_factory=dict)

    def add(
        self, stage: str, model: str, benchmark: str, output: int, reasoning: int, calls: int = 1
    ) -> None:
        if calls <= 0:
            return
        self.by_benchmark.setdefault((stage, model, benchmark), _Mean()).add(
            output, reasoning, calls
        )
        self.by_model.setdefault((stage, model), _Mean()).add(output, reasoning, calls)

    def mean(self, stage: str, model: str, benchmark: str) -> _Mean | None:
        found = self.by_benchmark.get((stage, model, benchmark))
        if found is None or not found.calls:
            found = self.by_model.get((stage, model))
        return found if found is not None and found.calls else None


@dataclass
class _Row:
    model: str
    benchmark: str
    stage: str
    config: ModelConfig
    source: str = ""
    per_item: int = 0
    typical: int | None = None  # output tokens of the low figure, per item
    batch: bool = False  # priced at the batch price
    reasons: bool = False
    items: int = 0
    stored: int = 0
    to_request: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    max_output_tokens: int = 0
    low_input_tokens: int = 0
    low_output_tokens: int = 0

    def add(
        self,
        input_tokens: int,
        output_tokens: int,
        max_output_tokens: int,
        low: tuple[int, int] | None,
    ) -> None:
        """One item to request; `low` is its (input, output) tokens at the low figure, None
        when it may not be asked at all."""
        self.items += 1
        self.to_request += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.max_output_tokens += max_output_tokens
        if low is not None:
            self.low_input_tokens += low[0]
            self.low_output_tokens += low[1]

    def low_output(self, output: int) -> int:
        """Output tokens of one item at the low figure."""
        return min(output, self.typical) if self.typical is not None else 0

    def as_dict(self) -> dict[str, Any]:
        def price(input_tokens: int, output_tokens: int) -> float:
            return round(self.config.cost_usd(input_tokens, output_tokens, batch=self.batch), 6)

        per_item = self.output_tokens / self.to_request if self.to_request else self.per_item
        return {
            "model": self.model,
            "benchmark": self.benchmark,
            "stage": self.stage,
            "items": self.items,
            "stored": self.stored,
            "to_request": self.to_request,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "output_per_item": int(per_item + 0.5),
            "output_source": self.source,
            "reasons": "yes" if self.reasons else "no",
            "batch": "yes" if self.batch else "no",
            "cost_usd": price(self.input_tokens, self.output_tokens),
            "low_cost_usd": price(self.low_input_tokens, self.low_output_tokens),
            "high_cost_usd": price(self.input_tokens, self.max_output_tokens),
        }


def typical_output(run: ResolvedRun, key: ItemKey) -> int | None:
    """The typical output tokens of an item: its benchmark's answer, or its judge's reply."""
    bench = run.data[key.benchmark].benchmark
    if key.stage == layout.JUDGE:
        return bench.judge.reply_tokens if bench.judge is not None else None
    return bench.typical_answer_tokens


def expected_item_cost(
    run: ResolvedRun, key: ItemKey, parts: list[Part], decoding: Decoding
) -> float:
    """What one item is expected to cost before any call of its model landed (the budget's
    first reservations): its prompt, and the output this estimate expects without a measure,
    at the online price."""
    config = run.configs[key.caller]
    output, _ = expected_output_tokens(config, decoding, typical=typical_output(run, key))
    return expected_item_cost_usd(config, parts, decoding, output)


def estimate_run(run: ResolvedRun, *, retry_errors: bool = True) -> list[dict[str, Any]]:
    """Rows (COLUMNS) per (model, benchmark, stage) of what running `prepared` (a checked
    request, `engine.prepare.resolve.resolve`) would request and cost. Reads the store, writes
    nothing."""
    request, store, run_id = run.request, run.store, run.run_id
    data, configs = run.data, run.configs
    wanted = {"missing", "stale", "failed"} if retry_errors else {"missing", "stale"}

    answers = answer_items(run)
    judged = judged_benchmarks(run.judges, data)
    stages = (layout.ANSWER, layout.JUDGE) if judged else (layout.ANSWER,)
    listing = list_records(store, run_id, stages)
    state = reconcile(store, listing, answers, read=True)
    stored_judgements = planned_judgements(run, state)
    judge_state = reconcile(store, listing, [j for j, _ in stored_judgements], read=True)
    measured = measure(store, run_id, [state, judge_state])
    # answers `--reuse-from` will copy are not asked: counted stored, never priced
    reused = {key for key, *_ in reusable(store, run, request.reuse_from)}

    rows: dict[tuple[str, str, str], _Row] = {}
    for name, bench_data in data.items():
        for model in request.models:
            key = ItemKey.answer(model, name, "", 0)
            rows[(layout.ANSWER, model, name)] = _row(run, measured, key, bench_data.decodings[0])
    for judge_model in run.judges:
        for name in (n for n in data if n in judged):
            judge_spec = data[name].benchmark.judge
            assert judge_spec is not None  # `judged` holds the benchmarks with a judge
            key = ItemKey.answer("", name, "", 0).judged_by(judge_model)
            rows[(layout.JUDGE, judge_model, name)] = _row(run, measured, key, judge_spec.decoding)

    prompts: dict[tuple[str, str, str], int] = {}  # (model, benchmark, sample) -> tokens
    for item in answers:
        key = item.key
        row = rows[(layout.ANSWER, key.model, key.benchmark)]
        if state.state[key] not in wanted or key in reused:
            row.items += 1
            row.stored += 1
            continue
        config = configs[key.model]
        bench_data = data[key.benchmark]
        sample = bench_data.by_id[key.sample_id]
        prompt_key = (key.model, key.benchmark, key.sample_id)
        if prompt_key not in prompts:
            prompts[prompt_key] = estimate_prompt_tokens(config, sample.parts)
        mean = measured.mean(layout.ANSWER, key.model, key.benchmark)
        output, _ = expected_output_tokens(
            config, item.decoding, mean_of(mean), bench_data.benchmark.typical_answer_tokens
        )
        prompt_tokens = prompts[prompt_key]
        low_output = row.low_output(output)
        row.add(
            prompt_tokens,
            output,
            config.output_limit(item.decoding.max_tokens),
            (prompt_tokens, low_output),
        )
        if key.benchmark not in judged:
            continue
        judge_spec = bench_data.benchmark.judge
        assert judge_spec is not None  # `judged` holds the benchmarks with a judge
        if not judge_spec.wants(sample, PLACEHOLDER_ANSWER, bench_data.options):
            continue
        answer_tokens = int(mean.visible / mean.calls + 0.5) if mean else output
        grader = [Part.of_text(judge_spec.prompt(sample, ""))]
        for judge_model in run.judges:
            judge_config = configs[judge_model]
            judge_row = rows[(layout.JUDGE, judge_model, key.benchmark)]
            judge_mean = measured.mean(layout.JUDGE, judge_model, key.benchmark)
            judge_output, _ = expected_output_tokens(
                judge_config, judge_spec.decoding, mean_of(judge_mean), judge_spec.reply_tokens
            )
            grader_tokens = estimate_prompt_tokens(judge_config, grader)
            low = (grader_tokens + low_output, judge_row.low_output(judge_output))
            judge_row.add(
                grader_tokens + answer_tokens,
                judge_output,
                judge_config.output_limit(judge_spec.decoding.max_tokens),
                None if judge_spec.answer_decides else low,
            )

    for item, parts in stored_judgements:
        judge_model = item.key.judge
        row = rows[(layout.JUDGE, judge_model, item.key.benchmark)]
        if judge_state.state[item.key] not in wanted:
            row.items += 1
            row.stored += 1
            continue
        judge_config = configs[judge_model]
        judge_mean = measured.mean(layout.JUDGE, judge_model, item.key.benchmark)
        judge_output, _ = expected_output_tokens(
            judge_config, item.decoding, mean_of(judge_mean), row.typical
        )
        grader_tokens = estimate_prompt_tokens(judge_config, parts)
        row.add(
            grader_tokens,
            judge_output,
            judge_config.output_limit(item.decoding.max_tokens),
            (grader_tokens, row.low_output(judge_output)),
        )
    return [row.as_dict() for row in rows.values()]


def _row(run: ResolvedRun, measured: Measured, key: ItemKey, decoding: Decoding) -> _Row:
    """The row of a (stage, caller, benchmark); `key` names them."""
    config = run.configs[key.caller]
    typical = typical_output(run, key)
    per_item, source = expected_output_tokens(
        config, decoding, mean_of(measured.mean(key.stage, key.caller, key.benchmark)), typical
    )
    return _Row(
        key.caller,
        key.benchmark,
        key.stage,
        config,
        source=source,
        per_item=per_item,
        typical=typical,
        batch=run.request.batched(key.caller),
        reasons=config.thinks(decoding.reasoning_effort),
    )


def mean_of(mean: _Mean | None) -> float | None:
    return mean.output / mean.calls if mean else None


def measure(store: Store, run_id: str, states: list[Reconciled]) -> Measured:
    """Output tokens of the successful calls stored in this store: this run's records (read
    by `reconcile`), and the usage tables of the other runs' latest results."""
    measured = Measured()
    for state in states:
        for key, record_key in state.record_key.items():
            record = state.records.get(record_key)
            if record is None or record.failed or state.state[key] != "done":
                continue
            tokens = record.tokens
            measured.add(
                key.stage, key.caller, key.benchmark, tokens.output_tokens, tokens.reasoning_tokens
            )
    for other in store.list_dirs(""):
        if other == run_id or other in RESULTS_SKIP or other.startswith("_"):
            continue
        _measure_results(store, other, measured)
    return measured


def _measure_results(store: Store, run_id: str, measured: Measured) -> None:
    """Add a run's latest usage table (answers and, by its judge model, judgements)."""
    import io

    import pandas as pd

    try:
        manifest = read_manifest(store, run_id)
        latest = store.get(layout.latest_results_key(run_id))
        if manifest is None or latest is None:
            return
        version = ResultsAbout.from_bytes(latest, layout.latest_results_key(run_id)).version
        blob = store.get(layout.results_key(run_id, version, "usage.parquet"))
        if blob is None:
            return
        usage = pd.read_parquet(io.BytesIO(blob))
        judges_blob = store.get(layout.results_key(run_id, version, "judges.parquet"))
        judges = pd.read_parquet(io.BytesIO(judges_blob)) if judges_blob else None
    except (RunError, ValueError, KeyError, OSError):
        return  # a run whose results cannot be read adds nothing
    asked = manifest.identity
    # each judge's own calls (`judges.parquet`); in older results the usage table's judge
    # columns, which are the one judge's when there is only one
    judge = asked.judge_model if judges is None and not asked.extra_judges else None
    for row in judges.to_dict("records") if judges is not None else []:
        measured.add(
            layout.JUDGE,
            row["judge"],
            row["benchmark"],
            int(row.get("output_tokens") or 0),
            int(row.get("reasoning_tokens") or 0),
            int(row.get("judgements") or 0) - int(row.get("errors") or 0),
        )
    for row in usage.to_dict("records"):
        calls = int(row.get("answers") or 0) - int(row.get("errors") or 0)
        measured.add(
            layout.ANSWER,
            row["model"],
            row["benchmark"],
            int(row.get("output_tokens") or 0),
            int(row.get("reasoning_tokens") or 0),
            calls,
        )
        if judge:
            judged = int(row.get("judgements") or 0) - int(row.get("judge_errors") or 0)
            measured.add(
                layout.JUDGE,
                judge,
                row["benchmark"],
                int(row.get("judge_output_tokens") or 0),
                int(row.get("judge_reasoning_tokens") or 0),
                judged,
            )


def format_estimate(run_id: str, rows: list[dict[str, Any]]) -> str:
    """The table, its totals and how to read it."""
    import pandas as pd

    from evalfleet.core.text_tables import markdown

    frame = pd.DataFrame(rows, columns=COLUMNS)
    to_request = int(frame["to_request"].sum())
    stored = int(frame["stored"].sum())
    cost, low, high = (
        round(float(frame[column].sum()), 6)
        for column in ("cost_usd", "low_cost_usd", "high_cost_usd")
    )
    lines = [f"estimate for run {run_id}: nothing was sent and nothing written"]
    for stage, title in ((layout.ANSWER, "answers"), (layout.JUDGE, "judgements")):
        mine = frame[frame["stage"] == stage].drop(columns=["stage"])
        if not mine.empty:
            lines += ["", title, markdown(mine.reset_index(drop=True))]
    lines += [
        "",
        f"total: {to_request} requests, {int(frame['input_tokens'].sum())} input tokens, "
        f"{int(frame['output_tokens'].sum())} output tokens: expected ${cost:.6f}, "
        f"low ${low:.6f} (every answer as short as the benchmark's typical answer), "
        f"high ${high:.6f} (every request using its whole output budget)",
        f"already stored: {stored} items, not requested again and not counted",
        "output tokens per item: measured = mean of the model's stored records in this store; "
        "registry = its expected_output_tokens; typical = the benchmark's typical answer (its "
        "judge's reply); assumed = 1000; each capped by max_tokens",
    ]
    if (frame["reasons"] == "yes").any():
        lines.append(
            "reasons = yes: the model reasons before it answers; its reasoning tokens are "
            "not in the low figure, and its cost lies nearer the high one"
        )
    if (frame["batch"] == "yes").any():
        lines.append("batch = yes: asked through the provider's batch API, at the batch price")
    if (frame["stage"] == layout.JUDGE).any():
        lines.append(
            "judge rows count, for answers still to request, every answer the judge may "
            "grade: an upper bound (the low figure counts only those it will surely grade)"
        )
    return "\n".join(lines)
