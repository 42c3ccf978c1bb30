"""The work items of a run: every answer (model, sample, epoch) and the judgement of a stored
answer, each with the hash of exactly what it sends."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from evalfleet.benchmarks.interface import Benchmark, BenchmarkOptions, Exclusion
from evalfleet.core import collector
from evalfleet.core.types import Decoding, Part, Sample
from evalfleet.engine.run.state import Reconciled
from evalfleet.storage.layout import ANSWER, ItemKey
from evalfleet.tasks.work import (
    WorkItem,
    answer_hash_parts,
    answer_hasher,
    parts_digest,
    prompt_json,
    request_hash,
    text_digest,
)


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
    # The plan's Parquet bytes as the reading child made them (engine.prepare.reading), had
    # once the run is opened; None where they are made from the data then. Dropped once stored.
    plan_later: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.digests:
            self.digests = {s.id: parts_digest(s.parts) for s in self.samples}
        if not self.prompts:
            self.prompts = {s.id: prompt_text(s) for s in self.samples}

    @cached_property
    def by_id(self) -> dict[str, Sample]:
        return {s.id: s for s in self.samples}


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
    (`engine.store.stored.StoredRun`). Read-only here: a stored run's are properties."""

    @property
    def run_id(self) -> str: ...
    @property
    def models(self) -> list[str]: ...
    @property
    def judges(self) -> list[str]: ...  # the primary judge first
    @property
    def api_models(self) -> dict[str, str]: ...
    @property
    def data(self) -> dict[str, BenchmarkData]: ...


class AnswerSpace:
    """Every answer of a run in one order (benchmark, sample, epoch, model), each at a place:
    its index in that order. A plan keeps the places of what is left to ask (8 bytes each,
    where a WorkItem and its hash hold about 300) and makes each item again when it is sent:
    a run of a million answers never holds a million items."""

    def __init__(self, run: RunShape) -> None:
        self.run = run
        self.names = list(run.data)
        self.models = list(run.models)
        self.judged = judged_benchmarks(run.judges, run.data)
        self.starts: list[int] = []  # the first place of each benchmark
        size = 0
        for name in self.names:
            self.starts.append(size)
            size += len(run.data[name].samples) * len(run.data[name].decodings) * len(self.models)
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[WorkItem]:
        return self.items(range(self.size))

    def item(self, place: int) -> WorkItem:
        return next(self.items((place,)))

    def sample_of(self, place: int) -> tuple[str, int]:
        """(benchmark, sample index) of a place."""
        which = bisect.bisect_right(self.starts, place) - 1
        name = self.names[which]
        per_sample = len(self.run.data[name].decodings) * len(self.models)
        return name, (place - self.starts[which]) // per_sample

    def items(self, places: Iterable[int]) -> Iterator[WorkItem]:
        """The items at `places`, in ascending order: what a sample's items share is worked
        out once for them (a million are made in a few seconds)."""
        run_id, models, model_count = self.run.run_id, self.models, len(self.models)
        begin = end = 0
        for place in places:
            if not begin <= place < end:  # the next benchmark
                which = bisect.bisect_right(self.starts, place) - 1
                name = self.names[which]
                data = self.run.data[name]
                samples, digests, decodings = data.samples, data.digests, data.decodings
                per_sample = len(decodings) * model_count
                begin = self.starts[which]
                end = begin + len(samples) * per_sample
                heads = [
                    [self._hash_parts(name, epoch, model) for model in models]
                    for epoch in range(len(decodings))
                ]
                returned = name in self.judged
                current = -1
            sample, within = divmod(place - begin, per_sample)
            if sample != current:
                current, sample_id = sample, samples[sample].id
                prompt = prompt_json(digests[sample_id])
            epoch, model = divmod(within, model_count)
            start, tail = heads[epoch][model]
            digest = start.copy()
            digest.update(prompt)
            digest.update(tail)
            yield WorkItem(
                run_id,
                ItemKey(ANSWER, "", models[model], name, sample_id, epoch),
                decodings[epoch],
                digest.hexdigest(),
                returned,
            )

    def places_of(self, name: str) -> range:
        """The places of a benchmark's answers."""
        start = self.starts[self.names.index(name)]
        data = self.run.data[name]
        return range(start, start + len(data.samples) * len(data.decodings) * len(self.models))

    def keys_and_hashes(
        self,
        name: str,
        only: tuple[Container[tuple[Any, ...]], Container[tuple[Any, ...]]] | None = None,
    ) -> Iterator[tuple[tuple[Any, ...], str]]:
        """(key, request hash) of every answer of a benchmark, in place order, no item made:
        the key is the plain tuple of an ItemKey's fields (equal to it, and as hashed). With
        `only` (two containers), an answer whose key neither holds is not hashed ("" in its
        place): a plan has nothing to compare its hash with. A plan classifies a million
        answers this way in about two seconds."""
        data = self.run.data[name]
        models, digests = self.models, data.digests
        heads = [
            [(model, *self._hash_parts(name, epoch, model)) for model in models]
            for epoch in range(len(data.decodings))
        ]
        unhashed = only is not None
        first, second = (*(only or ()), (), ())[:2]
        for sample in data.samples:
            sample_id = sample.id
            prompt = None
            for epoch, row in enumerate(heads):
                for model, start, tail in row:
                    key = (ANSWER, "", model, name, sample_id, epoch)
                    if unhashed and key not in first and key not in second:
                        yield key, ""
                        continue
                    if prompt is None:
                        prompt = prompt_json(digests[sample_id])
                    digest = start.copy()
                    digest.update(prompt)
                    digest.update(tail)
                    yield key, digest.hexdigest()

    def _hash_parts(self, name: str, epoch: int, model: str) -> tuple[Any, bytes]:
        data = self.run.data[name]
        return answer_hash_parts(
            model=model,
            api_model=self.run.api_models[model],
            benchmark=name,
            dataset_revision=data.revision,
            decoding=data.decodings[epoch],
        )


class Todo:
    """Answers left to ask, as places of their run's `AnswerSpace`: a sequence of WorkItems
    made one at a time as they are read (in place order)."""

    def __init__(self, space: AnswerSpace, places: Iterable[int] = ()) -> None:
        self.space = space
        self.places = places if isinstance(places, array) else array("q", places)

    def __len__(self) -> int:
        return len(self.places)

    def __iter__(self) -> Iterator[WorkItem]:
        return self.space.items(self.places)

    def __repr__(self) -> str:
        return f"Todo({len(self)} answers)"

    def where(self, keep: Callable[[WorkItem], bool]) -> Todo:
        """The items `keep` keeps, in the same order."""
        items = self.space.items(self.places)
        kept = (p for p, item in zip(self.places, items, strict=True) if keep(item))
        return Todo(self.space, kept)

    def samples(self) -> list[tuple[str, str]]:
        """(benchmark, sample id) of every item, each sample once, in order (no item made)."""
        seen: dict[tuple[str, int], None] = {}
        sample_of = self.space.sample_of
        last: tuple[str, int] | None = None
        for place in self.places:
            which = sample_of(place)
            if which != last:
                seen[which] = None
                last = which
        data = self.space.run.data
        return [(name, data[name].samples[index].id) for name, index in seen]


@collector.held_back()  # a million items that outlive it: a third of its time went to the GC
def answer_items(run: RunShape) -> list[WorkItem]:
    """Every answer of the run, epoch-major within a sample, models interleaved."""
    return list(AnswerSpace(run))


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
