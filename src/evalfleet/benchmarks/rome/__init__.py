"""ROME visual reasoning (BAAI/ROME, LRM-Eval): 281 questions in 8 tasks, scored by five rule
evaluators (plus FlagEvalMM's two interval ones) in an `upstream` mode that is exactly
upstream's and a `fixed` mode that corrects its quirks (`extract`, `evaluators`), and, with a
judge model, by upstream's LLM judge on the tasks named in the options (`judge`).

Reported as the ROME leaderboard does: per task and overall, accuracy as mean ± std over the
epochs (rounds), next to the mean output and reasoning tokens; and, per model, scoring mode and
epoch, upstream's own `scores.json` and `updated_predictions.json`.
"""

from evalfleet.benchmarks.rome.benchmark import (
    ROME,
    Rome,
    RomeOptions,
    correct_answer,
)

__all__ = [
    "ROME",
    "Rome",
    "RomeOptions",
    "correct_answer",
]
