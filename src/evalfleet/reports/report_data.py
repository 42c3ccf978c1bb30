"""What a run report shows, gathered from the store: the run's identity, coverage and headline
table, and every answered item with its prompt, target, response, verdicts, judges' words and
costs. The page (`reports.report_page`) embeds it in compact pieces it decodes as needed (a
run of more than 20,000 items is written by `reports.report_paged` instead, a file at a time).

- `index`: one short row per item, enough to filter, sort and list 20,000 items in
  milliseconds: model, benchmark, sample, epoch, a verdict letter per scoring mode, the
  extracted answer (cut to `ANSWER_CHARS`), tokens in / out / reasoning, latency, cost, and
  the judges' cost;
- `details`: the long texts of each item (response, reasoning, each scoring's full answer and
  score error, each judge's words, tokens, latency and cost, error) in chunks of `CHUNK`
  items, gzipped;
- `prompts`: each sample's prompt text, choices and metadata, in chunks, gzipped;
- `media`: each sample's images and audio (`evalfleet.reports.report_media`).

Verdict letters: `R` right, `W` wrong, `S` a score error (an unparsable verdict), `E` the call
failed for good; lowercase when a judge gave the verdict. A scoring mode is `rule` (its answer
was read out of the response by rules), `judge` (a judge graded the response: its "answer" is
the verdict, never shown as an answer) or `judge-extract` (a judge read the answer out).
"""

from __future__ import annotations

import gzip
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalfleet.core.record import Record
from evalfleet.engine.run.items import BenchmarkData
from evalfleet.engine.store.about import ResultsAbout
from evalfleet.engine.store.results import read_optional_table, read_version_table, results_about
from evalfleet.engine.store.stored import StoredRun, load_run
from evalfleet.reports import MEDIA_BUDGET_MB
from evalfleet.reports.item_sets import item_set_of
from evalfleet.reports.report_fields import declared_fields, metadata_of, sample_row
from evalfleet.reports.report_media import Layout, embedded_media
from evalfleet.reports.report_metrics import every_metric
from evalfleet.reports.report_raw import RequestBuilder, raw_of
from evalfleet.reports.report_why import explanations, judges_by_scoring
from evalfleet.storage.base import Store
from evalfleet.storage.layout import ItemKey
from evalfleet.storage.tags import read_tags

if TYPE_CHECKING:  # loaded where a table is read: the command line starts without it
    import pandas as pd

log = logging.getLogger("evalfleet")
CHUNK = 500
ANSWER_CHARS = 80
NOT_SCORED = ("-", None, None)  # (letter, answer, score error) of a scoring an item lacks


@dataclass
class ReportData:
    meta: dict[str, Any]
    index: dict[str, Any]
    details: list[bytes] = field(default_factory=list)  # gzipped JSON chunks
    prompts: list[bytes] = field(default_factory=list)
    media: dict[int, list[dict[str, str]]] = field(default_factory=dict)  # sample -> parts


def gather(
    store: Store, run_id: str, version: str | None = None, *, media_mb: float = MEDIA_BUDGET_MB
) -> ReportData:
    """Everything the report of `run_id` (its latest results, or `version`) shows."""
    run = load_run(store, run_id)
    about = results_about(store, run_id, version)
    version = about.version
    samples = read_version_table(store, run_id, version, "samples.parquet")
    metrics = read_version_table(store, run_id, version, "metrics.parquet")
    agreement = read_optional_table(store, run_id, version, "judge_agreement.parquet")

    models = list(run.request.models)
    benchmarks = list(run.data)
    scorings = {
        name: list(dict.fromkeys(samples[samples.benchmark == name].scoring)) for name in benchmarks
    }
    sample_keys: dict[tuple[str, str], int] = {}
    sample_rows: list[list[Any]] = []
    for name, data in run.data.items():
        for sample in data.samples:
            sample_keys[(name, sample.id)] = len(sample_rows)
            sample_rows.append(sample_row(benchmarks.index(name), data, sample))

    verdicts = _verdicts(samples)
    kinds = {name: scoring_kinds(run, name, scorings[name]) for name in benchmarks}
    judge_of = {name: judges_by_scoring(run, name) for name in benchmarks}
    builder = RequestBuilder(run)
    layouts: dict[int, Layout] = {}  # the samples' parts as sent, for the raw view's body
    media, media_note = embedded_media(run, sample_keys, media_mb, layouts)
    rows, details = [], []
    for key, record_key in sorted(
        run.answer_state.record_key.items(),
        key=lambda kv: (
            benchmarks.index(kv[0].benchmark),
            kv[0].sample_id,
            kv[0].epoch,
            kv[0].model,
        ),
    ):
        record = run.answer_state.records.get(record_key)
        if record is None or key.model not in models:
            continue
        found = verdicts.get((key.model, key.benchmark, key.sample_id, key.epoch), {})
        names = scorings[key.benchmark]
        letters = "".join(found.get(s, NOT_SCORED)[0] for s in names)
        judged = judged_records(run, key)
        why = explanations(
            run.data[key.benchmark],
            key.sample_id,
            record.response,
            names,
            kinds[key.benchmark],
            judge_of[key.benchmark],
            letters,
            {judge: by.response for judge, by in judged},
        )
        detail = detail_of(record, found, names, judged, why)
        at = sample_keys[(key.benchmark, key.sample_id)]
        prompt = run.data[key.benchmark].prompts.get(key.sample_id, "")
        detail["raw"] = raw_of(record, *builder.body(key.model, layouts.get(at), prompt, record))
        tokens = record.tokens
        rows.append(
            [
                models.index(key.model),
                benchmarks.index(key.benchmark),
                sample_keys[(key.benchmark, key.sample_id)],
                key.epoch,
                letters,
                shown_answers(detail["answers"], kinds[key.benchmark]),
                tokens.input_tokens,
                tokens.output_tokens,
                tokens.reasoning_tokens,
                number(record.latency_s),
                number(record.cost_usd),
                judges_cost(detail["judges"]),
            ]
        )
        details.append(detail)

    items = int(len(samples[["model", "benchmark", "sample_id", "epoch"]].drop_duplicates()))
    meta = report_meta(run, about, metrics, agreement, scorings, _coverage(run), items)
    for name in benchmarks:
        meta["benchmarks"][name]["kinds"] = kinds[name]
    report = ReportData(
        meta=meta,
        index={
            "models": models,
            "benchmarks": benchmarks,
            "scorings": scorings,
            "samples": sample_rows,
            "items": rows,
            "chunk": CHUNK,
        },  # fmt: skip
        details=[_gzip(details[i : i + CHUNK]) for i in range(0, len(details), CHUNK)],
    )
    prompts = [prompt_of(run.data[benchmarks[b]], sid) for b, sid, *_ in sample_rows]
    report.prompts = [_gzip(prompts[i : i + CHUNK]) for i in range(0, len(prompts), CHUNK)]
    report.media, meta["media_note"] = media, media_note
    return report


def scoring_kinds(run: StoredRun, benchmark: str, scorings: list[str]) -> list[str]:
    """Per scoring mode: `rule`, `judge` (a judge's verdict) or `judge-extract`."""
    judge = run.data[benchmark].benchmark.judge
    if judge is None:
        return ["rule"] * len(scorings)
    from evalfleet.engine.scoring.shards import judge_scoring

    judged = {
        judge_scoring(s, model, position == 0)
        for position, model in enumerate(run.judges)
        for s in judge.scorings
    }
    kind = "judge-extract" if judge.extracts else "judge"
    return [kind if s in judged else "rule" for s in scorings]


def shown_answers(answers: list[str | None], kinds: list[str]) -> str | list[str | None] | None:
    """The list's answer column: one text when every answer-bearing scoring read the same
    answer (most runs), else one per scoring (None for a judge's verdict); cut short."""
    shown = [
        None if kind == "judge" or answer is None else _cut(str(answer))
        for answer, kind in zip(answers, kinds, strict=True)
    ]
    distinct = {a for a in shown if a is not None}
    if len(distinct) <= 1:
        return next(iter(distinct), None)
    return shown


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 1] + "…"


def judges_cost(judges: list[dict[str, Any]]) -> float | None:
    costs = [j["cost_usd"] for j in judges if j.get("cost_usd") is not None]
    return float(sum(costs)) if costs else None


def _verdicts(samples: pd.DataFrame) -> dict[tuple, dict[str, tuple[str, str | None, str | None]]]:
    """(model, benchmark, sample, epoch) -> scoring -> (letter, extracted answer, score error)."""
    out: dict[tuple, dict[str, tuple[str, str | None, str | None]]] = {}
    for row in samples.itertuples(index=False):
        # a text column holding any text reads its missing values as NaN (pandas 3)
        error, score_error, answer = _plain(row.error), _plain(row.score_error), _plain(row.answer)
        letter = verdict_letter(error, score_error, row.correct, row.judged)
        key = (row.model, row.benchmark, row.sample_id, int(row.epoch))
        out.setdefault(key, {})[row.scoring] = (letter, answer, score_error)
    return out


def verdict_letter(error: Any, score_error: Any, correct: Any, judged: Any) -> str:
    """One row of the samples table as the list's letter (see the module's docstring)."""
    if error is not None:
        letter = "E"
    elif score_error is not None:
        letter = "S"
    else:
        letter = "R" if correct else "W"
    return letter.lower() if judged and letter != "E" else letter


def judged_records(run: StoredRun, key: ItemKey) -> list[tuple[str, Record]]:
    """The judgements of one answer there are, by judge, in the run's judge order."""
    found = []
    for judge in run.judges:
        record_key = run.judge_state.record_key.get(key.judged_by(judge))
        judged = run.judge_state.records.get(record_key) if record_key else None
        if judged is not None:
            found.append((judge, judged))
    return found


def detail_of(
    record: Record,
    found: dict[str, tuple[str, str | None, str | None]],
    scorings: list[str],
    judged: list[tuple[str, Record]],
    why: list[str | None] | None = None,
) -> dict[str, Any]:
    """The long texts of one item: what its detail chunk holds (`why`: each verdict's
    explanation, `reports.report_why`)."""
    error = record.error
    judges = []
    for judge, by in judged:
        used = by.tokens
        judges.append(
            {
                "judge": judge,
                "reply": by.response,
                "error": by.error.type if by.error else None,
                "tokens": [used.input_tokens, used.output_tokens, used.reasoning_tokens],
                "latency_s": number(by.latency_s),
                "cost_usd": number(by.cost_usd),
            }
        )
    return {
        "response": record.response,
        "reasoning": record.reasoning,
        "answers": [found.get(s, NOT_SCORED)[1] for s in scorings],
        "score_errors": [found.get(s, NOT_SCORED)[2] for s in scorings],
        "why": why or [None] * len(scorings),
        "judges": judges,
        "attempts": record.attempts,
        "finish_reason": record.finish_reason,
        "model_reported": record.model_reported,
        "error": (
            {"type": error.type, "status": error.status, "message": error.message}
            if error
            else None
        ),
        "batch": bool(record.batch),
    }


def prompt_of(data: BenchmarkData, sample_id: str) -> dict[str, Any]:
    sample = data.by_id[sample_id]
    return {
        "prompt": data.prompts.get(sample_id, ""),
        "choices": sample.choices,
        "metadata": metadata_of(sample),
    }


def _coverage(run: StoredRun) -> list[dict[str, Any]]:
    """Per model and benchmark: answers done, failed and expected, as the store holds them."""
    counts = run.answer_state.counts()
    return [
        coverage_row(run, model, name, counts.get(("answer", "", model, name), {}))
        for name in run.data
        for model in run.request.models
    ]


def coverage_row(run: StoredRun, model: str, name: str, states: Mapping[str, int]) -> dict:
    data = run.data[name]
    return {
        "model": model,
        "benchmark": name,
        "done": states.get("done", 0),
        "failed": states.get("failed", 0),
        "expected": len(data.samples) * len(data.decodings),
    }


def report_meta(
    run: StoredRun,
    about: ResultsAbout,
    metrics: pd.DataFrame,
    agreement: pd.DataFrame | None,
    scorings: dict[str, list[str]],
    coverage: list[dict[str, Any]],
    items: int,
) -> dict[str, Any]:
    """The run's identity, coverage, headline and agreement: the page's `meta` block."""
    manifest = run.manifest
    from evalfleet.engine.scoring.shards import judge_scoring

    benchmarks = {}
    for name, data in run.data.items():
        judge = data.benchmark.judge
        judged = {
            model: [judge_scoring(s, model, position == 0) for s in judge.scorings]
            for position, model in enumerate(run.judges)
        } if judge else {}  # fmt: skip
        benchmarks[name] = {
            "judge_scorings": judged,
            "protocol": data.protocol,
            "epochs": len(data.decodings),
            "options": data.options.model_dump(mode="json"),
            "samples": len(data.samples),
            "revision": data.revision,
            "source": data.source,
            "headline": data.benchmark.headline,
            "scorings": scorings[name],
            "fields": declared_fields(data),
            # what the headline was measured on: figures of other item sets do not compare
            "item_set": item_set_of(manifest, name).label,
        }
    headline = []
    whole = metrics[metrics.group.fillna("") == ""]
    for row in whole.itertuples(index=False):
        if row.metric != run.data[row.benchmark].benchmark.headline:
            continue
        value = number(row.value)
        # the interval aggregation computed with the one function for its kind
        low = number(getattr(row, "ci95_low", None))
        high = number(getattr(row, "ci95_high", None))
        headline.append(
            {
                "model": row.model,
                "benchmark": row.benchmark,
                "scoring": row.scoring,
                "metric": row.metric,
                "value": value,
                "low": low,
                "high": high,
                "n": int(row.n),
            }  # fmt: skip
        )
    labels = read_tags(run.store, run.run_id)  # `evalfleet tag`
    return {
        "run_id": run.run_id,
        "tags": list(labels.tags),
        "note": labels.note,
        "metadata": dict(labels.metadata),
        "version": about.version,
        "written_at": about.written_at,
        "code_version": about.code_version,
        "scorer_sha256": about.scorer_sha256,
        "created_at": manifest.created_at,
        "run_code_version": manifest.code_version,
        "models": run.request.models,
        "judges": run.judges,
        "max_image_side": run.request.max_image_side,
        "benchmarks": benchmarks,
        "coverage": coverage,
        "headline": headline,
        "metrics": every_metric(metrics),
        "agreement": [] if agreement is None else _records(agreement),
        "items": items,
    }


def _gzip(rows: list[Any]) -> bytes:
    return gzip.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: _plain(v) for k, v in row.items()} for row in frame.astype(object).to_dict("records")
    ]


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def number(value: Any) -> float | None:
    value = _plain(value)
    return None if value is None else float(value)
