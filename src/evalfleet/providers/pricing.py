"""What one request is expected to cost before it is sent: prompt tokens from the provider's
token rules (`providers.token_rules`), output tokens from what the model is expected to write,
both at the registry's prices. No prompt caching is assumed (cached input is cheaper, so the
estimate errs high).
"""

from __future__ import annotations

from collections.abc import Sequence

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.token_rules import estimate_prompt_tokens

ASSUMED_OUTPUT_TOKENS = 1000  # per answer when nothing better is known (capped by max_tokens)


def expected_output_tokens(
    config: ModelConfig,
    decoding: Decoding,
    measured: float | None = None,
    typical: int | None = None,
) -> tuple[int, str]:
    """Output tokens (reasoning included) one request is expected to take, and where the
    figure comes from: "measured" (the mean of stored records, given as `measured`),
    "registry" (the model's `expected_output_tokens`), "typical" (`typical`: the benchmark's
    typical answer) or "assumed" (1000). Always capped by the request's output limit."""
    cap = config.output_limit(decoding.max_tokens)
    if measured is not None:
        return min(cap, int(measured + 0.5)), "measured"
    if config.expected_output_tokens is not None:
        return min(cap, config.expected_output_tokens), "registry"
    if typical is not None:
        return min(cap, typical), "typical"
    return min(cap, ASSUMED_OUTPUT_TOKENS), "assumed"


def expected_item_cost_usd(
    config: ModelConfig,
    parts: Sequence[Part],
    decoding: Decoding,
    expected_output_tokens: int,
) -> float:
    """USD one request is expected to cost: the estimated prompt tokens at the input price and
    `expected_output_tokens` (capped by the request's output limit) at the output price."""
    output = min(max(expected_output_tokens, 0), config.output_limit(decoding.max_tokens))
    return config.cost_usd(estimate_prompt_tokens(config, parts), output)


def max_item_cost_usd(config: ModelConfig, parts: Sequence[Part], decoding: Decoding) -> float:
    """USD one request costs at most: the estimated prompt and the whole output limit."""
    output = config.output_limit(decoding.max_tokens)
    return config.cost_usd(estimate_prompt_tokens(config, parts), output)
