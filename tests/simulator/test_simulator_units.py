"""Unit tests of the simulator's pure parts: answering model, config, limits, formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.simulator.answering import (
    UNKNOWN_ANSWER,
    AnswerKey,
    AnswerKeyError,
    KeyEntry,
    answer,
    draw_correct,
    parse_accuracy,
    prompt_sha256,
    wrong_value,
)
from evalfleet.simulator.config import (
    ConfigError,
    Latency,
    SimulatorConfig,
    load_config,
    resolve_profile,
)
from evalfleet.simulator.faults import AttemptCounter, LatencySampler, fault_draw, pick_fault
from evalfleet.simulator.openai_routes import go_duration
from evalfleet.simulator.ratelimit import RateLimiter
from evalfleet.simulator.samples import BRACES, answer_key_line, write_answer_key

LETTER = "The best matching option is {answer}.\nANSWER: {answer}"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("sim-0.3", 0.3),
        ("sim-0.3-think", 0.3),
        ("sim-0.9-a", 0.9),
        ("sim-1", 1.0),
        ("sim-.25", 0.25),
        ("openai/sim-0.7", 0.7),
        ("sim-7", 1.0),
        ("gpt-4o", None),
    ],
)
def test_parse_accuracy(model: str, expected: float | None) -> None:
    assert parse_accuracy(model) == expected


def test_answer_is_deterministic_and_matches_draw(tmp_path: Path) -> None:
    prompts = [f"Question {i}: how many?" for i in range(400)]
    key = AnswerKey.load(
        write_answer_key(tmp_path / "k.jsonl", [(p, str(i)) for i, p in enumerate(prompts)])
    )
    correct = 0
    for i, prompt in enumerate(prompts):
        sha = prompt_sha256(prompt)
        first = answer(key, "sim-0.3", sha, 5, accuracy=0.3)
        again = answer(key, "sim-0.3", sha, 5, accuracy=0.3)
        assert first == again
        assert first.correct == draw_correct("sim-0.3", sha, 5, 0.3)
        assert first.text.endswith("{" + str(i) + "}") is first.correct
        correct += first.correct
    # 400 Bernoulli(0.3) draws: mean 120, sd 9.2; the hash scheme is fixed so this is exact.
    assert 120 - 4 * 9.2 < correct < 120 + 4 * 9.2
    other_seed = [draw_correct("sim-0.3", prompt_sha256(p), 6, 0.3) for p in prompts]
    same_seed = [draw_correct("sim-0.3", prompt_sha256(p), 5, 0.3) for p in prompts]
    assert other_seed != same_seed
    assert sum(a == b for a, b in zip(other_seed, same_seed, strict=True)) < 400


def test_seed_none_is_deterministic() -> None:
    key = AnswerKey({prompt_sha256("q"): KeyEntry("12", BRACES)})
    texts = {answer(key, "sim-0.5", prompt_sha256("q"), None, accuracy=0.5).text for _ in range(5)}
    assert len(texts) == 1


def test_unknown_prompt_and_thinking() -> None:
    sha = prompt_sha256("x")
    result = answer(
        AnswerKey(), "sim-0.9-think", sha, 1, accuracy=0.9, thinking=True, reasoning_tokens=64
    )
    assert result.text == UNKNOWN_ANSWER
    assert result.correct is None
    assert result.reasoning_tokens == 64
    assert result.reasoning_text is not None and "think" not in result.text


@pytest.mark.parametrize(
    "entry",
    [
        KeyEntry("42", BRACES),
        KeyEntry("0", BRACES),
        KeyEntry("3.75", BRACES),
        KeyEntry("(3, 4)", BRACES),
        KeyEntry("circle", BRACES),
        KeyEntry("Blue", BRACES),
        KeyEntry("C", LETTER, ("A", "B", "C", "D")),
        KeyEntry("A", LETTER, ("A", "B")),
        KeyEntry("dog", BRACES, ("cat", "dog")),
    ],
)
def test_wrong_values_are_never_the_target(entry: KeyEntry) -> None:
    for pick in range(64):
        value = wrong_value(entry, pick)
        assert value.strip().lower() != entry.target.strip().lower()
        if entry.choices:
            assert value in entry.choices
        if entry.target == "0":
            assert int(value) > 0
    assert wrong_value(KeyEntry("dog", BRACES, ("cat", "dog")), 3) == "cat"


def test_render_formats() -> None:
    key = AnswerKey(
        {
            prompt_sha256("p1"): KeyEntry("7", BRACES),
            prompt_sha256("p2"): KeyEntry("B", LETTER, ("A", "B", "C")),
        }
    )
    braces = answer(key, "sim-1", prompt_sha256("p1"), 0, accuracy=1.0)
    letter = answer(key, "sim-1", prompt_sha256("p2"), 0, accuracy=1.0)
    wrong = answer(key, "sim-0", prompt_sha256("p2"), 0, accuracy=0.0)
    assert braces.text.endswith("{7}") and braces.correct is True
    assert letter.text.endswith("\nANSWER: B") and letter.correct is True
    assert wrong.correct is False
    assert wrong.text.splitlines()[-1] in ("ANSWER: A", "ANSWER: C")


def test_answer_key_errors(tmp_path: Path) -> None:
    with pytest.raises(AnswerKeyError, match=r"^cannot read answer key .*missing\.jsonl"):
        AnswerKey.load(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(answer_key_line("q", "1") + "\n{not json\n")
    with pytest.raises(AnswerKeyError, match=r"line 2"):
        AnswerKey.load(bad)
    bad.write_text(json.dumps({"prompt_sha256": "xyz", "target": "1"}) + "\n")
    with pytest.raises(AnswerKeyError, match="64 lowercase hex"):
        AnswerKey.load(bad)


def test_config_yaml_rules_and_profiles(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(
        "latency: {ms: 200, distribution: uniform, jitter_ms: 20}\n"
        "requests_per_minute: 100\n"
        "faults: {http_500: 0.01}\n"
        "rules:\n"
        "  - match: 'sim-0.9*'\n"
        "    requests_per_minute: 5\n"
        "    faults: {http_529: 0.2}\n"
        "  - match: 'gpt-*'\n"
        "    accuracy: 0.8\n"
        "    thinking: true\n"
        "    latency: {ms: 50}\n"
    )
    config = load_config(path)
    fast = resolve_profile(config, "sim-0.9-a")
    assert fast.requests_per_minute == 5
    assert (fast.faults.http_500, fast.faults.http_529) == (0.01, 0.2)
    assert fast.accuracy == 0.9 and fast.thinking is False
    gpt = resolve_profile(config, "gpt-5")
    assert (gpt.accuracy, gpt.thinking, gpt.requests_per_minute) == (0.8, True, 100)
    assert (gpt.latency.ms, gpt.latency.distribution, gpt.latency.jitter_ms) == (50, "uniform", 20)
    plain = resolve_profile(config, "other")
    assert plain.accuracy == SimulatorConfig().default_accuracy


def test_config_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cannot read config .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml")
    path = tmp_path / "sim.json"
    path.write_text('{"latency": {"ms": -1}, "colour": 1}')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert "latency.ms" in message and "colour" in message
    path.write_text("{")
    with pytest.raises(ConfigError, match=r"^cannot parse config"):
        load_config(path)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.012, "12ms"), (1, "1s"), (8.64, "8.64s"), (360, "6m0s"), (3723.5, "1h2m3.5s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_rate_limiter_sliding_window() -> None:
    limiter = RateLimiter(window_s=60)
    results = [limiter.check("m", 2, None, 10, now)[0] for now in (0.0, 1.0, 2.0)]
    assert results == [True, True, False]
    ok, state = limiter.check("m", 2, None, 10, 30.0)
    assert not ok and state.retry_after_s == 30.0 and state.limited_by == "requests"
    assert limiter.check("m", 2, None, 10, 60.5)[0] is True  # the first request left the window
    ok, state = limiter.check("t", None, 100, 60, 0.0)
    assert ok and state.tokens_remaining == 40 and state.tokens_reset_s == 60.0
    ok, state = limiter.check("t", None, 100, 60, 10.0)
    assert not ok and state.limited_by == "tokens" and state.retry_after_s == 50.0


def test_fault_picking_is_stable_and_retries_redraw() -> None:
    faults = SimulatorConfig(faults={"http_500": 0.5, "hang": 0.25}).faults
    assert pick_fault(faults, 0.1) == "http_500"
    assert pick_fault(faults, 0.6) == "hang"
    assert pick_fault(faults, 0.8) is None
    draws = [fault_draw(0, "m", "sha", 1, n) for n in range(4)]
    assert draws == [fault_draw(0, "m", "sha", 1, n) for n in range(4)]
    assert len(set(draws)) == 4
    counter = AttemptCounter()
    assert [counter.next(("a",)), counter.next(("a",)), counter.next(("b",))] == [0, 1, 0]


def test_latency_distributions() -> None:
    sampler = LatencySampler(seed=1)
    assert sampler.seconds(Latency(ms=200)) == 0.2
    assert sampler.seconds(Latency(ms=100, per_output_token_ms=1), output_tokens=50) == 0.15
    uniform = [
        sampler.seconds(Latency(distribution="uniform", ms=200, jitter_ms=50)) for _ in range(200)
    ]
    assert 0.15 <= min(uniform) < 0.17 and 0.23 < max(uniform) <= 0.25
    lognormal = sorted(
        sampler.seconds(Latency(distribution="lognormal", ms=200)) for _ in range(401)
    )
    assert 0.17 < lognormal[200] < 0.23 and lognormal[0] > 0
