"""DatBench scoring: every scorer of the upstream harness (DatologyAI/DatBench at bd2ecaf6),
dispatched on ``source_info.dataset`` like upstream's registry, in two modes.

``score(sample, output, compat=True)`` reproduces upstream exactly, quirks included (with one
exception: the MathVerse scorer, which upstream leaves unimplemented and which crashes a run,
returns score 0 with an error note). ``compat=False`` (the default) fixes each quirk that is
clearly a bug; every change is listed, rule by rule, in the docstring of the module concerned:

- ``extract`` E1-E2 (``extract_final_answer``), ``mcq`` D1-D3 (MCQ letter reading),
- ``choice`` A1-A5 (ai2d, mmbench, mmmu, mmmupro, realworldqa, mme-realworld),
- ``grounding`` G1-G2 (pixmo points, refcoco), ``documents`` V1 (infovqa),
- ``cc_ocr`` C1-C3, ``ocrbench`` O1, ``counting`` N1 (countbench),
- ``charts`` H1-H5 (chartqa, chartqapro, charxiv), ``maths`` M1-M3 (mathvista, mathverse,
  logicvista), ``mathvision`` X1.

Design choices (DocVQA's continuous ANLS, refcoco's binary recall@0.5, the official VQA metrics,
OCRBench's per-task metrics ...) are identical in both modes. ``ScoreDetails.details`` holds the
score_details keys upstream returns, except ``score`` (the ``score`` field) and
``model_output`` (the caller already has the output).
"""

from __future__ import annotations

from .base import ScoreDetails, ScorerInput
from .extract import extract_final_answer
from .registry import REGISTRY_KEYS, check_sample, score, scorer_name

__all__ = [
    "REGISTRY_KEYS",
    "ScoreDetails",
    "ScorerInput",
    "check_sample",
    "extract_final_answer",
    "score",
    "scorer_name",
]
