"""Scoring one shard of a run: a few thousand of one benchmark's stored answers, read, decoded,
scored by every mode (judge modes from their stored judgements) and turned into the samples
table's rows. A shard is what one worker process scores at a time, so that no process ever
holds a whole run's records (`evalfleet.engine.scoring.score` runs the shards and gathers them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evalfleet.benchmarks.interface import Answered, Judgement
from evalfleet.core.record import Record
from evalfleet.core.types import Sample, Score
from evalfleet.engine.run.items import planned_judgements
from evalfleet.engine.run.state import Listing, Reconciled, reconcile
from evalfleet.engine.scoring.panel import panel_scores
from evalfleet.engine.scoring.spend import UsageSums
from evalfleet.storage.layout import ItemKey

if TYPE_CHECKING:
    from evalfleet.engine.store.stored import StoredRun

SAMPLES_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("benchmark", pa.string()),
        ("sample_id", pa.string()),
        ("group_id", pa.string()),
        ("cluster", pa.string()),  # what a bootstrap resamples together (`resampling_unit`)
        ("epoch", pa.int64()),
        ("scoring", pa.string()),
        ("target", pa.string()),
        ("answer", pa.string()),
        ("value", pa.float64()),
        ("correct", pa.bool_()),
        ("judged", pa.bool_()),
        ("score_error", pa.string()),
        ("error", pa.string()),
        ("finish_reason", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("reasoning_tokens", pa.int64()),
    ]
)
SAMPLE_COLUMNS = SAMPLES_SCHEMA.names


@dataclass(frozen=True)
class Shard:
    """Stored answers of one benchmark to score together, in the run's order (model, sample,
    epoch): (answer key, its record's store key, "done" or "failed") each. `judgements` is
    the listing of the judge records stored for them (empty for a run without judges)."""

    benchmark: str
    answers: list[tuple[ItemKey, str, str]]
    judgements: Listing = field(default_factory=Listing)
    keep_answered: bool = False  # the benchmark writes files of its own from every answer


@dataclass
class ShardScores:
    """What one shard adds to the run's tables."""

    benchmark: str
    rows: pa.RecordBatch  # of the samples table (SAMPLES_SCHEMA)
    usage: UsageSums
    scored_keys: list[str]  # the records scored, answers and judgements
    undecodable: list[str]  # answer records that are not records (counted missing)
    undecodable_states: Counter[str]  # what the listing took them for ("done", "failed")
    judge_undecodable: list[str]
    judge_states: Counter[str]  # of the judgements the shard's answers call for
    answered: list[Answered]  # when the shard keeps them (`Shard.keep_answered`)


@dataclass(frozen=True)
class StoredAnswer:
    """One answer of the run that has a record, with the judgements of it there are."""

    benchmark: str
    sample: Sample
    epoch: int
    model: str
    key: str  # the record's store key
    record: Record
    wanted: bool  # the benchmark's judge wants to grade it (a run with judges)
    judged: tuple[tuple[str, str, Record], ...]  # (judge model, key, record) per judgement


def judge_scoring(scoring: str, judge_model: str, primary: bool) -> str:
    """A judge's scoring mode as the tables name it: the primary judge's as the benchmark
    names it ("judge"), an extra judge's with its model ("judge@anthropic/claude-x")."""
    return scoring if primary else f"{scoring}@{judge_model}"


def score_shard(run: StoredRun, shard: Shard) -> ShardScores:
    """Read, decode and score one shard's answers (and their judgements)."""
    blobs = run.store.get_many([record_key for _, record_key, _ in shard.answers])
    answer_state = Reconciled()
    undecodable: list[str] = []
    undecodable_states: Counter[str] = Counter()
    for key, record_key, state in shard.answers:
        record = Record.read(blobs.pop(record_key, None))
        if record is None:
            undecodable.append(record_key)
            undecodable_states[state] += 1
            continue
        answer_state.state[key] = state
        answer_state.record_key[key] = record_key
        answer_state.records[record_key] = record
    judge_state = Reconciled()
    if run.judges:
        planned = [item for item, _ in planned_judgements(run, answer_state)]
        judge_state = reconcile(run.store, shard.judgements, planned, read=True)
    usage = UsageSums()
    scored_keys: list[str] = []
    answered: list[Answered] = []
    cluster_of = run.data[shard.benchmark].benchmark.resampling_unit
    rows: list[tuple[Any, ...]] = []
    for answer in _stored_answers(run, shard, answer_state, judge_state):
        scores, judgements = scores_of(run, answer)
        record = answer.record
        usage.add_answer(answer.model, answer.benchmark, record)
        scored_keys.append(answer.key)
        for judge, judgement_key, judged in answer.judged:
            usage.add_judgement(answer.model, answer.benchmark, judge, judged)
            scored_keys.append(judgement_key)
        if shard.keep_answered:
            response = None if record.failed else record.response or ""
            answered.append(
                Answered(
                    answer.model,
                    answer.sample.id,
                    answer.epoch,
                    response,
                    tuple(scores),
                    judgements,
                )
            )
        _add_rows(rows, answer, scores, cluster_of(answer.sample))
    return ShardScores(
        benchmark=shard.benchmark,
        rows=_batch(rows),
        usage=usage,
        scored_keys=scored_keys,
        undecodable=undecodable,
        undecodable_states=undecodable_states,
        judge_undecodable=judge_state.undecodable,
        judge_states=Counter(judge_state.state.values()),
        answered=answered,
    )


def _stored_answers(
    run: StoredRun, shard: Shard, answer_state: Reconciled, judge_state: Reconciled
) -> list[StoredAnswer]:
    data = run.data[shard.benchmark]
    judge = data.benchmark.judge if run.judges else None
    by_id = data.by_id
    out = []
    for key, _, _ in shard.answers:
        record_key = answer_state.record_key.get(key)
        if record_key is None:  # undecodable: asked again by the next run
            continue
        record = answer_state.records[record_key]
        sample = by_id[key.sample_id]
        response = record.response or ""
        wanted = (
            judge is not None and not record.failed and judge.wants(sample, response, data.options)
        )
        judged = tuple(
            (judge_model, found_key, found)
            for judge_model in (run.judges if wanted else ())
            if (found_key := judge_state.record_key.get(key.judged_by(judge_model)))
            and (found := judge_state.records.get(found_key)) is not None
        )
        out.append(
            StoredAnswer(
                shard.benchmark, sample, key.epoch, key.model, record_key, record, wanted, judged
            )
        )
    return out


def scores_of(run: StoredRun, answer: StoredAnswer) -> tuple[list[Score], dict[str, Judgement]]:
    """Every score of one answer (rule modes, then each judge's modes) and the judgements
    behind the judge modes, by scoring mode."""
    data = run.data[answer.benchmark]
    bench, options, sample = data.benchmark, data.options, answer.sample
    response = answer.record.response or ""
    scores = bench.score(sample, response, options)
    judgements: dict[str, Judgement] = {}
    judge = bench.judge if run.judges else None
    if judge is None:
        return scores, judgements
    found = {j: record for j, _, record in answer.judged}
    members = []  # each judge's scores, for the panel (`engine.scoring.panel`)
    for position, judge_model in enumerate(run.judges):
        judgement = _judgement(found.get(judge_model)) if answer.wanted else None
        members.append(judge.score(sample, response, options, judgement))
        for score in members[-1]:
            scoring = judge_scoring(score.scoring, judge_model, position == 0)
            scores.append(replace(score, scoring=scoring))
            if judgement is not None:
                judgements[scoring] = judgement
    scores += panel_scores(judge.scorings, members)
    return scores, judgements


def _judgement(record: Record | None) -> Judgement:
    if record is None:
        return Judgement(reply=None, error="not judged yet")
    if record.error is not None:
        return Judgement(reply=None, error=f"judge call failed: {record.error.type}")
    return Judgement(reply=record.response or "")


def _add_rows(
    rows: list[tuple[Any, ...]], answer: StoredAnswer, scores: list[Score], cluster: str
) -> None:
    """The samples table's rows of one answer, one per scoring mode (SAMPLES_SCHEMA's
    columns, in order)."""
    record, sample = answer.record, answer.sample
    error = record.error.type if record.error else None
    tokens = record.tokens
    for score in scores:
        rows.append(
            (
                answer.model,
                answer.benchmark,
                sample.id,
                sample.group_id or sample.id,
                cluster,
                answer.epoch,
                score.scoring,
                sample.target,
                None if error else score.answer,
                0.0 if error else float(score.value),
                bool(score.correct) and not error,
                score.judged,
                None if error else score.error,
                error,
                record.finish_reason,
                tokens.input_tokens,
                tokens.output_tokens,
                tokens.reasoning_tokens,
            )
        )


def _batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SAMPLE_COLUMNS)
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, SAMPLES_SCHEMA, strict=True)],
        schema=SAMPLES_SCHEMA,
    )
