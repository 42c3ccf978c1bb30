"""What a billed answer is charged at: the provider's reported usage when it can be true, else
the tokens counted locally by the provider's rules (`providers.token_rules`), marked estimated.

A 200 is billed whatever it holds, so an answer always gets a cost, and the cost cap always
sees it: an answer without usage is priced on its prompt's estimated tokens and its text's;
one whose usage cannot be true (a negative count, more tokens than any model takes in one
call, more reasoning than output, more cached than input) is priced the same way and the
attempt ends as an error of its own kind (`ErrorKind.BAD_USAGE`), never taken as an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalfleet.core.types import Part
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.token_rules import estimate_prompt_tokens, text_tokens
from evalfleet.providers.types import ProviderResponse, Usage

MOST_TOKENS = 100_000_000  # more than any model reads or writes in one call


@dataclass(frozen=True, slots=True)
class Billed:
    """The usage an answer is charged at; `problem` says why the provider's could not be used
    (None when it was)."""

    usage: Usage
    estimated: bool = False
    problem: str | None = None  # set: the reported usage cannot be true (BAD_USAGE)


def billed_usage(
    config: ModelConfig,
    parts: Sequence[Part],
    answer: ProviderResponse,
    max_tokens: int | None = None,
) -> Billed:
    """`max_tokens`: the call's output limit, which an answer cut off by it has used up."""
    usage = answer.usage
    if not usage.reported:
        return Billed(counted_usage(config, parts, answer, max_tokens), estimated=True)
    problem = impossible(usage)
    if problem is not None:
        counted = counted_usage(config, parts, answer, max_tokens)
        return Billed(counted, estimated=True, problem=problem)
    return Billed(usage)


def impossible(usage: Usage) -> str | None:
    """Why this reported usage cannot be true, or None."""
    counts = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
    }
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} is {value!r}, not a count"
        if value < 0:
            return f"{name} is {value}"
        if value > MOST_TOKENS:
            return f"{name} is {value}, more than any call takes"
    if usage.reasoning_tokens > usage.output_tokens:
        return f"reasoning_tokens {usage.reasoning_tokens} > output_tokens {usage.output_tokens}"
    if usage.cached_input_tokens > usage.input_tokens:
        return (
            f"cached_input_tokens {usage.cached_input_tokens} > input_tokens {usage.input_tokens}"
        )
    return None


def counted_usage(
    config: ModelConfig,
    parts: Sequence[Part],
    answer: ProviderResponse,
    max_tokens: int | None = None,
) -> Usage:
    """The usage counted here: the prompt by the provider's rules, the output from the text
    and reasoning the answer holds, or the whole output limit for an answer cut off by it
    (reasoning the answer did not show is otherwise not counted)."""
    reasoning = text_tokens(config, answer.reasoning_text) if answer.reasoning_text else 0
    visible = text_tokens(config, answer.text) if answer.text else 0
    output = visible + reasoning
    if answer.finish_reason == "length" and max_tokens:
        output = max(output, max_tokens)
    return Usage(
        input_tokens=estimate_prompt_tokens(config, parts),
        output_tokens=output,
        reasoning_tokens=min(reasoning, output),
    )
