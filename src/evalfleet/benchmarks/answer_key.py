"""The simulator's answer key for a dataset: each benchmark's entries for its samples (and its
judge's entries), as the JSONL lines `evalfleet simulate --answers` reads."""

from __future__ import annotations

import json
from pathlib import Path

from evalfleet.benchmarks import registry


def answer_key_lines(
    dataset_path: str, benchmarks: list[str], options: dict[str, dict] | None = None
) -> list[str]:
    lines: list[str] = []
    for name in benchmarks:
        bench = registry.get(name)
        opts = bench.options((options or {}).get(name))
        samples = bench.load(dataset_path, opts, None).samples
        for sample in samples:
            lines.extend(json.dumps(entry) for entry in bench.answer_key(sample, opts))
        if bench.judge is not None:
            lines.extend(json.dumps(entry) for entry in bench.judge.answer_key(samples, opts))
    return lines


def write_answer_key(
    dataset_path: str,
    benchmarks: list[str],
    path: Path,
    options: dict[str, dict] | None = None,
) -> Path:
    path.write_text("\n".join(answer_key_lines(dataset_path, benchmarks, options)) + "\n")
    return path
