"""The chat client's calls (a request the SDK built once, copied per call) put on the wire
exactly what the SDK's own typed `chat.completions.create` puts there, and fail with the SDK's
own exceptions. A capturing HTTP server on 127.0.0.1 records both."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
from aiohttp import web

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.openai_chat import OpenAIChatClient, request_params
from evalfleet.providers.registry import resolve_model
from evalfleet.providers.types import ErrorKind, ProviderError
from evalfleet.simulator.samples import tiny_png

ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "sim-0.5",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
}
PER_CALL = {"x-stainless-retry-count"}


class Capture:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(
            {
                "method": request.method,
                "path": request.path_qs,
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": await request.read(),
            }
        )
        if self.status != 200:
            error = {"error": {"message": "slow down", "type": "rate_limit", "code": None}}
            return web.json_response(error, status=self.status, headers={"x-request-id": "r-9"})
        return web.json_response(ANSWER, headers={"x-request-id": "r-1"})


async def serve(capture: Capture) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", capture.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def chat_model(base_url: str):
    registry = {
        "models": {
            "openai-compatible/captured": {
                "base_url": base_url,
                "api_model": "sim-0.5",
                "api_key_env": "CAPTURED_KEY",
                "accepts": ["max_tokens", "temperature", "seed"],
            }
        }
    }
    return resolve_model("openai-compatible/captured", registry=registry)


PARTS = [Part(kind="image", data=tiny_png(), media_type="image/png"), Part.of_text("Which?")]
DECODING = Decoding(max_tokens=64, temperature=0.0, seed=3)


async def both_ways(capture: Capture) -> tuple[Any, Any]:
    async for base_url in serve(capture):
        config = chat_model(base_url)
        ours = OpenAIChatClient(config, "sk-captured")
        try:
            answer = await ours.complete(PARTS, DECODING)
            # the same SDK client, through its own typed call
            await ours._client.chat.completions.create(**request_params(config, PARTS, DECODING))
        finally:
            await ours.aclose()
        return answer, config
    raise AssertionError("the server did not start")


def test_the_wire_request_is_the_sdks_own() -> None:
    capture = Capture()
    answer, _ = asyncio.run(both_ways(capture))
    assert (answer.text, answer.usage.input_tokens, answer.request_id) == ("42", 7, "r-1")
    ours, sdk = capture.requests
    assert (ours["method"], ours["path"]) == (sdk["method"], sdk["path"])
    assert ours["path"] == "/v1/chat/completions"
    assert json.loads(ours["body"]) == json.loads(sdk["body"])
    assert ours["headers"]["authorization"] == "Bearer sk-captured"
    assert ours["headers"]["content-length"] == str(len(ours["body"]))
    # Every header the SDK sends, with the same value (the retry count is the SDK's count of
    # its own retries, which are off: 0 each time)
    same = {k: v for k, v in sdk["headers"].items() if k not in PER_CALL | {"content-length"}}
    assert {k: ours["headers"].get(k) for k in same} == same
    assert set(ours["headers"]) - {"content-length"} == set(sdk["headers"]) - {"content-length"}
    assert ours["headers"]["x-stainless-retry-count"] == "0"


async def one_failure(capture: Capture, base_url: str | None = None) -> ProviderError:
    async for served in serve(capture):
        client = OpenAIChatClient(chat_model(base_url or served), "sk-captured")
        try:
            await client.complete(PARTS, DECODING)
        except ProviderError as error:
            return error
        finally:
            await client.aclose()
    raise AssertionError("no error")


def test_a_status_error_is_the_sdks_exception() -> None:
    capture = Capture()
    capture.status = 429
    error = asyncio.run(one_failure(capture))
    assert (error.kind, error.status, error.request_id) == (ErrorKind.RATE_LIMITED, 429, "r-9")
    assert isinstance(error.__cause__, openai.RateLimitError)
    assert "slow down" in str(error)


def test_a_refused_connection_fails_as_the_sdks_own_call_does() -> None:
    """The SDK's aiohttp transport reports a refused connection as httpx2.ConnectTimeout, so
    its own call raises APITimeoutError: ours raises the same, and the error it is mapped to
    says what happened (evalfleet.providers.transport), not a timeout."""
    config = chat_model("http://127.0.0.1:9/v1")

    async def sdk_call() -> BaseException:
        client = OpenAIChatClient(config, "sk-captured")
        try:
            await client._client.chat.completions.create(**request_params(config, PARTS, DECODING))
        except openai.OpenAIError as exc:
            return exc
        finally:
            await client.aclose()
        raise AssertionError("no error")

    error = asyncio.run(one_failure(Capture(), base_url="http://127.0.0.1:9/v1"))
    sdk_error = asyncio.run(sdk_call())
    assert type(error.__cause__) is type(sdk_error) is openai.APITimeoutError
    assert type(error.__cause__.__cause__) is type(sdk_error.__cause__)
    assert (error.kind, error.status) == (ErrorKind.CONNECTION, None)
    assert error.message == "connection error: connection refused"


def test_keys_never_show_in_the_client() -> None:
    client = OpenAIChatClient(chat_model("http://127.0.0.1:9/v1"), "sk-secret-123")
    assert "sk-secret" not in repr(client) and "sk-secret" not in repr(client._wire)
    asyncio.run(client.aclose())
