"""The types every DatBench scorer shares: the row it reads, the result it returns, and the
one-line error raised when a row lacks metadata a scorer needs.

Upstream builds a "scorer sample" dict per row (``_convert_sample_for_scorer``) and raises a
``ValueError`` when required metadata is missing. Here the row is a frozen ``ScorerInput``,
metadata stays a dict, and a missing field raises ``core.types.DatasetError`` naming the row,
the dataset and the field, so rows can be validated when the dataset is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalfleet.core.types import DatasetError


@dataclass(frozen=True)
class ScorerInput:
    """One DatBench row as the scorers see it."""

    question_id: str
    question: str  # the bare ``question`` (no prompt prefix/suffix), as upstream passes it
    answer: str
    all_answers: list[str]
    dataset: str  # ``source_info.dataset``
    metadata: dict  # the row's metadata JSON, already parsed (may be {})


@dataclass(frozen=True)
class ScoreDetails:
    """One scored row: ``score`` may be fractional; ``is_correct`` is ``score >= 0.5``."""

    score: float
    answer: str | None  # the prediction the scorer read; None when it read nothing
    details: dict  # the other score_details keys upstream returns (JSON-serialisable)

    @property
    def is_correct(self) -> bool:
        return self.score >= 0.5


def missing_metadata(sample: ScorerInput, fields: Iterable[str], scorer: str) -> DatasetError:
    """The one-line error for a row whose metadata lacks ``fields``."""
    names = ", ".join(repr(name) for name in fields)
    return DatasetError(
        f"DatBench row {sample.question_id!r} (dataset {sample.dataset!r}): "
        f"metadata lacks {names}, which the {scorer} scorer requires"
    )


def require(sample: ScorerInput, fields: Iterable[str], scorer: str) -> None:
    """Raise ``DatasetError`` unless every field is a key of the row's metadata."""
    metadata = sample.metadata or {}
    missing = [name for name in fields if name not in metadata]
    if missing:
        raise missing_metadata(sample, missing, scorer)


def meta(sample: ScorerInput, key: str, default: Any = None) -> Any:
    """A metadata value, with ``default`` when the key is absent (a present None stays None)."""
    return (sample.metadata or {}).get(key, default)


def or_none(text: str | None) -> str | None:
    """``None`` for an empty prediction, else the prediction."""
    return text if text else None
