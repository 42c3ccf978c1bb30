"""The Ray actor that turns work items into stored completion records, many at a time: the
worker of `tasks.completions`, hosted on the cluster. Its names are re-exported here, where
the dispatcher and the pool have always found them."""

from __future__ import annotations

import ray

from evalfleet.tasks import completions
from evalfleet.tasks.completions import (
    BLOCKS_CACHED,
    CLAIM_S,
    ERROR_CHARS,
    WORKER_PACKAGES,
    Call,
    ClaimLost,
    LedgerUnwritable,
    Outcome,
    WorkerSetup,
    code_digest,
    empty_answer,
    preload,
)

__all__ = [
    "BLOCKS_CACHED",
    "CLAIM_S",
    "ERROR_CHARS",
    "WORKER_PACKAGES",
    "Call",
    "ClaimLost",
    "CompletionWorker",
    "LedgerUnwritable",
    "Outcome",
    "WorkerSetup",
    "code_digest",
    "empty_answer",
    "preload",
]

# A hundredth of a CPU: nothing for the calls (they wait on the network), but enough that a
# head node started with --num-cpus=0, as KubeRay advises, hosts no worker.
CompletionWorker = ray.remote(num_cpus=0.01)(completions.CompletionWorker)
