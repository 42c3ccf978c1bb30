"""A real moto S3 server on 127.0.0.1 for the store tests (HTTP, no boto3 patching).

Two deliberate differences from a bare ``ThreadedMotoServer``:

* object writes are serialised: moto checks ``If-None-Match: *`` and then stores the
  object without holding a lock, whereas S3 decides conditional writes atomically;
  serialising writes makes moto model S3 there (reads and listings stay concurrent);
* faults can be injected per key (a 409 ConditionalRequestConflict, or a write that
  succeeds but whose response is lost as a 500), which moto never produces itself;
* or at random for record writes (`chaos`): refused with 503 SlowDown, written with the
  response lost, or answered only after a delay, as `perf/chaos.py` drives it.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/evalfleet-test-aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/evalfleet-test-aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}
_UNSET_ENV = (
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
)

StartResponse = Callable[..., Any]


def apply_fake_aws_env(mp: pytest.MonkeyPatch) -> None:
    """Point the standard credential chain at fake keys and away from ~/.aws."""
    for name in _UNSET_ENV:
        mp.delenv(name, raising=False)
    for name, value in FAKE_AWS_ENV.items():
        mp.setenv(name, value)


@dataclass
class Fault:
    method: str
    key: str  # object key (without bucket) the fault applies to
    kind: str  # "conflict" (409, not written) or "lost_response" (written, then 500)
    times: int


@dataclass
class Chaos:
    """Rates of faults on record writes (PUTs whose path contains one of `paths`)."""

    refused: float = 0.0  # 503 SlowDown, nothing written
    lost_response: float = 0.0  # written, then answered 500
    slow: float = 0.0  # answered after `slow_s`
    slow_s: float = 2.0
    paths: tuple[str, ...] = ("/completions/", "/judgements/")
    rng: random.Random = field(default_factory=lambda: random.Random(0))


class _QuietHandler(MotoRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class MotoS3Server(ThreadedMotoServer):
    """moto's standalone server on 127.0.0.1 and a free port chosen by the kernel."""

    def __init__(self) -> None:
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self.requests = 0
        self._faults: list[Fault] = []
        self._state_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._moto_app: Any = None
        self._chaos: Chaos | None = None
        self.chaos_counts = {"refused": 0, "lost_response": 0, "slow": 0}

    @property
    def endpoint(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"

    def create_bucket(self, name: str) -> None:
        boto3.client("s3", endpoint_url=self.endpoint).create_bucket(Bucket=name)

    def inject(self, method: str, key: str, kind: str, times: int = 1) -> None:
        with self._state_lock:
            self._faults.append(Fault(method, key, kind, times))

    def chaos(self, chaos: Chaos | None) -> None:
        """Random faults on record writes from now on (None: stop them)."""
        with self._state_lock:
            self._chaos = chaos

    def _chaos_fault(self, method: str, path: str) -> str | None:
        with self._state_lock:
            chaos = self._chaos
            if chaos is None or method != "PUT" or not any(p in path for p in chaos.paths):
                return None
            draw = chaos.rng.random()
            for kind, rate in (
                ("refused", chaos.refused),
                ("lost_response", chaos.lost_response),
                ("slow", chaos.slow),
            ):
                if draw < rate:
                    self.chaos_counts[kind] += 1
                    return kind
                draw -= rate
        return None

    # Same as ThreadedMotoServer._server_entry, with our WSGI wrapper and quiet logs.
    def _server_entry(self) -> None:
        # Serve S3 only: moto's host-based dispatcher stats its ~190 service packages on
        # every request (several ms), which dominated the 1,500-key tests.
        self._moto_app = create_backend_app("s3")
        self._server = make_server(
            self._ip_address, self._port, self._app, True, request_handler=_QuietHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    def _app(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        fault = self._take_fault(method, environ.get("PATH_INFO", ""))
        with self._state_lock:
            self.requests += 1
        chaos = self._chaos_fault(method, environ.get("PATH_INFO", ""))
        if chaos == "refused":
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            return _s3_error(start_response, "503 Slow Down", "SlowDown")
        if chaos == "slow":
            time.sleep(self._chaos.slow_s if self._chaos else 0.0)
        elif chaos == "lost_response":
            fault = Fault(method, "", "lost_response", 1)
        if fault is not None and fault.kind == "conflict":
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            return _s3_error(start_response, "409 Conflict", "ConditionalRequestConflict")
        if method not in ("PUT", "POST", "DELETE"):
            return self._moto_app(environ, start_response)
        with self._write_lock:
            if fault is None:
                return list(self._moto_app(environ, start_response))
            list(self._moto_app(environ, lambda *a, **k: None))  # written; reply is lost
            return _s3_error(start_response, "500 Internal Server Error", "InternalError")

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._state_lock:
            for fault in self._faults:
                if fault.method == method and path.endswith("/" + fault.key):
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                    return fault
        return None


def _s3_error(start_response: StartResponse, status: str, code: str) -> list[bytes]:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Error><Code>{code}</Code><Message>injected by the test server</Message></Error>"
    ).encode()
    start_response(
        status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
    )
    return [body]
