"""The benchmark tasks a request can name, each a plain set of functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks import omnibench, zerobench
from benchmarks.base import Sample, Score
from providers.registry import ConfigError


@dataclass(frozen=True)
class LoadOptions:
    """How to load a benchmark: where from, how much, and what to send instead of media."""

    dataset_path: str | None = None
    limit: int | None = None
    max_image_side: int | None = None
    text_alternatives: frozenset[str] = field(default_factory=frozenset)  # "image", "audio"


@dataclass(frozen=True)
class BenchmarkTask:
    """One evaluable task: how to load it, how to score it, what the simulator needs."""

    name: str
    family: str
    load: Callable[[LoadOptions], list[Sample]]
    score: Callable[[str, Sample], list[Score]]
    revision: Callable[[str | None], str]
    answer_key_entry: Callable[[Sample], dict[str, Any]]
    grouped: bool = False
    text_alternatives: frozenset[str] = frozenset()  # media kinds that have a text stand-in


def _zerobench(split: str, grouped: bool) -> BenchmarkTask:
    return BenchmarkTask(
        name=split,
        family="zerobench",
        load=lambda o: zerobench.load_samples(
            split, dataset_path=o.dataset_path, limit=o.limit, max_side=o.max_image_side
        ),
        score=lambda response, sample: zerobench.score(response, sample.target),
        revision=zerobench.dataset_revision,
        answer_key_entry=zerobench.answer_key_entry,
        grouped=grouped,
    )


def _omnibench() -> BenchmarkTask:
    return BenchmarkTask(
        name="omnibench",
        family="omnibench",
        load=lambda o: omnibench.load_samples(
            o.dataset_path,
            o.limit,
            use_image="image" not in o.text_alternatives,
            use_audio="audio" not in o.text_alternatives,
        ),
        score=omnibench.score,
        revision=omnibench.dataset_revision,
        answer_key_entry=omnibench.answer_key_entry,
        text_alternatives=frozenset({"image", "audio"}),
    )


TASKS: dict[str, BenchmarkTask] = {
    "zerobench": _zerobench("zerobench", grouped=False),
    "zerobench_subquestions": _zerobench("zerobench_subquestions", grouped=True),
    "omnibench": _omnibench(),
}


def get_task(name: str) -> BenchmarkTask:
    try:
        return TASKS[name]
    except KeyError:
        raise ConfigError(
            f"unknown benchmark '{name}': use one of {', '.join(sorted(TASKS))}"
        ) from None
