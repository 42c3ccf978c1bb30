"""The ZeroBench benchmark class: what `benchmarks.interface.Benchmark` asks of it, each part
from the modules beside it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from evalfleet.benchmarks.hub import revision_of
from evalfleet.benchmarks.interface import (
    Benchmark,
    BenchmarkOptions,
    Demo,
    LoadedData,
    MetricRow,
    ScoredItem,
)
from evalfleet.benchmarks.zerobench import dataset, metrics
from evalfleet.benchmarks.zerobench.judge import FallbackParser
from evalfleet.benchmarks.zerobench.scoring import SCORERS
from evalfleet.core.types import Sample, Score

if TYPE_CHECKING:
    import pandas as pd

    from evalfleet.metrics.intervals import UnitValues


class ZeroBench(Benchmark):
    hf_path = dataset.HF_PATH
    revision = dataset.REVISION
    protocol = "zerobench-paper"
    epochs = 5
    scorings = tuple(SCORERS)
    # "think step by step" and the answer in braces: a few short steps at the least
    typical_answer_tokens = 32
    judge = FallbackParser()
    default = True
    pool_units = 100  # main questions (the subquestions belong to them)
    grouped: ClassVar[bool] = False

    def load(self, path: str | None, options: BenchmarkOptions, limit: int | None) -> LoadedData:
        revision = revision_of(self.revision, path)
        samples, source = dataset.load_samples(self.name, path, limit)
        return LoadedData(samples=samples, revision=revision, source=source)

    def score(self, sample: Sample, response: str, options: BenchmarkOptions) -> list[Score]:
        return [scorer(response, sample.target) for scorer in SCORERS.values()]

    def metrics(
        self,
        scored: Sequence[ScoredItem],
        samples: dict[str, Sample],
        protocol: str,
        epochs: int,
    ) -> list[MetricRow]:
        groups = {sid: s.group_id or sid for sid, s in samples.items()}
        return metrics.metric_rows(
            scored, groups, protocol=protocol, epochs=epochs, grouped=self.grouped
        )

    def summary(self, long: pd.DataFrame) -> pd.DataFrame:
        return metrics.summary_table(long)

    def headline_units(
        self, scored: Sequence[ScoredItem], samples: dict[str, Sample], protocol: str
    ) -> UnitValues:
        groups = {sid: s.group_id or sid for sid, s in samples.items()}
        return metrics.headline_units(scored, groups, protocol=protocol, grouped=self.grouped)

    def answer_key(self, sample: Sample, options: BenchmarkOptions) -> list[dict]:
        prompt = sample.first_text()
        return [
            {
                "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                "target": sample.target,
                "template": "So the final answer is {{answer}}",
            }
        ]


class ZeroBenchMain(ZeroBench):
    name = "zerobench"
    description = "ZeroBench main questions (pass@1, pass@5, 5/5, num_correct)"

    def demo(self) -> Demo:
        from evalfleet.benchmarks.zerobench.demo import write_demo_dataset

        models = ("openai/sim-0.3", "openai/sim-0.7")
        return Demo(write_demo_dataset, ("zerobench", "zerobench_subquestions"), models)


class ZeroBenchSubquestions(ZeroBench):
    name = "zerobench_subquestions"
    description = "ZeroBench subquestions (accuracy grouped by main question, with SE)"
    grouped = True
    headline = "grouped_accuracy"  # the paper's subquestion pass@1
    unit_name = "main question"


ZEROBENCH = ZeroBenchMain()
ZEROBENCH_SUBQUESTIONS = ZeroBenchSubquestions()
