"""What a billed answer is charged at, through each wire API against the simulator: an answer
without usage is priced on locally counted tokens and marked estimated; one whose usage cannot
be true is refused as `bad_usage` and priced the same way; an empty answer cut off by its
output limit bills the whole limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.registry import resolve_model
from evalfleet.providers.token_rules import estimate_prompt_tokens, text_tokens
from evalfleet.providers.types import ProviderResponse, Usage
from evalfleet.providers.usage import billed_usage, impossible
from evalfleet.simulator import start_simulator_in_thread
from evalfleet.simulator.process import SimulatorHandle
from tests.support.provider_harness import complete, log_for

PARTS = [Part.of_text("Count the dots and give the total in braces.")]  # 44 characters
RULES = [
    {"match": "*-nousage", "faults": {"no_usage": 1.0}},
    {"match": "*-negusage", "faults": {"negative_usage": 1.0}},
    {"match": "*-spentout", "faults": {"empty_length": 1.0}},
]
APIS = [
    ("openai", {}),
    ("openai", {"api": "responses"}),
    ("anthropic", {}),
    ("google", {}),
]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatorHandle]:
    root = tmp_path_factory.mktemp("sim-usage")
    config = {"rules": RULES, "latency": {"ms": 1}}
    with start_simulator_in_thread(None, config, log_path=root / "log.jsonl") as handle:
        yield handle


def config_of(sim: SimulatorHandle, provider: str, name: str, changes: dict):
    config = resolve_model(f"{provider}/{name}", simulator_url=sim.url)
    if changes:
        import dataclasses

        config = dataclasses.replace(config, **changes)
    return config


@pytest.mark.parametrize(("provider", "changes"), APIS, ids=lambda x: str(x))
def test_an_answer_without_usage_is_priced_on_counted_tokens(sim, provider, changes):
    config = config_of(sim, provider, "sim-0.5-nousage", changes)
    answer = complete(config, PARTS, Decoding(max_tokens=400))
    assert answer.usage.reported is False
    billed = billed_usage(config, PARTS, answer, 400)
    assert billed.estimated and billed.problem is None
    assert billed.usage.input_tokens == estimate_prompt_tokens(config, PARTS) == 11  # 44 / 4
    assert billed.usage.output_tokens == text_tokens(config, answer.text) > 0
    assert log_for(sim, "sim-0.5-nousage")[-1]["output_tokens"] > 0  # billed all the same


@pytest.mark.parametrize(("provider", "changes"), APIS, ids=lambda x: str(x))
def test_negative_usage_is_a_problem_and_priced_on_counted_tokens(sim, provider, changes):
    config = config_of(sim, provider, "sim-0.5-negusage", changes)
    answer = complete(config, PARTS, Decoding(max_tokens=400))
    assert answer.usage.input_tokens == -5_000_000
    billed = billed_usage(config, PARTS, answer, 400)
    assert billed.problem == "input_tokens is -5000000"
    assert billed.estimated and billed.usage.input_tokens == 11


@pytest.mark.parametrize(("provider", "changes"), APIS, ids=lambda x: str(x))
def test_an_answer_that_spent_its_limit_thinking_bills_the_limit(sim, provider, changes):
    config = config_of(sim, provider, "sim-0.5-spentout", changes)
    answer = complete(config, PARTS, Decoding(max_tokens=300))
    assert (answer.text, answer.finish_reason) == ("", "length")
    assert answer.usage.output_tokens == 300
    entry = log_for(sim, "sim-0.5-spentout")[-1]
    assert (entry["outcome"], entry["output_tokens"]) == ("empty_length", 300)


def test_counted_usage_of_an_answer_cut_off_is_its_whole_limit():
    config = resolve_model("openai/gpt-4o-2024-11-20")
    cut = ProviderResponse("", "length", Usage(reported=False))
    billed = billed_usage(config, PARTS, cut, max_tokens=16_000)
    assert billed.usage == Usage(11, 16_000, 0, 0)
    # $2.50 / M input, $10 / M output
    assert config.cost_usd(11, 16_000) == pytest.approx(0.1600275, abs=1e-12)


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        (Usage(10, 5), None),
        (Usage(-1, 5), "input_tokens is -1"),
        (Usage(10, -5), "output_tokens is -5"),
        (Usage(10, 5, 6), "reasoning_tokens 6 > output_tokens 5"),
        (Usage(10, 5, 0, 11), "cached_input_tokens 11 > input_tokens 10"),
        (Usage(200_000_000, 5), "input_tokens is 200000000, more than any call takes"),
    ],
)
def test_impossible_usage(usage, problem):
    assert impossible(usage) == problem
