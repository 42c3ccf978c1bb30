"""One endpoint's POST through an openai-style SDK client, its request built by the SDK once.

The SDK's `post` rebuilds the same request for every call: it copies its options, merges and
normalises the same headers, parses the same URL and sets the same timeout (a third of a
worker's time at hundreds of calls in flight, measured against the simulator). Here the SDK
builds the request once (`_build_request`: its URL, its authentication and default headers,
its timeout); each call copies it with its own body (and idempotency key, for a client
that sends one) and goes out through
the SDK's own sending path (`_send_request`: its HTTP client, its authentication hooks), and a
failure becomes the SDK's own exception, as its `post` would raise it.
"""

from __future__ import annotations

from typing import Any

import httpx2
import openai
from openai._httpx2 import request_exceptions, timeout_exceptions
from openai._models import FinalRequestOptions

_PER_CALL = {b"content-length", b"idempotency-key"}


class SdkPost:
    def __init__(self, client: Any, path: str) -> None:
        self._client = client
        template = client._build_request(
            FinalRequestOptions.construct(method="post", url=path, content=b"")
        )
        self._url = template.url
        self._extensions = template.extensions
        self._headers = httpx2.Headers(
            [(name, value) for name, value in template.headers.raw if name.lower() not in _PER_CALL]
        )
        self._idempotency = client._idempotency_header

    def request(self, body: bytes) -> httpx2.Request:
        request = httpx2.Request(
            "POST", self._url, headers=self._headers, content=body, extensions=self._extensions
        )
        if self._idempotency:  # a client class that sends one draws a key per call
            request.headers[self._idempotency] = self._client._idempotency_key()
        return request

    async def send(self, request: httpx2.Request) -> httpx2.Response:
        """The response of a 2xx; the SDK's exception otherwise (status, timeout, connection)."""
        try:
            response = await self._client._send_request(request, stream=False)
        except timeout_exceptions() as exc:
            raise openai.APITimeoutError(request=request) from exc
        except openai.OpenAIError:
            raise
        except request_exceptions() as exc:
            raise openai.APIConnectionError(request=request) from exc
        if response.is_error:
            raise self._client._make_status_error_from_response(response)
        return response
