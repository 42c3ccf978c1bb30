"""A failed call is named by what happened, through each provider's real client:

- a connection the server resets (or closes unanswered, or refuses) is a connection error,
  though the openai SDK over aiohttp raises APITimeoutError for it; a hang past the timeout
  is still a timeout;
- a 429 whose Retry-After asks for an hour says so, and until when;
- OpenAI's 429 `insufficient_quota` (no credit on the key) is not a rate limit to wait out.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import struct
import threading
from collections.abc import Iterator

import httpx
import openai
import pytest

from evalfleet.core.types import Decoding, Part
from evalfleet.providers.openai_errors import map_openai_error
from evalfleet.providers.registry import resolve_model
from evalfleet.providers.types import ErrorKind
from evalfleet.simulator import start_simulator_in_thread
from evalfleet.simulator.process import SimulatorHandle
from tests.support.provider_harness import failure

PROVIDERS = ("openai", "anthropic", "google")
PARTS = [Part.of_text("Anyone there?")]


class Dropping:
    """A TCP server that reads each request, then resets the connection (`reset`) or closes
    it unanswered."""

    def __init__(self, reset: bool) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.reset = reset
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.recv(65536)
            if self.reset:  # RST, not FIN
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()


@pytest.fixture
def resetting() -> Iterator[Dropping]:
    server = Dropping(reset=True)
    yield server
    server.server.close()


def config_at(provider: str, url: str, timeout_s: float = 10.0):
    config = resolve_model(f"{provider}/sim-0.5", simulator_url=url)
    return dataclasses.replace(config, timeout_s=timeout_s)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reset_connection_is_a_connection_error_not_a_timeout(provider, resetting):
    error = failure(config_at(provider, resetting.url), PARTS, Decoding())
    assert (error.kind, error.message) == (
        ErrorKind.CONNECTION,
        "connection error: connection reset by peer",
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_connection_is_a_connection_error(provider):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    error = failure(config_at(provider, url), PARTS, Decoding())
    assert (error.kind, error.message) == (
        ErrorKind.CONNECTION,
        "connection error: connection refused",
    )


def test_a_connection_closed_unanswered_is_a_connection_error():
    server = Dropping(reset=False)
    try:
        error = failure(config_at("openai", server.url), PARTS, Decoding())
    finally:
        server.server.close()
    assert error.kind == ErrorKind.CONNECTION
    assert error.message in (
        "connection error: the server closed the connection unanswered",
        "connection error: connection reset by peer",
    )


@pytest.fixture(scope="module")
def waiting_an_hour() -> Iterator[SimulatorHandle]:
    faults = {"fail_first_n": 100, "fail_first_status": 429, "retry_after_ms": 3_600_000}
    with start_simulator_in_thread(None, {"faults": faults}) as handle:
        yield handle


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_429_asking_for_an_hour_says_so_and_until_when(provider, waiting_an_hour):
    error = failure(config_at(provider, waiting_an_hour.url), PARTS, Decoding())
    assert (error.kind, error.status, error.retry_after_s) == (ErrorKind.RATE_LIMITED, 429, 3600)
    assert re.match(
        r"the provider asked to wait 1 h \(Retry-After\), until \d{4}-\d\d-\d\d \d\d:\d\d UTC: ",
        error.message,
    ), error.message


def test_a_429_of_a_key_without_credit_is_not_a_rate_limit():
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    body = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    response = httpx.Response(429, request=request, json=body)
    exc = openai.RateLimitError("quota", response=response, body=body["error"])
    error = map_openai_error(exc)
    assert (error.kind, error.status, error.retryable) == (ErrorKind.AUTH, 429, False)


def test_a_hang_past_the_timeout_is_still_a_timeout():
    faults = {"hang": 1.0, "hang_s": 10}
    with start_simulator_in_thread(None, {"faults": faults}) as sim:
        errors = [
            failure(config_at(p, sim.url, timeout_s=0.5), PARTS, Decoding()) for p in PROVIDERS
        ]
    assert [(e.kind, e.message) for e in errors] == [(ErrorKind.TIMEOUT, "request timed out")] * 3
