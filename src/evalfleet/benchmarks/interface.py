"""The benchmark interface: what one benchmark package provides, and nothing more.

A benchmark is one object (a `Benchmark` subclass instance) registered under its name in
`benchmarks.registry`. The flows, the CLI and the simulator only ever talk to it through the
methods below, in the spirit of inspect_ai's dataset / solver / scorer / metric split:

========================  =================================================================
what                      where
========================  =================================================================
answer length             `typical_answer_tokens` (and the judge's `reply_tokens`): the low
                          end of the cost estimate before any answer is stored
options                   `options_model`: a pydantic model; part of the run identity and
                          rendered as a form in the Prefect UI and as `--NAME-FIELD` flags
epoch protocol            `protocol` and `epochs`: the defaults a request may override
                          (`evalfleet.benchmarks.protocols`)
data                      `load(path, options, limit)`: from the Hub at the pinned
                          `revision`, or from a local copy (`evalfleet.benchmarks.hub` reads both)
prompt                    built by `load`: each `Sample.parts` is exactly what is sent
scoring                   `score(sample, response, options)`: one `Score` per rule scoring
                          mode (`scorings`, the headline first)
judge (optional)          `judge`: a `JudgeSpec`: when to ask, the grader prompt, its
                          decoding, and its own scoring modes from the judge's reply (used
                          only when the run names a judge model)
metric set                `metrics(scored, samples, protocol)`: `MetricRow`s for the long
                          table; `summary(long)`: the benchmark's own wide table;
                          `extra_files(answered, ...)`: any files of its own (optional)
simulator                 `answer_key(sample, options)`: what the provider simulator needs to
                          answer this prompt (correctly with the model's accuracy), the
                          answer's format (a template) included
demo                      `demo()`: what `evalfleet demo -b NAME` runs: a small dataset this
                          package writes in the upstream format, models, a judge (optional)
commands                  `commands()`: subcommands of its own (`evalfleet score rome`,
                          `evalfleet datbench select`), given a `CommandContext` (optional)
default                   `default`: run when a request names no benchmark
========================  =================================================================

Scoring never sees media: at aggregation the samples are read back from the run's plan
(`Sample.parts` empty), so `score`, `metrics` and the judge prompt may use only `target`,
`choices`, `group_id` and `metadata`. Put in `metadata` whatever they need (question text,
task, evaluator arguments), as plain JSON values.

A new benchmark is one package implementing this class plus one line in
`benchmarks.registry.BUILTIN`, or a package of its own that declares it as an entry point in
the `benchmarks` group (see `benchmarks.registry`). Nothing outside `benchmarks/`
names a benchmark.
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from evalfleet.benchmarks import option_values
from evalfleet.core.types import ConfigError, Decoding, Sample, Score

if TYPE_CHECKING:
    import pandas as pd

    from evalfleet.metrics.intervals import UnitValues


class BenchmarkOptions(BaseModel):
    """A benchmark's options. Every field needs a default and a description (the UI form)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(BenchmarkOptions):
    """For benchmarks without options."""


@dataclass(frozen=True)
class Exclusion:
    """A dataset row left out of the run, and why (reported, recorded in the manifest)."""

    id: str
    reason: str


@dataclass
class LoadedData:
    """What `Benchmark.load` returns.

    `revision` identifies the data: the pinned Hub commit, or "sha256:<hex>" over a local
    copy's files. With the sample ids it is part of the run identity.
    """

    samples: list[Sample]
    revision: str
    source: str
    excluded: list[Exclusion] = field(default_factory=list)


@dataclass(frozen=True)
class Judgement:
    """The judge's stored reply to one answer (`reply` None when the judge call failed)."""

    reply: str | None
    error: str | None = None


@dataclass(frozen=True)
class MetricRow:
    """One figure of the long table. `group` is "" for the whole benchmark, else "by=value"."""

    metric: str
    value: float | None
    se: float | None = None
    n: int = 0
    group: str = ""
    note: str = ""  # why the value is missing, where it is (shown as a footnote)


@dataclass(frozen=True, slots=True)  # a run of a million answers builds millions
class ScoredItem:
    """One scored (sample, epoch) under one scoring mode: what `metrics` receives."""

    sample_id: str
    group_id: str
    epoch: int
    value: float
    correct: bool
    errored: bool  # the completion failed for good (counts as incorrect)
    judged: bool
    score_error: str | None  # the score could not be computed (excluded from the value)
    output_tokens: int = 0  # of the answer, reasoning included
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class Answered:
    """One stored answer with all its scores, for benchmarks that write files of their own
    (`Benchmark.extra_files`)."""

    model: str
    sample_id: str
    epoch: int
    response: str | None  # None when the call failed for good
    scores: tuple[Score, ...]
    judgements: dict[str, Judgement] = field(default_factory=dict)  # by judge scoring mode


@dataclass(frozen=True)
class Demo:
    """What `evalfleet demo -b NAME` runs against the simulator: `write` puts a small dataset
    in the upstream format under a folder and returns its path; the run evaluates `models` on
    `benchmarks` (this one and its variants), graded by `judge_model` where there is one."""

    write: Callable[[Path], Path]
    benchmarks: tuple[str, ...]
    models: tuple[str, ...]
    judge_model: str | None = None


class StoredResults(Protocol):
    """A store's runs as a benchmark's own commands read them (the command line gives it).
    Each method raises a one-line ConfigError naming the fix when the run or its results
    are not there."""

    def describe(self) -> str:
        """Where the runs are, for messages."""

    def samples(self, run_id: str) -> pd.DataFrame:
        """The run's latest samples table (`samples.parquet`)."""

    def plan(self, run_id: str, benchmark: str) -> list[Sample]:
        """The samples one benchmark of the run asked, without media, in dataset order."""


class CommandContext(Protocol):
    """What the command line lends a benchmark's command."""

    #: The store given by --store (else $EVALFLEET_STORE, else ./runs), for commands that
    #: read runs (`Command.reads_runs`); None otherwise.
    results: StoredResults | None

    def ask_judge(
        self, model_id: str, prompts: list[str], decoding: Decoding, simulator_url: str | None
    ) -> list[str | None]:
        """A model's reply to each prompt, in order (None where the call failed for good),
        asked directly from this process with the usual client, retries and key lookup."""


@dataclass(frozen=True)
class Command:
    """A subcommand a benchmark adds to `evalfleet`: `path` names it, e.g. ("datbench",
    "select") is `evalfleet datbench select`. `arguments` adds its arguments; `run` does the
    work and returns the exit code. `group_help` describes the first word when this command
    creates it. A command that reads runs gets --store and --s3-endpoint-url and
    `context.results`."""

    path: tuple[str, ...]
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, CommandContext], int]
    description: str | None = None
    group_help: str | None = None
    reads_runs: bool = False


class JudgeSpec(ABC):
    """How a benchmark asks an LLM to grade an answer, and scores from its reply.

    A judgement is a work item of its own: it goes out once the answer it grades is stored,
    under the judge model's rate limits, and is checkpointed and resumed like a completion.
    Its request hash covers the judge model, the grader prompt and the graded answer, so a
    re-answered item is re-judged and nothing else is.
    """

    #: The judge scoring modes `score` returns, one Score each.
    scorings: ClassVar[tuple[str, ...]] = ("judge",)
    decoding: ClassVar[Decoding] = Decoding(temperature=0.0, top_p=1.0, max_tokens=4096, seed=42)
    #: Output tokens of the shortest reply the grader prompt asks for: the low end of the
    #: estimate's judge rows (None: not declared).
    reply_tokens: ClassVar[int | None] = None
    #: Whether `wants` depends on the answer itself (ZeroBench's judge reads only answers whose
    #: format broke): before an answer is given, its judgement may or may not be asked.
    answer_decides: ClassVar[bool] = False
    #: Whether the judge reads the answer out of the response (ZeroBench's fallback parser: its
    #: Score's answer is that answer) rather than grading the response (its Score's answer is
    #: the verdict, which the run report shows as a verdict, never as an extracted answer).
    extracts: ClassVar[bool] = False

    @abstractmethod
    def wants(self, sample: Sample, response: str, options: BenchmarkOptions) -> bool:
        """Whether this answer is to be judged (e.g. only when rule extraction failed)."""

    @abstractmethod
    def prompt(self, sample: Sample, response: str) -> str:
        """The grader prompt for this answer."""

    @abstractmethod
    def score(
        self,
        sample: Sample,
        response: str,
        options: BenchmarkOptions,
        judgement: Judgement | None,
    ) -> list[Score]:
        """One Score per mode of `scorings`. `judgement` is None when `wants` said no (the
        rules decide); a wanted but missing or failed judgement has `reply` None."""

    def answer_key(self, samples: Sequence[Sample], options: BenchmarkOptions) -> list[dict]:
        """Simulator entries that let a simulated judge grade this benchmark's prompts."""
        return []


class Benchmark(ABC):
    """One benchmark (see the module docstring for the whole contract)."""

    #: Registry name: used in requests, store keys and tables. Letters, digits, '_' and '-'.
    name: ClassVar[str]
    #: One line for `--help` and the UI.
    description: ClassVar[str]
    #: Hugging Face dataset id and the pinned revision loaded when no local copy is given.
    hf_path: ClassVar[str]
    revision: ClassVar[str]
    options_model: ClassVar[type[BenchmarkOptions]] = NoOptions
    #: Default epoch protocol (`evalfleet.benchmarks.protocols`) and its number of epochs.
    protocol: ClassVar[str] = "greedy"
    epochs: ClassVar[int] = 1
    #: Rule scoring modes, headline first.
    scorings: ClassVar[tuple[str, ...]]
    #: Output tokens of a short answer in the format the prompt asks for (a few lines of
    #: reasoning and the final answer): the low end of what a model writes, used by the
    #: estimate before any answer is stored (models that reason at length write more). None:
    #: not declared (the estimate assumes 1000 and has no low figure for the output).
    typical_answer_tokens: ClassVar[int | None] = None
    #: The whole-benchmark metric (group "") the leaderboard ranks by: the mean of the
    #: per-unit values of `headline_units`.
    headline: ClassVar[str] = "accuracy"
    #: How many units the upstream dataset holds (None: more than a run asks). `compare` says
    #: a difference cannot be settled when detecting it would take more units than this.
    pool_units: ClassVar[int | None] = None
    #: What a unit of the headline is called in sentences ("question", "main question").
    unit_name: ClassVar[str] = "question"
    #: The unit of the figures of `summary`, said above each of its tables.
    summary_unit: ClassVar[str] = "values are fractions of 1"
    judge: ClassVar[JudgeSpec | None] = None
    #: Sample metadata fields the report's list shows and filters on ("task", "audio_type").
    sample_fields: ClassVar[tuple[str, ...]] = ()
    #: Media kinds this benchmark can replace by a text stand-in, and the option that does it.
    text_alternatives: ClassVar[frozenset[str]] = frozenset()
    #: A variant of another benchmark (same options model) takes that one's command-line
    #: option flags instead of its own, so both always ask the same questions.
    option_flags_from: ClassVar[str | None] = None
    #: Run when a request names no benchmark.
    default: ClassVar[bool] = False

    def options(
        self,
        raw: dict[str, Any] | BenchmarkOptions | None = None,
        *,
        named: Callable[[str], str] | None = None,
    ) -> BenchmarkOptions:
        """Validated options, defaults filled in. A value the options do not take is one
        ConfigError line naming the option (`named(field)`: a flag on the command line; by
        default NAME.FIELD, as in the request) and the values it takes."""
        if isinstance(raw, BenchmarkOptions):
            if isinstance(raw, self.options_model):
                return raw
            raw = raw.model_dump()  # another benchmark's options: validated as fields
        try:
            return self.options_model(**(raw or {}))
        except ValidationError as exc:
            label = named or (lambda field: f"{self.name}.{field}")
            raise ConfigError(option_values.problem(self.options_model, exc, label)) from None

    def text_alternative_hint(self, kinds: Sequence[str]) -> str | None:
        """How to ask for text stand-ins of these media kinds, or None if there are none."""
        return None

    @abstractmethod
    def load(self, path: str | None, options: BenchmarkOptions, limit: int | None) -> LoadedData:
        """Samples in dataset order with their prompt parts; `limit` keeps the first N."""

    def samples_at_most(self, limit: int, options: BenchmarkOptions) -> int:
        """The most samples `load` gives under `limit`, known before the data is read (what
        decides that a run is small enough to run without Ray): `limit` itself, unless the
        limit applies to each part of the benchmark (DatBench: each capability)."""
        return limit

    @abstractmethod
    def score(self, sample: Sample, response: str, options: BenchmarkOptions) -> list[Score]:
        """One Score per mode of `scorings`, in that order."""

    @abstractmethod
    def metrics(
        self,
        scored: Sequence[ScoredItem],
        samples: dict[str, Sample],
        protocol: str,
        epochs: int,
    ) -> list[MetricRow]:
        """The metric set of one (model, scoring mode); `epochs` is how many the run asked
        (the k of pass@k: `evalfleet.benchmarks.protocols.sampled_epochs`)."""

    def summary(self, long: pd.DataFrame) -> pd.DataFrame:
        """The benchmark's wide table from its long-table rows (default: one row per model
        and scoring mode, one column per whole-benchmark metric, with SE columns)."""
        from evalfleet.benchmarks.tables import default_summary

        return default_summary(long)

    def extra_files(
        self,
        answered: Sequence[Answered],
        samples: dict[str, Sample],
        options: BenchmarkOptions,
    ) -> dict[str, bytes]:
        """Files of the benchmark's own, written beside the tables under `<name>/` (for
        example upstream's own output format). None by default."""
        return {}

    @abstractmethod
    def answer_key(self, sample: Sample, options: BenchmarkOptions) -> list[dict]:
        """Simulator answer-key entries for this sample (`simulator.answering`): its prompt's
        hash, the target, and the answer's `template` (the format the prompt asks for)."""

    def headline_units(
        self, scored: Sequence[ScoredItem], samples: dict[str, Sample], protocol: str
    ) -> UnitValues:
        """The headline as per-unit values (`evalfleet.metrics.intervals`): what its interval, the
        leaderboard's ranks and `compare` resample. By default a unit is a sample, valued by
        its mean over epochs; items whose score could not be computed are left out."""
        from evalfleet.metrics.intervals import (
            units_from_observations,  # NumPy: not in a run's driver
        )

        return units_from_observations(
            [(i.sample_id, i.epoch, i.value) for i in scored if i.score_error is None]
        )

    def resampling_unit(self, sample: Sample) -> str:
        """The items a bootstrap must resample together because they are not independent
        (`compare`, rank intervals): by default the sample's group (ZeroBench's subquestions
        of one main question, DatBench's rotations of one circular question), else itself.
        A benchmark whose `group_id` only buckets results (ROME's task) returns the id."""
        return sample.group_id or sample.id

    def demo(self) -> Demo | None:
        """What `evalfleet demo -b NAME` runs, or None (not a choice of `demo`)."""
        return None

    def commands(self) -> list[Command]:
        """Subcommands of this benchmark's own (none by default)."""
        return []


def scored_items(samples: pd.DataFrame) -> dict[tuple[str, str, str], list[ScoredItem]]:
    """The samples table's rows as ScoredItems, by (model, benchmark, scoring), read back from
    `samples.parquet` (a missing text reads as NaN where pandas gives the column a text dtype:
    it is missing, not an error)."""
    grouped: dict[tuple[str, str, str], list[ScoredItem]] = defaultdict(list)
    for row in samples.itertuples(index=False):
        grouped[(row.model, row.benchmark, row.scoring)].append(
            ScoredItem(
                sample_id=row.sample_id,
                group_id=row.group_id,
                epoch=row.epoch,
                value=row.value,
                correct=row.correct,
                errored=_present(row.error),
                judged=row.judged,
                score_error=row.score_error if _present(row.score_error) else None,
                output_tokens=row.output_tokens,
                reasoning_tokens=row.reasoning_tokens,
            )
        )
    return grouped


def _present(value: object) -> bool:
    return value is not None and value == value  # NaN is the one value unequal to itself
