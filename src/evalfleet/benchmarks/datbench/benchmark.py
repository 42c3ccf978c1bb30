"""The DatBench benchmark class: what `benchmarks.interface.Benchmark` asks of it, each part
from the modules beside it."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from evalfleet.benchmarks.datbench import dataset, scoring
from evalfleet.benchmarks.datbench.judge import DatBenchJudge
from evalfleet.benchmarks.datbench.units import BREAKDOWNS, metric_row, unit_epochs, unit_values
from evalfleet.benchmarks.interface import (
    Benchmark,
    BenchmarkOptions,
    Command,
    Demo,
    LoadedData,
    MetricRow,
    ScoredItem,
)
from evalfleet.benchmarks.tables import breakdown_summary
from evalfleet.core.types import DatasetError, Sample, Score

if TYPE_CHECKING:
    import pandas as pd

    from evalfleet.metrics.intervals import UnitValues

Capability = Literal[
    "chart", "counting", "document", "general", "grounding", "math", "scene", "spatial", "table"
]


class DatBenchOptions(BenchmarkOptions):
    capabilities: list[Capability] | None = Field(
        default=None,
        description="capability configs to run (default: all nine; from a local copy, the "
        "ones it holds)",
    )
    full: bool = Field(
        default=False, description="DatBench-Full (every filtered item) instead of DatBench"
    )
    subset: str | None = Field(
        default=None,
        description="a subset file from `evalfleet datbench select`: only those item ids",
    )
    judge_layout: Literal["slots", "append"] = Field(
        default="slots",
        description="judge prompts without a {response} slot: refuse them (slots), or append "
        "the question, ground truth and response after them (append)",
    )


class DatBench(Benchmark):
    name = "datbench"
    description = "DatBench: accuracy per capability and source, circular groups, judge rows"
    hf_path = dataset.HF_PATHS[False]
    revision = dataset.REVISION
    options_model = DatBenchOptions
    protocol = "greedy"
    epochs = 1
    scorings = ("default", "compat")
    sample_fields = BREAKDOWNS  # capability, dataset, eval_mode
    typical_answer_tokens = 24  # a short answer in the row's prompt format
    judge = DatBenchJudge()
    blind: ClassVar[bool] = False
    unit_name = "item"  # a row, or a circular group of rotations

    def load(self, path: str | None, options: BenchmarkOptions, limit: int | None) -> LoadedData:
        """Each capability's samples in turn, `limit` of each (a capability is a config of its
        own: the first N of the whole would be the first capability's alone)."""
        assert isinstance(options, DatBenchOptions)
        from evalfleet.benchmarks.hub import revision_of

        keep = dataset.read_subset(options.subset) if options.subset else None
        samples: list[Sample] = []
        for capability in options.capabilities or dataset.available(path):
            samples += dataset.load_capability(
                capability,
                path,
                options.full,
                blind=self.blind,
                judge_layout=options.judge_layout,
                keep=keep,
                limit=limit,
            )
        seen: set[str] = set()
        for sample in samples:
            if sample.id in seen:
                raise DatasetError(f"DatBench id {sample.id!r} appears twice: ids must be unique")
            seen.add(sample.id)
        hf_path = dataset.HF_PATHS[options.full]
        source = f"{hf_path}@{self.revision}" if path is None else f"dataset path {path}"
        return LoadedData(samples, revision_of(self.revision, path, hf_path), source)

    def samples_at_most(self, limit: int, options: BenchmarkOptions) -> int:
        assert isinstance(options, DatBenchOptions)
        return limit * len(options.capabilities or dataset.CAPABILITIES)

    def score(self, sample: Sample, response: str, options: BenchmarkOptions) -> list[Score]:
        inputs = dataset.scorer_input(sample)
        out = []
        for mode in self.scorings:
            try:
                details = scoring.score(inputs, response, compat=mode == "compat")
            except DatasetError as exc:  # a judge row without its scorer's metadata
                out.append(Score(mode, None, False, 0.0, error=f"no rule score: {exc}"))
                continue
            why = (
                f"DatBench scorer {scoring.scorer_name(inputs.dataset)} ({mode}) read "
                f"{details.answer!r}: score {details.score:g}, "
                f"{'right (0.5 or more)' if details.is_correct else 'wrong (under 0.5)'}"
            )
            score = float(details.score)
            out.append(Score(mode, details.answer, details.is_correct, score, explanation=why))
        return out

    def metrics(
        self,
        scored: Sequence[ScoredItem],
        samples: dict[str, Sample],
        protocol: str,
        epochs: int,
    ) -> list[MetricRow]:
        grouped = unit_values(scored, samples, circular=True)
        per_row = unit_values(scored, samples, circular=False)
        rows = []
        for metric, units in (("accuracy", grouped), ("accuracy_rows", per_row)):
            rows.append(metric_row(metric, [v for v, _ in units.values()], ""))
            for by in BREAKDOWNS:
                groups: dict[str, list[float]] = defaultdict(list)
                for value, meta in units.values():
                    groups[str(meta[by])].append(value)
                rows += [metric_row(metric, vs, f"{by}={g}") for g, vs in groups.items()]
        return rows

    def headline_units(
        self, scored: Sequence[ScoredItem], samples: dict[str, Sample], protocol: str
    ) -> UnitValues:
        """A circular group is one unit, right in an epoch only if every rotation is."""
        from evalfleet.metrics.intervals import units_from_observations

        return units_from_observations(
            [(u, e, v) for u, e, v, _ in unit_epochs(scored, samples, circular=True)]
        )

    def summary(self, long: pd.DataFrame) -> pd.DataFrame:
        """Per model, scoring and group (all, each capability, each source dataset, each
        eval mode): circular-grouped accuracy beside upstream's per-row mean."""
        grouped = breakdown_summary(long, "accuracy")
        rows = breakdown_summary(long, "accuracy_rows").rename(
            columns={"se": "se_rows", "n": "n_rows"}
        )
        keys = ["model", "benchmark", "scoring", "breakdown", "group"]
        return grouped.merge(rows, on=keys, how="left")

    def demo(self) -> Demo | None:
        from evalfleet.benchmarks.datbench.demo import write_datbench_demo

        models = ("openai/sim-0.6", "anthropic/sim-0.8")
        benchmarks = ("datbench", "datbench_blind")
        return Demo(write_datbench_demo, benchmarks, models, judge_model="openai/sim-0.9")

    def commands(self) -> list[Command]:
        from evalfleet.benchmarks.datbench.commands import COMMANDS

        return COMMANDS

    def answer_key(self, sample: Sample, options: BenchmarkOptions) -> list[dict]:
        meta = sample.metadata.get("row_metadata") or {}
        entry = {
            "prompt_sha256": hashlib.sha256(sample.first_text().encode("utf-8")).hexdigest(),
            "target": sample.target,
            "template": "Final Answer: {answer}",
            "images": 1,  # answered blind, a simulated model is right less often
        }
        choices = meta.get("all_choices")
        if isinstance(choices, list) and choices:
            entry["choices"] = [str(c) for c in choices]
        return [entry]


class DatBenchBlind(DatBench):
    name = "datbench_blind"
    description = "DatBench without the images (blind baseline for the vision delta)"
    blind = True
    option_flags_from = "datbench"

    def demo(self) -> None:
        return None  # the datbench demo runs both

    def commands(self) -> list[Command]:
        return []  # datbench's commands read both


DATBENCH = DatBench()
DATBENCH_BLIND = DatBenchBlind()
