"""Epoch protocols: how many times each sample is asked, and with which decoding settings.

The seed is `base_seed + epoch` for every epoch, never one seed for all: with one seed the
sampled epochs of a local server can come out identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evalfleet.core.types import ConfigError, Decoding

ProtocolName = Literal["zerobench-paper", "sampled-k", "greedy"]
PROTOCOLS: dict[str, str] = {
    "zerobench-paper": "epoch 0 greedy (pass@1, num_correct), then k sampled epochs "
    "(pass@k and k/k for that k)",
    "sampled-k": "k sampled epochs at the request's temperature and top_p (pass@1 unbiased, "
    "pass@k and k/k for that k)",
    "greedy": "k epochs at temperature 0",
}


def sampled_epochs(protocol: str, epochs: int) -> int:
    """How many sampled epochs a benchmark asked with `epochs` epochs in all: the k of its
    pass@k and k/k (zerobench-paper's first epoch is greedy)."""
    return epochs - 1 if protocol == "zerobench-paper" else epochs


@dataclass(frozen=True)
class Sampling:
    """The request's sampling settings that every protocol draws from."""

    temperature: float | None
    top_p: float | None
    max_tokens: int
    base_seed: int


def decodings(protocol: str, epochs: int, sampling: Sampling) -> list[Decoding]:
    """The decoding of every epoch, in epoch order.

    `zerobench-paper` has `epochs` sampled epochs after the greedy one (epochs + 1 in all);
    the others have exactly `epochs`.
    """
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {protocol!r}: use one of {', '.join(PROTOCOLS)}")
    greedy: dict[str, Any] = dict(temperature=0.0, top_p=None)
    sampled: dict[str, Any] = dict(temperature=sampling.temperature, top_p=sampling.top_p)
    if protocol == "zerobench-paper":
        settings = [greedy] + [sampled] * epochs
    elif protocol == "greedy":
        settings = [greedy] * epochs
    else:
        settings = [sampled] * epochs
    return [
        Decoding(max_tokens=sampling.max_tokens, seed=sampling.base_seed + epoch, **setting)
        for epoch, setting in enumerate(settings)
    ]


def greedy_epoch(protocol: str) -> int | None:
    """The epoch that gives a protocol's single-sample (pass@1) figures, if it has one."""
    return 0 if protocol in ("zerobench-paper", "greedy") else None
