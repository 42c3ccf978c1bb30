"""Pick the client class for a model's wire API."""

from __future__ import annotations

from providers.anthropic_messages import AnthropicMessagesClient
from providers.base import ProviderClient
from providers.google_genai import GoogleGenAIClient
from providers.openai_chat import OpenAIChatClient
from providers.openai_responses import OpenAIResponsesClient
from providers.registry import ConfigError, ModelConfig

CLIENTS: dict[str, type[ProviderClient]] = {
    "chat": OpenAIChatClient,
    "responses": OpenAIResponsesClient,
    "messages": AnthropicMessagesClient,
    "generate_content": GoogleGenAIClient,
}


def make_client(config: ModelConfig, api_key: str) -> ProviderClient:
    client_class = CLIENTS.get(config.api)
    if client_class is None:
        raise ConfigError(f"model {config.id} has api '{config.api}', which has no client")
    return client_class(config, api_key)
