"""Helpers shared by the provider-client tests: calling a client once, reading the simulator log."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.clients import make_client
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.types import ProviderError, ProviderResponse
from evalfleet.simulator.process import SimulatorHandle

# A per-provider placeholder key (the simulator only checks that one is present).
TEST_KEYS = {"openai": "sk-test", "anthropic": "sk-ant-test", "google": "gemini-test-key"}
UNKNOWN = "I do not know. {unknown}"  # the simulator's answer to a prompt not in its key


def fault_rules(flaky_status: int) -> dict[str, dict[str, Any]]:
    """Simulator fault settings by model-name suffix (`sim-0.5-f500`, ...)."""
    return {
        "f500": {"http_500": 1.0},
        "f503": {"http_503": 1.0},
        "f529": {"http_529": 1.0},
        "hang": {"hang": 1.0, "hang_s": 10},
        "malformed": {"malformed_json": 1.0},
        "empty": {"empty_content": 1.0},
        "truncate": {"truncate": 1.0},
        "r429": {"fail_first_n": 100, "fail_first_status": 429, "retry_after_ms": 30},
        "flaky": {"fail_first_n": 2, "fail_first_status": flaky_status},
        "down": {"fail_first_n": 100, "fail_first_status": 500},
    }


async def _complete(config: ModelConfig, parts: list[Part], decoding: Decoding) -> ProviderResponse:
    client = make_client(config, TEST_KEYS[config.provider])
    try:
        return await client.complete(parts, decoding)
    finally:
        await client.aclose()


def complete(config: ModelConfig, parts: list[Part], decoding: Decoding) -> ProviderResponse:
    return asyncio.run(_complete(config, parts, decoding))


def failure(config: ModelConfig, parts: list[Part], decoding: Decoding) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        complete(config, parts, decoding)
    return info.value


def log_for(sim: SimulatorHandle, api_model: str, count: int = 1) -> list[dict[str, Any]]:
    """The model's log lines, waiting briefly for lines of requests the client gave up on."""
    deadline = time.monotonic() + 3
    while True:
        entries = [e for e in sim.read_log() if e["model"] == api_model]
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.05)


def text_tokens(*texts: str) -> int:
    return math.ceil(sum(len(t) for t in texts) / 4)
