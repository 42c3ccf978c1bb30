"""A run's identity: everything that changes what is asked.

A run id is a contract. Its identity (models, judge, benchmarks with their options, each
dataset's revision or fingerprint and sample ids, protocols and decodings) is fixed when the
run is created; a later request under the same id must ask the same thing, or grow it on
purpose with `extend` (more models, more epochs). Anything else is refused before a byte is
written.

The identity is stored in the run's manifest (`evalfleet.engine.store.manifest_types`) and in
each results version's `version.json`; `Identity.of` reads it back, checking every field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalfleet.core.json_fields import Fields
from evalfleet.core.types import ConfigError, Decoding

if TYPE_CHECKING:
    from evalfleet.engine.run.items import BenchmarkData
    from evalfleet.engine.run.request import EvalRequest


class RunError(ConfigError):
    """A run id that cannot be used with this request (one line, naming the way out)."""


@dataclass(frozen=True)
class DataIdentity:
    """Which data a benchmark asked: its revision or fingerprint, and exactly which samples."""

    revision: str
    samples: int
    sample_ids_sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "samples": self.samples,
            "sample_ids_sha256": self.sample_ids_sha256,
        }

    @classmethod
    def of(cls, f: Fields) -> DataIdentity:
        return cls(f.text("revision"), f.count("samples"), f.text("sample_ids_sha256"))


@dataclass(frozen=True)
class BenchmarkIdentity:
    """What one benchmark of a run asks. `options` are the benchmark's own, as JSON: its
    options model (`Benchmark.options`) reads them."""

    data: DataIdentity
    protocol: str | None = None  # None: an identity that did not record it
    decodings: tuple[Decoding, ...] = ()  # one per epoch
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def epochs(self) -> int:
        return len(self.decodings)

    @property
    def answers_per_model(self) -> int:
        return self.data.samples * self.epochs

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": dict(self.options),
            "protocol": self.protocol,
            "decodings": [d.to_dict() for d in self.decodings],
            "data": self.data.to_dict(),
        }

    @classmethod
    def of(cls, f: Fields) -> BenchmarkIdentity:
        return cls(
            data=DataIdentity.of(f.fields("data")),
            protocol=f.text("protocol", None),
            decodings=f.items("decodings", decoding_of),
            options=f.json_object("options", {}),
        )


def decoding_of(f: Fields) -> Decoding:
    return Decoding(
        temperature=f.number("temperature", None),
        top_p=f.number("top_p", None),
        max_tokens=f.count("max_tokens", Decoding.max_tokens),
        seed=f.integer("seed", None),
        reasoning_effort=f.text("reasoning_effort", None),
    )


@dataclass(frozen=True)
class Identity:
    """Everything that changes what a run asks: equal identities mean one and the same run."""

    models: tuple[str, ...]  # sorted
    benchmarks: Mapping[str, BenchmarkIdentity]  # by name, sorted
    judge_model: str | None = None
    extra_judges: tuple[str, ...] = ()  # in the order they were added
    max_image_side: int | None = None

    @property
    def judges(self) -> list[str]:
        """The judge models: the primary first, then the extra ones."""
        return [self.judge_model, *self.extra_judges] if self.judge_model else []

    @property
    def expected_answers(self) -> int:
        """Answers the run asks: samples x epochs x models, per benchmark."""
        return sum(b.answers_per_model for b in self.benchmarks.values()) * len(self.models)

    def to_dict(self) -> dict[str, Any]:
        """As stored. Extra judges appear only when there are some, so the identity of a run
        with one judge reads as it always did."""
        extra = {"extra_judges": list(self.extra_judges)} if self.extra_judges else {}
        return {
            "models": list(self.models),
            "judge_model": self.judge_model,
            **extra,
            "max_image_side": self.max_image_side,
            "benchmarks": {name: b.to_dict() for name, b in self.benchmarks.items()},
        }

    @classmethod
    def of(cls, f: Fields) -> Identity:
        return cls(
            models=f.texts("models"),
            benchmarks=f.each("benchmarks", BenchmarkIdentity.of),
            judge_model=f.text("judge_model", None),
            extra_judges=f.texts("extra_judges"),
            max_image_side=f.count("max_image_side", None),
        )


def run_identity(request: EvalRequest, data: dict[str, BenchmarkData]) -> Identity:
    """The identity of a request over its resolved data."""
    return Identity(
        models=tuple(sorted(request.models)),
        judge_model=request.judge_model,
        extra_judges=tuple(request.extra_judges),
        max_image_side=request.max_image_side,
        benchmarks={
            name: BenchmarkIdentity(
                options=d.options.model_dump(mode="json"),
                protocol=d.protocol,
                decodings=tuple(d.decodings),
                data=data_identity(d),
            )
            for name, d in sorted(data.items())
        },
    )


def data_identity(d: BenchmarkData) -> DataIdentity:
    """What identifies a benchmark's data: its revision or fingerprint, and exactly which
    samples."""
    ids = "\n".join(s.id for s in d.samples).encode()
    return DataIdentity(d.revision, len(d.samples), hashlib.sha256(ids).hexdigest())


def identity_changes(old: Identity, new: Identity) -> list[str]:
    """What differs between two identities, in words."""
    changes = []
    for name in ("models", "judge_model", "extra_judges", "max_image_side"):
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            changes.append(f"{name}: {_shown(before)} -> {_shown(after)}")
    old_b, new_b = old.benchmarks, new.benchmarks
    if sorted(old_b) != sorted(new_b):
        changes.append(f"benchmarks: {sorted(old_b)} -> {sorted(new_b)}")
    for name in sorted(set(old_b) & set(new_b)):
        a, b = old_b[name], new_b[name]
        if a.data != b.data:
            changes.append(f"{name} data: {_data_words(a.data)} -> {_data_words(b.data)}")
        if a.options != b.options:
            changes.append(f"{name} options: {_shown(a.options)} -> {_shown(b.options)}")
        if a.protocol != b.protocol:
            changes.append(f"{name} protocol: {a.protocol} -> {b.protocol}")
        elif a.decodings != b.decodings:
            changes.append(f"{name} decodings: {_decoding_words(a.decodings, b.decodings)}")
    return changes


def _decoding_words(old: tuple[Any, ...], new: tuple[Any, ...]) -> str:
    """What changed between two runs' decodings: the epochs, then each setting with its values
    in the first epoch both ask where it differs (`seed 42 -> 7`: every epoch's seed is the
    run's plus the epoch; `temperature 0.7 -> 0.2` from the first sampled epoch, where a
    greedy one comes first)."""
    words = [f"{len(old)} -> {len(new)} epochs"] if len(old) != len(new) else []
    pairs = [(_settings(a), _settings(b)) for a, b in zip(old, new, strict=False)]
    keys = list(dict.fromkeys(key for pair in pairs for settings in pair for key in settings))
    for key in keys:
        differing = next(((a, b) for a, b in pairs if a.get(key) != b.get(key)), None)
        if differing is not None:
            before, after = differing
            words.append(f"{key} {_shown(before.get(key))} -> {_shown(after.get(key))}")
    return ", ".join(words)


def _settings(decoding: Any) -> dict[str, Any]:
    return decoding.to_dict() if hasattr(decoding, "to_dict") else dict(decoding)


def _shown(value: Any) -> str:
    """A field's value as it reads in JSON-ish words: a list, never a tuple."""
    if isinstance(value, tuple):
        return str(list(value))
    if isinstance(value, Mapping):
        return str(dict(value))
    return str(value)


def _data_words(data: DataIdentity) -> str:
    revision = data.revision
    short = revision[:19] + "…" if len(revision) > 20 else revision
    return f"{data.samples} samples at {short} (ids {data.sample_ids_sha256[:8]})"


def is_extension(old: Identity, new: Identity) -> bool:
    """New asks everything old asked, plus more models, more epochs and/or more judges (a
    first one, or more after it)."""
    if not set(old.models) <= set(new.models):
        return False
    if new.extra_judges[: len(old.extra_judges)] != old.extra_judges:
        return False
    if old.max_image_side != new.max_image_side:
        return False
    if old.judge_model not in (None, new.judge_model):  # a first judge may come
        return False
    if sorted(old.benchmarks) != sorted(new.benchmarks):
        return False
    for name, a in old.benchmarks.items():
        b = new.benchmarks[name]
        if (a.data, a.options, a.protocol) != (b.data, b.options, b.protocol):
            return False
        if b.decodings[: a.epochs] != a.decodings:
            return False
    return True


def check_identity(run_id: str, old: Identity, new: Identity, extend: bool) -> bool:
    """True if `new` extends the run, False if it is the same; else a one-line RunError."""
    if old == new:
        return False
    if extend and is_extension(old, new):
        return True
    detail = "; ".join(identity_changes(old, new)) or "the identity format changed"
    if is_extension(old, new):
        fix = "pass --extend to grow the run, or choose a new --run-id"
    elif set(new.models) - set(old.models):
        fix = (
            "--extend adds models to a run only when nothing else changes: pass --extend with "
            "the run's other settings as they were, or choose a new --run-id"
        )
    else:
        fix = "resume it with the same settings, or choose a new --run-id"
    raise RunError(f"run id {run_id} already exists with a different request ({detail}): {fix}")
