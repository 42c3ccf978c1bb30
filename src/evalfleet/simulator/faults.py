"""Fault and latency decisions.

Faults are drawn from a hash of (config seed, model, prompt, seed, attempt number) so that they
do not depend on request interleaving, and a retry (a higher attempt number) gets a new draw.
The attempt number is counted per request content by the server, because our own retry policy
runs the SDKs with ``max_retries=0`` and ``x-stainless-retry-count`` is then always 0.
"""

from __future__ import annotations

import hashlib
import random

from evalfleet.simulator.config import FAULT_KINDS, Faults, Latency


class AttemptCounter:
    """How many times each request content was seen before (0 for the first attempt)."""

    def __init__(self) -> None:
        self._seen: dict[object, int] = {}

    def next(self, key: object) -> int:
        n = self._seen.get(key, 0)
        self._seen[key] = n + 1
        return n

    def reset(self) -> None:
        self._seen.clear()


def fault_draw(config_seed: int, model: str, sha: str | None, seed: int | None, n: int) -> float:
    digest = hashlib.sha256(f"fault\n{config_seed}\n{model}\n{sha}\n{seed}\n{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def batch_line_draw(
    config_seed: int, model: str, sha: str | None, seed: int | None, n: int
) -> float:
    """The failure draw of a batch line: like ``fault_draw``, independent of it, and counted
    per request content over every batch line the server answered (``n``), so the same
    request resubmitted in a new batch gets a new draw."""
    digest = hashlib.sha256(f"batch\n{config_seed}\n{model}\n{sha}\n{seed}\n{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def pick_fault(faults: Faults, u: float) -> str | None:
    """The fault kind whose slice of [0, 1) contains ``u``, in FAULT_KINDS order."""
    edge = 0.0
    for kind in FAULT_KINDS:
        rate = getattr(faults, kind)
        if rate:
            edge += rate
            if u < edge:
                return kind
    return None


class LatencySampler:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def seconds(self, latency: Latency, output_tokens: int = 0) -> float:
        ms = latency.ms
        if latency.distribution == "uniform" and latency.jitter_ms:
            ms += self._rng.uniform(-latency.jitter_ms, latency.jitter_ms)
        elif latency.distribution == "lognormal" and ms > 0:
            ms *= self._rng.lognormvariate(0.0, latency.sigma)
        ms += latency.per_output_token_ms * output_tokens
        return max(0.0, ms) / 1000.0
