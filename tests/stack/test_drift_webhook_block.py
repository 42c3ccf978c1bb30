"""Drift through a Prefect `Webhook` block, as the scheduled ranked re-evaluation sends it
(`flows.reevaluate.send_drift` with `notify_block`): a block saved on the session's Prefect
server, pointing at a local receiver, gets exactly one POST holding the flagged rows; nothing
flagged, nothing sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalfleet.reports.drift import document
from evalfleet.storage import open_store
from tests.reports.test_drift_section import _row

pytestmark = pytest.mark.slow  # the session's Prefect server


class Receiver(BaseHTTPRequestHandler):
    posts: list[tuple[str, dict]] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.posts.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_webhook_block_gets_one_post_with_the_flagged_rows(tmp_path, prefect_api_url):
    from prefect.blocks.webhook import Webhook

    from evalfleet.flows.reevaluate import send_drift

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Receiver.posts = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        Webhook(method="POST", url=url, allow_private_urls=True).save(
            "evalfleet-drift-test", overwrite=True
        )
        store = open_store(str(tmp_path / "runs"))
        drifted = _row("openai-compatible/drifty", -0.45, "drifty fp_2", True)
        steady = _row("openai-compatible/steady", 0.0, "drifty fp_1", False)
        send_drift(document(store, [steady]), notify_block="webhook/evalfleet-drift-test")
        assert Receiver.posts == []  # nothing flagged: nothing sent
        send_drift(document(store, [drifted, steady]), notify_block="webhook/evalfleet-drift-test")
    finally:
        server.shutdown()
        server.server_close()
    assert len(Receiver.posts) == 1
    kind, doc = Receiver.posts[0]
    assert kind == "application/json"
    assert (doc["event"], doc["table"]) == ("evalfleet.drift", "leaderboard/drift.csv")
    assert [(r["model"], r["diff"], r["flagged"]) for r in doc["flagged"]] == [
        ("openai-compatible/drifty", -0.45, True)
    ]
    assert doc["text"].startswith(
        "openai-compatible/drifty on zerobench (upstream), week1 -> week2"
    )
