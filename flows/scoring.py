"""Turn stored records into per-sample score rows and per (model, split, scoring) summaries."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from benchmarks import zerobench_metrics
from benchmarks.zerobench_metrics import EpochScore
from flows.plan import Loaded
from flows.request import EvalRequest

SAMPLE_COLUMNS = [
    "model",
    "split",
    "sample_id",
    "main_question_id",
    "epoch",
    "scoring",
    "target",
    "answer",
    "correct",
    "error",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
]


def score_run(
    request: EvalRequest,
    loaded: Loaded,
    records: dict[tuple[str, str, str, int], dict[str, Any]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    n_epochs = len(request.epoch_decodings())
    for benchmark, samples in loaded.samples.items():
        task = loaded.tasks[benchmark]
        sample_groups = {s.id: s.group_id or s.id for s in samples}
        for model in request.models:
            per_mode: dict[str, list[EpochScore]] = defaultdict(list)
            usage = {"errors": 0, "input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0}
            cost = 0.0
            for sample in samples:
                for epoch in range(n_epochs):
                    record = records.get((model, benchmark, sample.id, epoch))
                    if record is None:
                        continue  # never requested yet: lowers n, is not an error
                    tokens = record.get("usage") or {}
                    for name in ("input_tokens", "output_tokens", "reasoning_tokens"):
                        usage[name] += int(tokens.get(name) or 0)
                    cost += float(record.get("cost_usd") or 0.0)
                    error = (record.get("error") or {}).get("type")
                    usage["errors"] += 1 if error else 0
                    for score in task.score(record.get("response") or "", sample):
                        correct = bool(score.correct) and not error
                        per_mode[score.scoring].append(
                            EpochScore(sample.id, sample_groups[sample.id], epoch, correct)
                        )
                        rows.append(
                            {
                                "model": model,
                                "split": benchmark,
                                "sample_id": sample.id,
                                "main_question_id": sample_groups[sample.id],
                                "epoch": epoch,
                                "scoring": score.scoring,
                                "target": sample.target,
                                "answer": None if error else score.answer,
                                "correct": correct,
                                "error": error,
                                "finish_reason": record.get("finish_reason"),
                                "input_tokens": int(tokens.get("input_tokens") or 0),
                                "output_tokens": int(tokens.get("output_tokens") or 0),
                                "reasoning_tokens": int(tokens.get("reasoning_tokens") or 0),
                            }
                        )
            for scoring, scores in sorted(per_mode.items()):
                metrics = zerobench_metrics.summarize(
                    scores,
                    sample_groups=sample_groups,
                    protocol=request.protocol,
                    grouped=task.grouped,
                )
                summaries.append(
                    {
                        "model": model,
                        "split": benchmark,
                        "scoring": scoring,
                        "n_questions": len(samples),
                        "n_epochs": n_epochs,
                        **metrics,
                        **usage,
                        "cost_usd": round(cost, 6),
                    }
                )
    samples_df = pd.DataFrame(rows, columns=SAMPLE_COLUMNS)
    summary_df = pd.DataFrame(summaries, columns=zerobench_metrics.SUMMARY_COLUMNS)
    return samples_df, summary_df
