"""The one interface every provider client implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from core.types import Decoding, Part
from providers.registry import ModelConfig
from providers.types import ProviderResponse


class ProviderClient(ABC):
    """Sends one neutral request through an official SDK; raises ProviderError on failure.

    Clients never retry: the SDK's retries are off and `providers.retry` decides, so every
    attempt is seen and counted once.
    """

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        self.config = config
        self._api_key = api_key

    @abstractmethod
    async def complete(self, parts: Sequence[Part], decoding: Decoding) -> ProviderResponse: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP connections."""

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}({self.config.id!r})"
