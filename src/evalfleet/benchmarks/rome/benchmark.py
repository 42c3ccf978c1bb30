"""The Rome benchmark class: what `benchmarks.interface.Benchmark` asks of it, each part
from the modules beside it."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from evalfleet.benchmarks.interface import (
    Answered,
    Benchmark,
    BenchmarkOptions,
    Command,
    Demo,
    LoadedData,
    MetricRow,
    ScoredItem,
)
from evalfleet.benchmarks.rome import dataset
from evalfleet.benchmarks.rome.judge import RomeJudge
from evalfleet.benchmarks.rome.scoring import (
    dumps,
    rule_score,
    score_annotation,
    scores_json,
    updated_prediction,
)
from evalfleet.core.types import Sample, Score

if TYPE_CHECKING:
    import pandas as pd

SCORINGS = ("upstream", "fixed")
STD_DDOF = 1  # sample standard deviation over the epochs (the leaderboard does not say)
# The eight tasks of BAAI/ROME: a task option naming another would select nothing.
RomeTask = Literal[
    "academic", "diagrams", "puzzles-games", "memes", "geo", "recognition", "multi-image",
    "spatial",
]  # fmt: skip
JUDGED_BY_DEFAULT: list[RomeTask] = ["diagrams"]  # upstream's official setting


class RomeOptions(BenchmarkOptions):
    annotations: str = Field(
        default="test.json",
        description="annotation file under data/ (test-diagrams.json: the diagrams judge set)",
    )
    tasks: list[RomeTask] = Field(
        default_factory=list,
        description="only these tasks; empty: all",
    )
    judge_tasks: list[RomeTask] = Field(
        default_factory=lambda: list(JUDGED_BY_DEFAULT),
        description="tasks graded by the judge model when one is given (upstream's official "
        "use: diagrams); the others keep their rule scores",
    )


class Rome(Benchmark):
    name = "rome"
    description = "ROME visual reasoning (LRM-Eval): accuracy per task, mean ± std over epochs"
    hf_path = dataset.HF_PATH
    revision = dataset.REVISION
    options_model = RomeOptions
    protocol = "sampled-k"
    epochs = 4  # the ROME leaderboard reports four rounds
    pool_units = 281
    summary_unit = (
        "accuracy in percent, as upstream's leaderboard; the leaderboard and compare use "
        "fractions of 1"
    )
    scorings = SCORINGS
    sample_fields = ("task",)
    typical_answer_tokens = 24  # FlagEvalMM's post-prompts ask for the answer in a format
    judge = RomeJudge()

    def load(self, path: str | None, options: BenchmarkOptions, limit: int | None) -> LoadedData:
        assert isinstance(options, RomeOptions)
        samples, revision, source = dataset.load_rome(
            path, options.annotations, limit, options.tasks or None
        )
        return LoadedData(samples=samples, revision=revision, source=source)

    def score(self, sample: Sample, response: str, options: BenchmarkOptions) -> list[Score]:
        return [rule_score(sample, response, mode) for mode in SCORINGS]

    def metrics(
        self,
        scored: Sequence[ScoredItem],
        samples: dict[str, Sample],
        protocol: str,
        epochs: int,
    ) -> list[MetricRow]:
        """Per task and overall: accuracy as the mean over epochs of each epoch's accuracy,
        its standard deviation over epochs (ddof 1), and mean output and reasoning tokens; per
        task, the 95 % interval over the task's questions (`accuracy_ci95_low`/`_high`, by the
        rule of `metrics.intervals`; none for a task of one question)."""
        from evalfleet.metrics.intervals import units_from_observations

        by_task: dict[str, list[ScoredItem]] = defaultdict(list)
        for item in scored:
            if item.score_error is None:
                by_task[""].append(item)
                by_task[f"task={samples[item.sample_id].metadata['task']}"].append(item)
        rows = []
        for group, items in by_task.items():
            per_epoch: dict[int, list[float]] = defaultdict(list)
            for item in items:
                per_epoch[item.epoch].append(item.value)
            accuracies = [sum(v) / len(v) for _, v in sorted(per_epoch.items())]
            mean = sum(accuracies) / len(accuracies)
            std = _std(accuracies)
            n_samples = len({i.sample_id for i in items})
            rows += [
                # no SE here: the spread over epochs is not the uncertainty over questions
                # (the headline's interval, over questions, is `headline_units`')
                MetricRow("accuracy", mean, None, n_samples, group),
                MetricRow("accuracy_std", std, None, len(accuracies), group),
                MetricRow("epochs", float(len(accuracies)), None, len(accuracies), group),
            ]
            if group:  # the whole benchmark's interval is the headline's
                units = units_from_observations([(i.sample_id, i.epoch, i.value) for i in items])
                interval = units.interval()
                rows += [
                    MetricRow(
                        "accuracy_ci95_low",
                        interval.low if interval else None,
                        n=len(units),
                        group=group,
                    ),
                    MetricRow(
                        "accuracy_ci95_high",
                        interval.high if interval else None,
                        n=len(units),
                        group=group,
                    ),
                ]
            rows += [
                MetricRow(
                    "mean_output_tokens",
                    sum(i.output_tokens for i in items) / len(items),
                    n=len(items),
                    group=group,
                ),
                MetricRow(
                    "mean_reasoning_tokens",
                    sum(i.reasoning_tokens for i in items) / len(items),
                    n=len(items),
                    group=group,
                ),
            ]
        return rows

    def summary(self, long: pd.DataFrame) -> pd.DataFrame:
        """One row per (model, scoring, task), "all" first: accuracy in percent as
        mean ± std over the epochs, as the ROME leaderboard shows it."""
        import pandas as pd

        rows = []
        keys = ["model", "benchmark", "scoring", "group"]
        for (model, benchmark, scoring, group), part in long.groupby(keys, sort=False):
            value = dict(zip(part["metric"], part["value"], strict=True))
            headline = part[part["metric"] == "accuracy"].iloc[0]
            n = int(headline["n"])
            mean, std = 100 * value["accuracy"], value.get("accuracy_std")
            std = None if std is None or pd.isna(std) else 100 * std
            low, high = headline.get("ci95_low"), headline.get("ci95_high")
            if group:  # a task: its own interval over its questions
                low, high = value.get("accuracy_ci95_low"), value.get("accuracy_ci95_high")
            rows.append(
                {
                    "model": model,
                    "benchmark": benchmark,
                    "scoring": scoring,
                    "task": group.partition("=")[2] or "all",
                    "accuracy_mean_pct": round(mean, 3),
                    # over questions (each its mean over epochs), the leaderboard's interval
                    "ci95_pct_over_questions": ("—, one question" if n == 1 else None)
                    if low is None or pd.isna(low)
                    else f"{100 * low:.1f}–{100 * high:.1f}",
                    f"accuracy_std_pct_ddof{STD_DDOF}": None if std is None else round(std, 3),
                    # upstream's figure: the spread of the per-epoch accuracies
                    "upstream_mean_std_over_epochs": f"{mean:.1f} ± {std:.1f}"
                    if std is not None
                    else f"{mean:.1f}",
                    "epochs": int(value["epochs"]),
                    "n": n,
                    "mean_output_tokens": round(value["mean_output_tokens"], 1),
                    "mean_reasoning_tokens": round(value["mean_reasoning_tokens"], 1),
                }
            )
        return pd.DataFrame(rows)

    def extra_files(
        self,
        answered: Sequence[Answered],
        samples: dict[str, Sample],
        options: BenchmarkOptions,
    ) -> dict[str, bytes]:
        """Per model, scoring mode and epoch, upstream's `scores.json` and
        `updated_predictions.json` (bucketed by task, failed calls as empty answers)."""
        groups: dict[tuple[str, str, int], list[tuple[Answered, Score]]] = defaultdict(list)
        for item in answered:
            for score in item.scores:
                groups[(item.model, score.scoring, item.epoch)].append((item, score))
        files: dict[str, bytes] = {}
        for (model, scoring, epoch), entries in groups.items():
            buckets, updated = [], []
            for item, score in entries:
                annotation = samples[item.sample_id].metadata["annotation"]
                prediction = {  # `question` takes the annotation's value when merged
                    "question_id": annotation["question_id"],
                    "question": annotation["question"],
                    "answer": item.response or "",
                }
                if score.judged:
                    value = score.value
                    result = None
                    judgement = item.judgements.get(scoring)
                    reply = judgement.reply if judgement else None
                else:
                    mode = scoring if scoring in SCORINGS else "upstream"
                    result = score_annotation(annotation, item.response or "", mode)
                    value, reply = result.value, None
                buckets.append((annotation.get("task") or "all",) * 2 + (value,))
                updated.append(updated_prediction(prediction, annotation, result, value, reply))
            folder = f"{model.replace('/', '__')}/{scoring.replace('/', '__')}/epoch-{epoch}"
            files[f"{folder}/scores.json"] = dumps(scores_json(buckets))
            files[f"{folder}/updated_predictions.json"] = dumps(updated)
        return files

    def resampling_unit(self, sample: Sample) -> str:
        return sample.id  # `group_id` is the task: a bucket of the tables, not a cluster

    def demo(self) -> Demo:
        from evalfleet.benchmarks.rome.demo import write_rome_demo

        models = ("openai/sim-0.3", "openai/sim-0.7")
        return Demo(write_rome_demo, ("rome",), models, judge_model="anthropic/sim-0.9")

    def commands(self) -> list[Command]:
        from evalfleet.benchmarks.rome.commands import COMMANDS

        return COMMANDS

    def answer_key(self, sample: Sample, options: BenchmarkOptions) -> list[dict]:
        prompt = sample.first_text()
        annotation = sample.metadata["annotation"]
        entry: dict[str, Any] = {
            "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            "target": correct_answer(annotation),
            "template": "Final Answer: {answer}",
        }
        if annotation["evaluator"] == "choices_matching":
            entry["choices"] = sorted({*"ABCDE", correct_answer(annotation)})
        return [entry]


def correct_answer(annotation: dict) -> str:
    """An answer the item's evaluator scores as right (for the simulator's answer key)."""
    kwargs = annotation["evaluator_kwargs"]
    evaluator = annotation["evaluator"]
    if evaluator == "choices_matching":
        return ", ".join(kwargs["label"].upper())
    if evaluator == "number_matching":
        return str(kwargs["value_to_match"])
    if evaluator == "key_items_matching":
        items = kwargs["key_items"]
        return ", ".join(v[0] for v in items) if isinstance(items[0], list) else items[0]
    if evaluator == "ordered_list_matching":
        order = kwargs["order"]
        return ", ".join(order) if isinstance(order, list) else order
    if evaluator == "location_matching":
        return kwargs["location_fine_grained"][0]
    if evaluator == "interval_matching":
        return f"{kwargs['interval'][0]} {kwargs['units'][0] if kwargs['units'] else ''}".strip()
    if evaluator == "multi_interval_matching":
        units = kwargs["units"][0] if kwargs["units"] else []
        return f"{kwargs['intervals'][0][0]} {units[0] if units else ''}".strip()
    raise ValueError(evaluator)


def _std(values: list[float]) -> float | None:
    if len(values) <= STD_DDOF:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - STD_DDOF))


ROME = Rome()
