"""The one interface every provider client implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.registry import ModelConfig
from evalfleet.providers.retry_after import limits_from_headers, remaining_from_headers
from evalfleet.providers.types import ErrorKind, ProviderError, ProviderResponse

# Keyword arguments of an openai or anthropic SDK call that are not part of the JSON body.
_PER_CALL_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query"})


def wire_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body an openai or anthropic SDK `create(**params)` sends: the arguments less
    the per-call options, with `extra_body` merged on top (a shallow merge, as the SDKs'
    `_build_request` does)."""
    body = {k: v for k, v in params.items() if k not in _PER_CALL_OPTIONS and k != "extra_body"}
    body.update(params.get("extra_body") or {})
    return body


def malformed(what: str, request_id: str | None, status: int | None = 200) -> ProviderError:
    """A 2xx answer whose body is not what the call answers (retryable, as a cut-off one)."""
    return ProviderError(
        ErrorKind.MALFORMED_RESPONSE,
        f"malformed response body: {what}",
        status=status,
        request_id=request_id,
    )


def described(exc: BaseException) -> str:
    """An exception in a malformed-body message: its type and the start of its text."""
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def not_an_object(body: Any, request_id: str | None) -> ProviderError:
    return malformed(f"expected an object, got {type(body).__name__}", request_id)


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
        raise not_an_object(body, request_id)
    try:
        return convert(model.construct(**body), request_id)
    except ProviderError:
        raise
    except Exception as exc:  # a field of the wrong shape
        raise malformed(described(exc), request_id) from exc


class ProviderClient(ABC):
    """Sends one neutral request through an official SDK; raises ProviderError on failure.

    Clients never retry: the SDK's retries are off and `evalfleet.providers.retry` decides, so every
    attempt is seen and counted once.

    `complete` is the one sequence of a call; a client gives the steps its wire decides:
    `_request` (built before anything is sent: a part the model cannot take is refused there,
    not mapped), `_send` (the SDK's awaitable, returned as is: no coroutine of the client's own
    around it), `_map_error` (its SDK's failures in the taxonomy), `_decode` (the answer's body
    read from the SDK's HTTP answer; `unreadable` is what that raises for a body that cannot be
    read) and `_convert` (the body -> ProviderResponse). The request id and what remains of
    the rate-limit window come from the HTTP answer's headers; a client whose SDK hands back
    its own answer type instead (google-genai) overrides `_answer`.
    """

    #: the header of the provider's request id
    request_id_header: ClassVar[str] = "x-request-id"
    #: what `_decode` raises for a body it cannot read
    unreadable: ClassVar[tuple[type[Exception], ...]] = (Exception,)
    #: `_decode` returns a coroutine (the anthropic SDK reads an answer in one); the others
    #: read it at once, and their calls pay no second await
    decode_awaits: ClassVar[bool] = False

    def __init__(self, config: ModelConfig, api_key: str) -> None:
        self.config = config
        self._api_key = api_key

    async def complete(self, parts: Sequence[Part], decoding: Decoding) -> ProviderResponse:
        request = self._request(parts, decoding)
        try:
            raw = await self._send(request)
        except Exception as exc:  # every SDK failure goes through one taxonomy
            raise self._map_error(exc) from exc
        try:
            body = self._decode(raw)
            if self.decode_awaits:
                body = await body
        except self.unreadable as exc:  # a 2xx whose body cannot be read
            request_id = raw.headers.get(self.request_id_header)
            raise malformed(str(exc)[:300], request_id, raw.status_code) from exc
        return self._answer(raw, body)

    @abstractmethod
    def _request(self, parts: Sequence[Part], decoding: Decoding) -> Any:
        """What `_send` sends for these parts and decoding."""

    @abstractmethod
    def _send(self, request: Any) -> Awaitable[Any]:
        """The SDK's call of `request`, not yet awaited."""

    @abstractmethod
    def _map_error(self, exc: Exception) -> ProviderError:
        """A failure of `_send` in the taxonomy."""

    def _decode(self, raw: Any) -> Any:
        """The answer's body (the SDK's answer itself where it has read it)."""
        return raw

    def _convert(self, body: Any, request_id: str | None) -> ProviderResponse:
        """The body -> ProviderResponse; raises for an answer that is not one."""
        raise NotImplementedError

    def _answer(self, raw: Any, body: Any) -> ProviderResponse:
        """The converted body, with its request id and what remains of the window, from the
        HTTP answer's headers."""
        response = self._convert(body, raw.headers.get(self.request_id_header))
        response.remaining = remaining_from_headers(raw.headers)
        response.limits = limits_from_headers(raw.headers)
        return response

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP connections."""

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}({self.config.id!r})"
