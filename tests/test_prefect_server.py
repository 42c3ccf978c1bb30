"""The test session's Prefect server (tests/support/prefect_server.py) starts even when another
program answers on the port it picked first."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from evalfleet.stack import services
from tests.support.prefect_server import prefect_server


@pytest.mark.slow
def test_a_port_another_program_answers_on_is_given_up_for_another(monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    answered = []

    def answer_garbage():  # as a gRPC server answers an HTTP/1.1 request
        while True:
            try:
                conn, _ = taken.accept()
            except OSError:
                return
            with conn:
                answered.append(conn.recv(1024))
                conn.sendall(b"\x00\x00\x12\x04\x00\x00\x00\x00\x00")

    threading.Thread(target=answer_garbage, daemon=True).start()
    ports = [taken.getsockname()[1]]
    real_free_port = services.free_port
    monkeypatch.setattr(services, "free_port", lambda: ports.pop() if ports else real_free_port())
    try:
        with prefect_server() as api_url:
            assert f":{taken.getsockname()[1]}/" not in api_url
            assert httpx.get(f"{api_url}/health").json() is True
    finally:
        taken.close()
    assert answered and answered[0].startswith(b"GET /api/health HTTP/1.1")
