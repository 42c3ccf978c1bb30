"""The scorer registry, keyed by ``source_info.dataset`` exactly as upstream's
``DATASET_SCORING_MODULES``, plus the fallback for every other dataset and the metadata checks.

Fallback (upstream ``compute_metrics``): score 1.0 when
``extract_final_answer(out).strip().lower() == answer.strip().lower()``, else 0.0.

Metadata checks (upstream ``_convert_sample_for_scorer`` raises ``ValueError``): tallyqa needs
``is_simple``; vqa-v2 ``answer_type`` and ``question_type``; refcoco_* ``bbox``;
pixmo_points_eval ``points_target``, ``points_mask`` and ``has_target``. Here they raise
``DatasetError``, and a refcoco ``bbox`` that is not four numbers is rejected too (upstream would
crash later with a ``TypeError``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalfleet.core.types import DatasetError

from . import cc_ocr, charts, choice, counting, documents, grounding, maths, mathvision, ocrbench
from . import vqa as vqa_scorers
from .base import ScoreDetails, ScorerInput, or_none, require
from .extract import extract_final_answer

Scorer = Callable[[ScorerInput, str, bool], ScoreDetails]


@dataclass(frozen=True)
class Entry:
    name: str  # upstream module name
    scorer: Scorer
    required: tuple[str, ...] = ()


_PIXMO = Entry(
    "pixmo_points_eval", grounding.score_pixmo, ("points_target", "points_mask", "has_target")
)
_REFCOCO = Entry("refcoco", grounding.score_refcoco, ("bbox",))
_MME = Entry("mme_realworld", choice.score_mme_realworld)
_CHARXIV = Entry("charxiv", charts.score_charxiv)
_MATHVERSE = Entry("mathverse", maths.score_mathverse)

REGISTRY: dict[str, Entry] = {
    "pixmo_points_eval": _PIXMO,
    "refcoco_testA": _REFCOCO,
    "refcoco_testB": _REFCOCO,
    "refcoco_plus_testA": _REFCOCO,
    "refcoco_plus_testB": _REFCOCO,
    "refcoco_m_val": _REFCOCO,
    "refcocog_test": _REFCOCO,
    "docvqa": Entry("docvqa", documents.score_docvqa),
    "ocr-vqa": Entry("ocrvqa", documents.score_ocrvqa),
    "infovqa": Entry("infovqa", documents.score_infovqa),
    "cc-ocr-doc_parsing": Entry("cc_ocr_doc_parsing", cc_ocr.score_doc_parsing),
    "cc-ocr-kie": Entry("cc_ocr_kie", cc_ocr.score_kie),
    "ocrbench-v2": Entry("ocrbench_v2", ocrbench.score_ocrbench),
    "countbench": Entry("countbench", counting.score_countbench),
    "tallyqa": Entry("tallyqa", counting.score_tallyqa, ("is_simple",)),
    "text-vqa": Entry("textvqa", vqa_scorers.score_textvqa),
    "cc-ocr-multi_scene_ocr": Entry("cc_ocr_multi_scene_ocr", cc_ocr.score_multi_scene),
    "vqa-v2": Entry("vqav2", vqa_scorers.score_vqav2, ("answer_type", "question_type")),
    "ai2d": Entry("ai2d", choice.score_ai2d),
    "mmbench": Entry("mmbench", choice.score_mmbench),
    "mmmu": Entry("mmmu", choice.score_mmmu),
    "mmmupro": Entry("mmmupro", choice.score_mmmupro),
    "realworldqa": Entry("realworldqa", choice.score_realworldqa),
    "mme-realworld-ocr": _MME,
    "mme-realworld-ad": _MME,
    "mme-realworld-mo": _MME,
    "mme-realworld-dt": _MME,
    "chartqa": Entry("chartqa", charts.score_chartqa),
    "chartqapro": Entry("chartqapro", charts.score_chartqapro),
    "charxiv_descriptive": _CHARXIV,
    "charxiv_reasoning": _CHARXIV,
    "mathvista": Entry("mathvista", maths.score_mathvista),
    "mathverse_reasoning": _MATHVERSE,
    "mathverse_wo": _MATHVERSE,
    "mathvision": Entry("mathvision", mathvision.score_mathvision),
    "logicvista": Entry("logicvista", maths.score_logicvista),
}

REGISTRY_KEYS: tuple[str, ...] = tuple(REGISTRY)


def scorer_name(dataset: str) -> str:
    """The upstream module that scores ``dataset`` ("fallback" for unregistered datasets)."""
    entry = REGISTRY.get(dataset)
    return entry.name if entry else "fallback"


def check_sample(sample: ScorerInput) -> None:
    """Raise ``DatasetError`` when the row lacks metadata its scorer requires."""
    entry = REGISTRY.get(sample.dataset)
    if entry is None:
        return
    require(sample, entry.required, entry.name)
    if entry is _REFCOCO:
        problem = grounding.check_refcoco_bbox(sample)
        if problem:
            raise DatasetError(
                f"DatBench row {sample.question_id!r} (dataset {sample.dataset!r}): "
                f"metadata 'bbox' {problem}, which the refcoco scorer requires"
            )


def score_fallback(sample: ScorerInput, out: str, compat: bool) -> ScoreDetails:
    extracted = extract_final_answer(out, compat)
    correct = extracted.strip().lower() == sample.answer.strip().lower()
    return ScoreDetails(1.0 if correct else 0.0, or_none(extracted.strip()), {})


def score(sample: ScorerInput, output: str, compat: bool = False) -> ScoreDetails:
    """Score one row's output with the scorer upstream registers for its dataset."""
    check_sample(sample)
    entry = REGISTRY.get(sample.dataset)
    text = output if isinstance(output, str) else ""
    if entry is None:
        return score_fallback(sample, text, compat)
    result = entry.scorer(sample, text, compat)
    return ScoreDetails(float(result.score), result.answer, result.details)
