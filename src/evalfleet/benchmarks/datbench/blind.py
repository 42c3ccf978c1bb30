"""What the blind baseline tells: the vision delta and the blind-solvability filter.

- Vision delta (per model and capability): the with-image value of each unit minus its blind
  value, over the units answered both ways. Paired, so its SE is sd(d, ddof=1)/sqrt(n) of the
  per-unit differences d; the two accuracies are reported beside it.
- Blind-solvability filter (paper §3.2, Table 7): an item answered right without its image by
  more than τ models (`gt`, the Fig. 4 caption; `ge`, the text's reading) is listed for removal.
  τ is per source dataset; MathVision and MathVista have two, for multiple choice (rows whose
  metadata lists options) and free-form questions. A dataset the table does not name gets
  `default_tau`, or is left out of the filter when that is None.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from evalfleet.metrics import all_samples_mean_stderr

Comparator = Literal["gt", "ge"]

_TAU_1 = (
    "chartqa chartqapro charxiv_descriptive charxiv_reasoning infovqa mme-realworld-ocr "
    "mme-realworld-ad mme-realworld-mo mme-realworld-dt ocr-vqa cc-ocr-doc_parsing cc-ocr-kie "
    "docvqa ocrbench-v2 refcoco_testA refcoco_testB refcoco_plus_testA refcoco_plus_testB "
    "refcoco_m_val refcocog_test pixmo_points_eval vqa-v2"
)
TAU: dict[str, int] = {
    **dict.fromkeys(_TAU_1.split(), 1),
    "countbench": 4,
    **dict.fromkeys(("ai2d", "cc-ocr-multi_scene_ocr", "text-vqa"), 5),
    **dict.fromkeys(
        ("tallyqa", "logicvista", "mathverse_reasoning", "mathverse_wo", "mmbench", "mmmupro"), 6
    ),
    "realworldqa": 8,
}
TAU_BY_FORMAT = {"mathvision": (6, 1), "mathvista": (6, 1)}  # (multiple choice, free form)
_OPTION_KEYS = ("options", "options_struct", "all_choices", "choices")


def tau_for(dataset: str, row_metadata: Mapping, default_tau: int | None) -> int | None:
    """τ of a row's source dataset (Table 7), `default_tau` for the datasets it does not name."""
    if dataset in TAU_BY_FORMAT:
        multiple_choice = any(row_metadata.get(key) for key in _OPTION_KEYS)
        return TAU_BY_FORMAT[dataset][0 if multiple_choice else 1]
    return TAU.get(dataset, default_tau)


def exceeds(solved_by: int, tau: int, comparator: Comparator) -> bool:
    return solved_by > tau if comparator == "gt" else solved_by >= tau


@dataclass(frozen=True)
class Delta:
    capability: str
    n: int  # units answered both ways
    with_image: float
    blind: float
    delta: float
    se: float


def vision_delta(
    with_image: Mapping[str, float], blind: Mapping[str, float], capability: Mapping[str, str]
) -> list[Delta]:
    """Per capability (then "all"), over the units in both maps: unit -> value."""
    by_capability: dict[str, list[str]] = defaultdict(list)
    for unit in with_image:
        if unit in blind:
            by_capability[capability[unit]].append(unit)
    groups = [
        *sorted(by_capability.items()),
        ("all", [u for us in by_capability.values() for u in us]),
    ]
    out = []
    for name, units in groups:
        if not units:
            continue
        seen = [with_image[u] for u in units]
        unseen = [blind[u] for u in units]
        differences = [a - b for a, b in zip(seen, unseen, strict=True)]
        out.append(
            Delta(
                capability=name,
                n=len(units),
                with_image=math.fsum(seen) / len(units),
                blind=math.fsum(unseen) / len(units),
                delta=math.fsum(differences) / len(units),
                se=all_samples_mean_stderr(differences),
            )
        )
    return out


@dataclass(frozen=True)
class BlindItem:
    unit: str
    dataset: str
    tau: int | None
    solved_by: int
    models: int
    remove: bool


def blind_filter(
    solved: Mapping[str, Iterable[bool]],
    dataset: Mapping[str, str],
    row_metadata: Mapping[str, Mapping],
    comparator: Comparator = "gt",
    default_tau: int | None = None,
) -> list[BlindItem]:
    """Each unit's blind solve count against its τ (`solved`: unit -> one bool per model)."""
    out = []
    for unit, per_model in solved.items():
        flags = list(per_model)
        tau = tau_for(dataset[unit], row_metadata[unit], default_tau)
        count = sum(flags)
        remove = tau is not None and exceeds(count, tau, comparator)
        out.append(BlindItem(unit, dataset[unit], tau, count, len(flags), remove))
    return out
