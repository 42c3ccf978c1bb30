"""The work items of a run: every answer (model, sample, epoch) and the judgement of a stored
answer, each with the hash of exactly what it sends."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from benchmarks.interface import Benchmark, BenchmarkOptions, Exclusion
from core import collector
from core.types import Decoding, Part, Sample
from engine.run.state import Reconciled
from storage.layout import ANSWER, ItemKey
from tasks.work import WorkItem, answer_hasher, parts_digest, request_hash, text_digest


@dataclass
class BenchmarkData:
    """One benchmark of a run: its samples as sent, where they came from, its epochs."""

    benchmark: Benchmark
    options: BenchmarkOptions
    samples: list[Sample]
    revision: str
    source: str
    protocol: str
    decodings: list[Decoding]
    excluded: list[Exclusion] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # sample id -> prompt digest
    prompts: dict[str, str] = field(default_factory=dict)  # sample id -> prompt text
    # The plan's Parquet bytes when its reader made them (engine.prepare.reading); dropped once
    # stored.
    plan_table: bytes = field(default=b"", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.digests:
            self.digests = {s.id: parts_digest(s.parts) for s in self.samples}
        if not self.prompts:
            self.prompts = {s.id: prompt_text(s) for s in self.samples}

    @cached_property
    def by_id(self) -> dict[str, Sample]:
        return {s.id: s for s in self.samples}

    def identity(self) -> dict[str, object]:
        """What identifies the data: revision or fingerprint, and exactly which samples."""
        ids = "\n".join(s.id for s in self.samples).encode()
        return {
            "revision": self.revision,
            "samples": len(self.samples),
            "sample_ids_sha256": hashlib.sha256(ids).hexdigest(),
        }


def prompt_text(sample: Sample) -> str:
    """The text parts of a prompt, as a person reads them (media apart)."""
    return "\n\n".join(p.text for p in sample.parts if p.kind == "text" and p.text)


def judged_benchmarks(judges: list[str], data: dict[str, BenchmarkData]) -> set[str]:
    """The benchmarks whose answers this run's judges grade."""
    if not judges:
        return set()
    return {name for name, d in data.items() if d.benchmark.judge is not None}


class RunShape(Protocol):
    """What the items of a run are made from: a run being resolved to be asked
    (`engine.prepare.resolve.ResolvedRun`) or one read back from the store
    (`engine.store.stored.StoredRun`)."""

    run_id: str
    models: list[str]
    judges: list[str]  # the primary judge first
    api_models: dict[str, str]
    data: dict[str, BenchmarkData]


@collector.held_back()  # a million items that outlive it: a third of its time went to the GC
def answer_items(run: RunShape) -> list[WorkItem]:
    """Every answer of the run, epoch-major within a sample, models interleaved."""
    judged = judged_benchmarks(run.judges, run.data)
    items: list[WorkItem] = []
    for name, bench_data in run.data.items():
        hashers = [
            [
                (
                    model_id,
                    answer_hasher(
                        model=model_id,
                        api_model=run.api_models[model_id],
                        benchmark=name,
                        dataset_revision=bench_data.revision,
                        decoding=decoding,
                    ),
                )
                for model_id in run.models
            ]
            for decoding in bench_data.decodings
        ]
        returned = name in judged
        for sample in bench_data.samples:
            digest = bench_data.digests[sample.id]
            for epoch, decoding in enumerate(bench_data.decodings):
                for model_id, hashed in hashers[epoch]:
                    items.append(
                        WorkItem(
                            run_id=run.run_id,
                            key=ItemKey(ANSWER, "", model_id, name, sample.id, epoch),
                            decoding=decoding,
                            request_hash=hashed(digest),
                            return_response=returned,
                        )
                    )
    return items


def answer_hashes(run: RunShape) -> Callable[[ItemKey], str]:
    """The request hash of any answer of the run, as `answer_items` makes it, without making
    every item (the report of a large run reads its records a chunk at a time)."""
    hashers: dict[tuple[str, str, int], Callable[[str], str]] = {}

    def hashed(key: ItemKey) -> str:
        data = run.data[key.benchmark]
        hasher = hashers.get((key.model, key.benchmark, key.epoch))
        if hasher is None:
            hasher = answer_hasher(
                model=key.model,
                api_model=run.api_models[key.model],
                benchmark=key.benchmark,
                dataset_revision=data.revision,
                decoding=data.decodings[key.epoch],
            )
            hashers[(key.model, key.benchmark, key.epoch)] = hasher
        return hasher(data.digests[key.sample_id])

    return hashed


def judge_item(
    run: RunShape, judge_model: str, answer: ItemKey, answer_store_key: str, response: str
) -> tuple[WorkItem, list[Part]] | None:
    """The judgement of one stored answer by `judge_model`, with its grader prompt; None if
    the benchmark's judge does not want this answer (e.g. rule extraction already found one)."""
    bench_data = run.data[answer.benchmark]
    judge = bench_data.benchmark.judge
    if judge is None:
        return None
    sample = bench_data.by_id[answer.sample_id]
    if not judge.wants(sample, response, bench_data.options):
        return None
    parts = [Part.of_text(judge.prompt(sample, response))]
    graded = text_digest(response)
    item = WorkItem(
        run_id=run.run_id,
        key=answer.judged_by(judge_model),
        decoding=judge.decoding,
        request_hash=request_hash(
            model=judge_model,
            api_model=run.api_models[judge_model],
            benchmark=answer.benchmark,
            dataset_revision=bench_data.revision,
            prompt_digest=parts_digest(parts),
            decoding=judge.decoding,
            graded=graded,
        ),
        graded=(answer_store_key, graded),
    )
    return item, parts


def planned_judgements(
    run: RunShape, answer_state: Reconciled
) -> list[tuple[WorkItem, list[Part]]]:
    """The judgements the stored answers call for, with their grader prompts (read from
    `answer_state.records`): one per judge and answer done whose benchmark's judge wants it."""
    out = []
    for key, record_key in answer_state.record_key.items():
        record = answer_state.records.get(record_key)
        if answer_state.state[key] != "done" or record is None or record.failed:
            continue
        for judge_model in run.judges:
            made = judge_item(run, judge_model, key, record_key, record.response or "")
            if made is not None:
                out.append(made)
    return out
