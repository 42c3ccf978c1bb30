"""The OmniBench benchmark class: what `benchmarks.interface.Benchmark` asks of it, each part
from the modules beside it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from evalfleet.benchmarks.accuracy import accuracy_rows
from evalfleet.benchmarks.hub import revision_of
from evalfleet.benchmarks.interface import (
    Benchmark,
    BenchmarkOptions,
    Demo,
    LoadedData,
    MetricRow,
    ScoredItem,
)
from evalfleet.benchmarks.omnibench import dataset
from evalfleet.benchmarks.omnibench.parsing import (
    EVALSCOPE_VERSION,
    LETTERS,
    ORIGINAL_VERSION,
    parse_answer_evalscope,
    parse_multi_choice_original,
)
from evalfleet.benchmarks.tables import breakdown_summary
from evalfleet.core.types import Sample, Score

if TYPE_CHECKING:
    import pandas as pd

BREAKDOWNS = {"task_type": "task_type", "audio_type": "audio_type"}


PARSER_WORDS = {
    "evalscope": f"evalscope's letter extraction ({EVALSCOPE_VERSION}: the last ANSWER: label, "
    "else the last capital letter if it is an option)",
    "original": f"OmniBench's original parser ({ORIGINAL_VERSION}: (X), then 'X ' or 'X.', "
    "then an option's text)",
}


class OmniBenchOptions(BenchmarkOptions):
    text_alternatives: list[Literal["image", "audio"]] = Field(
        default_factory=list,
        description="send the dataset's caption (image) or transcript (audio) as text instead "
        "of the medium, for models that cannot take it",
    )


class OmniBench(Benchmark):
    name = "omnibench"
    description = "OmniBench image + audio + text multiple choice (accuracy by task and audio type)"
    pool_units = 1142
    hf_path = dataset.HF_PATH
    revision = dataset.REVISION
    options_model = OmniBenchOptions
    scorings = ("evalscope", "original")
    sample_fields = tuple(BREAKDOWNS)  # task_type, audio_type
    typical_answer_tokens = 32  # "think step by step", then "ANSWER: X"
    text_alternatives = frozenset({"image", "audio"})

    def text_alternative_hint(self, kinds: Sequence[str]) -> str | None:
        flags = " ".join(f"--omnibench-text-alternatives {kind}" for kind in kinds)
        return f"pass {flags} to send OmniBench's text stand-ins instead"

    def load(self, path: str | None, options: BenchmarkOptions, limit: int | None) -> LoadedData:
        assert isinstance(options, OmniBenchOptions)
        revision = revision_of(self.revision, path, self.hf_path)
        samples, excluded, source = dataset.load(
            path,
            limit,
            use_image="image" not in options.text_alternatives,
            use_audio="audio" not in options.text_alternatives,
        )
        return LoadedData(samples=samples, revision=revision, source=source, excluded=excluded)

    def score(self, sample: Sample, response: str, options: BenchmarkOptions) -> list[Score]:
        choices = sample.choices or []
        letters = LETTERS[: len(choices)]
        scores = []
        for scoring, answer in (
            ("evalscope", parse_answer_evalscope(response, letters)),
            ("original", parse_multi_choice_original(response, choices)),
        ):
            correct = answer is not None and answer == sample.target
            why = f"{PARSER_WORDS[scoring]} read " + (
                "no option letter, so wrong"
                if answer is None
                else f"option {answer}; the target is {sample.target}, so "
                + ("right" if correct else "wrong")
            )
            scores.append(Score(scoring, answer, correct, float(correct), explanation=why))
        return scores

    def metrics(
        self,
        scored: Sequence[ScoredItem],
        samples: dict[str, Sample],
        protocol: str,
        epochs: int,
    ) -> list[MetricRow]:
        return accuracy_rows(scored, samples, BREAKDOWNS)

    def summary(self, long: pd.DataFrame) -> pd.DataFrame:
        return breakdown_summary(long, "accuracy")

    def answer_key(self, sample: Sample, options: BenchmarkOptions) -> list[dict]:
        return [
            {
                "prompt_sha256": hashlib.sha256(sample.first_text().encode()).hexdigest(),
                "target": sample.target,
                "template": "The best matching option is {answer}.\nANSWER: {answer}",
                "choices": list(LETTERS[: len(sample.choices or LETTERS)]),
            }
        ]

    def demo(self) -> Demo:
        from evalfleet.benchmarks.omnibench.demo import write_omnibench_demo

        return Demo(write_omnibench_demo, ("omnibench",), ("openai/sim-0.3", "google/sim-0.7"))


OMNIBENCH = OmniBench()
