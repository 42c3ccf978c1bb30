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
        f"index: {url}/leaderboard/runs.html",
    ]
    assert store.list("r1") == ["r1/manifest.json", "r1/tags.json"]
    assert json.loads(store.get("r1/tags.json")) == {"tags": ["nightly"], "note": "on S3"}
    assert store.get("r1/manifest.json") == MANIFEST
    assert '<span class="tag">nightly</span>' in store.get("leaderboard/runs.html").decode()
