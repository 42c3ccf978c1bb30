"""OmniBench (m-a-p/OmniBench): image + audio + text multiple choice, as evalscope HEAD runs
it (`evalscope`, the recommended number), with the original scripts' parser as the labelled
compat mode `original`. Accuracy overall, by task type and by audio type.
"""

from evalfleet.benchmarks.omnibench.benchmark import (
    OMNIBENCH,
    OmniBench,
    OmniBenchOptions,
)

__all__ = [
    "OMNIBENCH",
    "OmniBench",
    "OmniBenchOptions",
]
