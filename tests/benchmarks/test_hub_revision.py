"""A Hub load records the commit sha its revision resolves to, never a branch name: the real
`huggingface_hub` client asks a local HTTP server standing in for the Hub API (HF_ENDPOINT);
a local copy is recorded by its content fingerprint; an unreachable Hub is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalfleet.benchmarks import hub
from evalfleet.core.types import DatasetError

SHA = "0123456789abcdef0123456789abcdef01234567"


class _HubApi(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        _HubApi.asked.append(self.path)
        if not self.path.startswith("/api/datasets/m-a-p/OmniBench/revision/main"):
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({"id": "m-a-p/OmniBench", "sha": SHA, "siblings": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HubApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _HubApi.asked.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def resolve_in_child(endpoint: str, revision: str) -> subprocess.CompletedProcess:
    """HF_ENDPOINT is read when huggingface_hub is imported: a child process of its own."""
    code = (
        "from evalfleet.benchmarks.hub import revision_of\n"
        "from evalfleet.core.types import DatasetError\n"
        "try:\n"
        f"    print(revision_of({revision!r}, None, 'm-a-p/OmniBench'))\n"
        "except DatasetError as exc:\n"
        "    print('error: ' + str(exc))\n"
    )
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )


def test_a_branch_is_recorded_as_the_commit_the_hub_names(hub_api):
    done = resolve_in_child(hub_api, "main")
    assert done.stdout.strip() == SHA, done.stderr[-2000:]
    assert [p.split("?")[0] for p in _HubApi.asked] == [
        "/api/datasets/m-a-p/OmniBench/revision/main"
    ]


def test_an_unknown_revision_is_one_line(hub_api):
    done = resolve_in_child(hub_api, "no-such-branch")
    line = done.stdout.strip()
    assert line.startswith("error: cannot resolve m-a-p/OmniBench@no-such-branch to a commit ")
    assert line.endswith("check the network and HF_TOKEN, or pass a local copy with --dataset-path")
    assert "\n" not in line


def test_a_sha_is_its_own_revision_and_a_local_copy_its_fingerprint(tmp_path):
    assert hub.resolve_revision("m-a-p/OmniBench", SHA) == SHA  # nothing asked: no network here
    (tmp_path / "train.parquet").write_bytes(b"PAR1")
    assert hub.revision_of("main", tmp_path, "m-a-p/OmniBench") == hub.fingerprint(tmp_path)
    assert hub.revision_of("main", tmp_path).startswith("sha256:")
    with pytest.raises(DatasetError, match="dataset path .* does not exist"):
        hub.revision_of("main", tmp_path / "missing", "m-a-p/OmniBench")
