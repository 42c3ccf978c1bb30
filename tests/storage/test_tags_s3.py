"""`evalfleet tag` on an S3 store (moto's server over HTTP): the tags file is one object in the
run's folder, the manifest is untouched and the index is rewritten beside the leaderboard."""

from __future__ import annotations

import json
import uuid

from evalfleet.cli.main import main
from evalfleet.storage import open_store
from tests.support.s3_server import MotoS3Server

MANIFEST = b'{"not": "read by tag"}'


def test_tags_are_one_object_in_the_runs_folder(moto_server: MotoS3Server, capsys) -> None:
    bucket = f"tags-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    url = f"s3://{bucket}/team/runs"
    store = open_store(url, s3_endpoint_url=moto_server.endpoint)
    store.put("r1/manifest.json", MANIFEST)
    where = ["--store", url, "--s3-endpoint-url", moto_server.endpoint]
    assert main(["tag", "r1", *where, "--add", "nightly", "--note", "on S3"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "tags: nightly",
        "note: on S3",
        "metadata: none",
        f"index: {url}/leaderboard/runs.html",
    ]
    assert store.list("r1") == ["r1/manifest.json", "r1/tags.json"]
    assert json.loads(store.get("r1/tags.json")) == {"tags": ["nightly"], "note": "on S3"}
    assert store.get("r1/manifest.json") == MANIFEST
    assert '<span class="tag">nightly</span>' in store.get("leaderboard/runs.html").decode()


def test_view_serves_an_s3_store_and_writes_its_tags(moto_server: MotoS3Server) -> None:
    """`evalfleet view` on the same server: a report read from S3 with the editor added, the
    store index made in memory while the store has none, and a tag written with the token."""
    import http.client
    import threading

    from evalfleet.reports.view_server import TOKEN_HEADER, ViewServer

    bucket = f"view-{uuid.uuid4().hex[:8]}"
    moto_server.create_bucket(bucket)
    store = open_store(f"s3://{bucket}/runs", s3_endpoint_url=moto_server.endpoint)
    store.put("r1/manifest.json", MANIFEST)
    store.put("r1/results/v-1/report.html", b"<html><head></head><body>r1</body></html>")
    server = ViewServer(store, 0, token="t0ken")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()

    def ask(method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request(method, path, body=body, headers={TOKEN_HEADER: "t0ken"})
        response = connection.getresponse()
        return response.status, response.read()

    try:
        status, page = ask("GET", "/r1/results/v-1/report.html")
        assert status == 200
        assert page.startswith(b"<html><head><meta name='evalfleet-view' data-run='r1'></head>")
        status, page = ask("GET", "/leaderboard/runs.html")
        assert (status, b'<span id="shown">1</span> of 1 runs' in page) == (200, True)
        assert not store.exists("leaderboard/runs.html")  # a GET writes nothing
        status, body = ask("POST", "/api/runs/r1/tags", b'{"add": ["in-view"]}')
        assert (status, json.loads(body)) == (
            200,
            {"run": "r1", "tags": ["in-view"], "note": "", "metadata": {}},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert json.loads(store.get("r1/tags.json")) == {"tags": ["in-view"], "note": ""}
    assert '<span class="tag">in-view</span>' in store.get("leaderboard/runs.html").decode()
