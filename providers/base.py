"""The one interface every provider client implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.types import Decoding, Part
from providers.registry import ModelConfig
from providers.types import ErrorKind, ProviderError, ProviderResponse

# Keyword arguments of an openai or anthropic SDK call that are not part of the JSON body.
_PER_CALL_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query"})


def wire_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body an openai or anthropic SDK `create(**params)` sends: the arguments less
    the per-call options, with `extra_body` merged on top (a shallow merge, as the SDKs'
    `_build_request` does)."""
    body = {k: v for k, v in params.items() if k not in _PER_CALL_OPTIONS and k != "extra_body"}
    body.update(params.get("extra_body") or {})
    return body


def parse_body(
    body: Any,
    request_id: str | None,
    model: Any,
    convert: Callable[[Any, str | None], ProviderResponse],
) -> ProviderResponse:
    """Read a provider's JSON answer (a batch result line) leniently, as the SDKs read an
    online answer (`model.construct`, no validation), and convert it as the online path does;
    a body that is not an object or cannot be read that way is a malformed response."""
    if not isinstance(body, Mapping):
        raise ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"malformed response body: expected an object, got {type(body).__name__}",
            status=200,
            request_id=request_id,
        )
    try:
        return convert(model.construct(**body), request_id)
    except ProviderError:
        raise
    except Exception as exc:  # a field of the wrong shape
        raise ProviderError(
            ErrorKind.MALFORMED_RESPONSE,
            f"malformed response body: {type(exc).__name__}: {str(exc)[:300]}",
            status=200,
            request_id=request_id,
        ) from exc


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
