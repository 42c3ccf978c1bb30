"""What the item list knows of each sample besides its id and target: the start of its question
(the list's prompt column) and the values of the sample fields its benchmark declares
(`Benchmark.sample_fields`: ZeroBench's, ROME's task, DatBench's capability, OmniBench's audio
type), which the list shows as columns and filters on (`task_type=speech`); and the whole
metadata of a sample, which its item shows folded (`metadata_of`)."""

from __future__ import annotations

import json
from typing import Any

from evalfleet.core.types import Sample
from evalfleet.engine.run.items import BenchmarkData

PROMPT_CHARS = 120
METADATA_CHARS = 1000  # a metadata value longer than this is cut: the page stays small


def declared_fields(data: BenchmarkData) -> list[str]:
    """The sample fields the benchmark declares for filtering, in its order."""
    return list(getattr(data.benchmark, "sample_fields", ()))


def sample_row(bench: int, data: BenchmarkData, sample: Sample) -> list[Any]:
    """[benchmark, id, target, prompt start, [field values]]: one entry of the index's
    `samples` (a field value is its text, "" where the sample has none)."""
    prompt = " ".join(question_of(sample, data).split())
    if len(prompt) > PROMPT_CHARS:
        prompt = prompt[: PROMPT_CHARS - 1] + "…"
    values = [_text(sample.metadata.get(name)) for name in declared_fields(data)]
    return [bench, sample.id, sample.target, prompt, values]


def question_of(sample: Sample, data: BenchmarkData) -> str:
    """The sample's bare question where the benchmark keeps one (every built-in one does: a
    prompt's template words would start every row alike), else its prompt."""
    meta = sample.metadata
    annotation = meta.get("annotation")
    for found in (
        meta.get("question"),
        annotation.get("question") if isinstance(annotation, dict) else None,
    ):
        if isinstance(found, str) and found.strip():
            return found
    return data.prompts.get(sample.id, "")


def metadata_of(sample: Sample) -> list[list[str]]:
    """The sample's metadata as the item shows it (inspect view's metadata tab): [name, text]
    pairs in the dataset's order; a list or mapping as JSON, bytes as their size, each cut to
    `METADATA_CHARS`."""
    pairs = []
    for name, value in sample.metadata.items():
        if isinstance(value, bytes | bytearray):
            text = f"<{len(value):,} bytes>"
        elif isinstance(value, dict | list | tuple):
            text = json.dumps(value, ensure_ascii=False, default=str)
        else:
            text = _text(value)
        if len(text) > METADATA_CHARS:
            text = text[: METADATA_CHARS - 1] + "…"
        pairs.append([str(name), text])
    return pairs


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
