"""The openai SDK client of a model, for every OpenAI path: chat, Responses and their batches."""

from __future__ import annotations

from typing import Any

import openai

from evalfleet.providers.registry import ModelConfig


def openai_client(config: ModelConfig, api_key: str, **options: Any) -> openai.AsyncOpenAI:
    """The model's base URL and timeout, the SDK's own retries off (`providers.retry` decides,
    so every attempt is counted once); `options` go to the SDK as they are."""
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=config.base_url,
        max_retries=0,
        timeout=config.timeout_s,
        **options,
    )
