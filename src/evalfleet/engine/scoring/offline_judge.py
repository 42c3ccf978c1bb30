"""Asking a judge model directly from this process, for `evalfleet score` (predictions made
elsewhere: no run, no Ray, no store): the same client, retry policy and one-line errors."""

from __future__ import annotations

import asyncio

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.clients import make_client
from evalfleet.providers.registry import resolve_api_key, resolve_model
from evalfleet.providers.retry import RetryPolicy, call_with_retries

CONCURRENCY = 16


def judge_prompts(
    model_id: str, prompts: list[str], decoding: Decoding, simulator_url: str | None = None
) -> list[str | None]:
    """The judge's reply to each prompt, in order; None where the call failed for good."""
    config = resolve_model(model_id, simulator_url=simulator_url)
    key = resolve_api_key(config)  # a missing key fails here, before any request

    async def run() -> list[str | None]:
        client = make_client(config, key)
        gate = asyncio.Semaphore(min(CONCURRENCY, config.max_concurrency))

        async def one(prompt: str) -> str | None:
            async with gate:
                response, error, _ = await call_with_retries(
                    lambda: client.complete([Part.of_text(prompt)], decoding), RetryPolicy()
                )
            return None if error is not None or response is None else response.text

        try:
            return await asyncio.gather(*(one(p) for p in prompts))
        finally:
            await client.aclose()

    return asyncio.run(run())
