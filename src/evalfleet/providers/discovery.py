"""Which models a provider offers now, through each SDK's list-models call."""

from __future__ import annotations

import anthropic
import openai
from google import genai
from google.genai import types as genai_types

from evalfleet.core.types import ConfigError


async def list_provider_models(
    provider: str, *, base_url: str | None, api_key: str, timeout_s: float = 30.0
) -> list[str]:
    """Model names (without the provider prefix) the provider lists, sorted."""
    if provider in ("openai", "openai-compatible"):
        client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=2, timeout=timeout_s
        )
        try:
            names = [model.id async for model in client.models.list()]
        finally:
            await client.close()
    elif provider == "anthropic":
        claude = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=2, timeout=timeout_s
        )
        try:
            names = [model.id async for model in claude.models.list(limit=1000)]
        finally:
            await claude.close()
    elif provider == "google":
        options = genai_types.HttpOptions(
            base_url=base_url, api_version="v1beta", timeout=int(timeout_s * 1000)
        )
        google_client = genai.Client(api_key=api_key, http_options=options)
        pager = await google_client.aio.models.list()
        names = [(model.name or "").removeprefix("models/") async for model in pager]
    else:
        raise ConfigError(f"cannot list the models of provider '{provider}'")
    return sorted(n for n in names if n)


def describe_endpoint(base_url: str, api_key: str, timeout_s: float = 10.0) -> dict[str, dict]:
    """What an OpenAI-compatible server's GET /models says of each model it serves (its
    entries as sent, extra fields such as vLLM's `max_model_len` included), by id. Raises
    ConfigError naming the URL when it cannot be read."""
    client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=1, timeout=timeout_s)
    try:
        return {model.id: model.to_dict() for model in client.models.list()}
    except openai.AuthenticationError:
        raise ConfigError(
            f"{base_url}/models refused the key: pass the variable that holds it with --api-key-env"
        ) from None
    except openai.APIError as exc:
        reason = getattr(exc, "status_code", None) or type(exc).__name__
        raise ConfigError(
            f"cannot list the models at {base_url}/models ({reason}): check --base-url and "
            "that the server is up"
        ) from None
    finally:
        client.close()
