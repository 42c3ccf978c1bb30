"""One store test suite, run against a LocalStore and an S3Store on a real moto server."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from evalfleet.storage import (
    DEFAULT_STORE_URL,
    LocalStore,
    Store,
    StoreError,
    join_key,
    open_store,
    safe_segment,
    unsafe_segment,
)
from evalfleet.storage.keys import TMP_PREFIX
from evalfleet.storage.s3 import S3Store
from tests.support.s3_server import MotoS3Server, apply_fake_aws_env

REPO_ROOT = Path(__file__).resolve().parents[2]


def fresh_bucket(server: MotoS3Server) -> str:
    name = f"evalfleet-test-{uuid.uuid4().hex[:8]}"
    server.create_bucket(name)
    return name


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        return LocalStore(tmp_path / "runs")
    server: MotoS3Server = request.getfixturevalue("moto_server")
    return open_store(f"s3://{fresh_bucket(server)}/team/runs", s3_endpoint_url=server.endpoint)


@pytest.fixture
def s3_store(moto_server: MotoS3Server) -> S3Store:
    store = open_store(f"s3://{fresh_bucket(moto_server)}/p", s3_endpoint_url=moto_server.endpoint)
    assert isinstance(store, S3Store)
    return store


KEY = "run1/completions/openai%2Fsim-0.3/zerobench/7/0.json"


# -- the shared suite -----------------------------------------------------------


def test_put_if_absent_never_overwrites(store: Store) -> None:
    assert store.put_if_absent(KEY, b'{"first": 1}') is True
    assert store.put_if_absent(KEY, b'{"second": 2}') is False
    assert store.get(KEY) == b'{"first": 1}'
    assert store.list("run1/") == [KEY]


def test_concurrent_put_if_absent_has_one_winner(store: Store) -> None:
    payloads = [f"writer-{i:02d};".encode() * 4000 for i in range(16)]
    barrier = threading.Barrier(16)
    results: list[bool | None] = [None] * 16

    def write(i: int) -> None:
        barrier.wait()
        results[i] = store.put_if_absent(KEY, payloads[i])

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1
    assert results.count(False) == 15
    assert store.get(KEY) == payloads[results.index(True)]
    assert store.list("") == [KEY]


def test_put_overwrites_atomically(store: Store) -> None:
    store.put("run1/results/summary.csv", b"a,b\n1,2\n")
    store.put("run1/results/summary.csv", b"a,b\n3,4\n")
    assert store.get("run1/results/summary.csv") == b"a,b\n3,4\n"
    assert store.list("run1") == ["run1/results/summary.csv"]


def test_missing_key(store: Store) -> None:
    assert store.get("run1/missing.json") is None
    assert store.exists("run1/missing.json") is False
    store.put("run1/present.json", b"{}")
    assert store.exists("run1/present.json") is True
    assert store.exists("run1") is False  # a "directory" is not a key
    assert store.get("run1") is None


def test_empty_payload(store: Store) -> None:
    assert store.put_if_absent("run1/empty.json", b"") is True
    assert store.get("run1/empty.json") == b""
    assert store.exists("run1/empty.json") is True


LAYOUT = [
    "run1/manifest.json",
    "run1/completions/m/zb/2/0.json",
    "run1/completions/m/zb/10/0.json",
    "run1/completions/m/zb/10/1.json",
    "run10/manifest.json",
    "run1.json",
    "run2/manifest.json",
    "Z-upper/manifest.json",
]


def test_list_is_sorted_recursive_and_isolated(store: Store) -> None:
    assert store.put_many_if_absent({k: k.encode() for k in LAYOUT}) == dict.fromkeys(LAYOUT, True)
    run1 = [
        "run1/completions/m/zb/10/0.json",
        "run1/completions/m/zb/10/1.json",
        "run1/completions/m/zb/2/0.json",
        "run1/manifest.json",
    ]
    assert store.list("run1/") == run1
    assert store.list("run1") == run1
    assert store.list("run1/completions/m/zb/10") == run1[:2]
    assert store.list("") == sorted(LAYOUT)
    assert store.list("/") == sorted(LAYOUT)
    assert store.list("run3/") == []
    assert store.list("run1/manifest.json") == []  # a key is not a directory


def test_list_dirs(store: Store) -> None:
    store.put_many_if_absent({k: b"x" for k in LAYOUT})
    assert store.list_dirs("") == ["Z-upper", "run1", "run10", "run2"]
    assert store.list_dirs("run1/") == ["completions"]
    assert store.list_dirs("run1/completions/m/zb") == ["10", "2"]
    assert store.list_dirs("run1/completions/m/zb/10/") == []
    assert store.list_dirs("nope/") == []


def test_get_many(store: Store) -> None:
    store.put("run1/a.json", b"A")
    store.put("run1/b.json", b"B")
    keys = ["run1/b.json", "run1/missing.json", "run1/a.json", "run1/b.json"]
    assert store.get_many(keys, max_workers=4) == {
        "run1/b.json": b"B",
        "run1/missing.json": None,
        "run1/a.json": b"A",
    }
    assert store.get_many([]) == {}


def test_put_many_if_absent(store: Store) -> None:
    store.put("run1/a.json", b"old")
    result = store.put_many_if_absent(
        {"run1/a.json": b"new", "run1/b.json": b"B", "run1/c/d.json": b"D"}, max_workers=3
    )
    assert result == {"run1/a.json": False, "run1/b.json": True, "run1/c/d.json": True}
    assert store.get_many(["run1/a.json", "run1/b.json", "run1/c/d.json"]) == {
        "run1/a.json": b"old",
        "run1/b.json": b"B",
        "run1/c/d.json": b"D",
    }


@pytest.mark.slow  # 1,500 objects written to moto: about 16 s
def test_listing_beyond_one_s3_page(store: Store) -> None:
    items = {f"run1/completions/m/zb/{i}/0.json": b"%d" % i for i in range(1500)}
    assert store.put_many_if_absent(items, max_workers=32) == dict.fromkeys(items, True)
    assert store.list("run1/completions/m/zb/") == sorted(items)
    assert store.list_dirs("run1/completions/m/zb/") == sorted(str(i) for i in range(1500))
    pages = list(store.iter_pages("run1/completions/"))
    assert [key for page in pages for key, _ in page] == sorted(items)
    sizes = {key: size for page in pages for key, size in page}
    if store.url.startswith("s3://"):
        assert [len(page) for page in pages] == [1000, 500]
        assert sizes == {key: len(data) for key, data in items.items()}  # free in a listing
    else:
        assert set(sizes.values()) == {None}
    assert store.list("run1/completions/m/zb/1499") == ["run1/completions/m/zb/1499/0.json"]


MODEL_IDS = ["openai/gpt-4o", "vllm/Qwen/Qwen2.5-VL 7B?x=1#a", "100%/ü☃", ".hidden", "..", "+ ~"]


@pytest.mark.parametrize("model", MODEL_IDS)
def test_encoded_segments_round_trip(store: Store, model: str) -> None:
    seg = safe_segment(model)
    key = join_key("run1", "completions", seg, "zerobench", 7, "0.json")
    assert store.put_if_absent(key, model.encode()) is True
    assert store.list("run1/completions") == [key]
    assert store.list_dirs("run1/completions") == [seg]
    assert unsafe_segment(store.list_dirs("run1/completions")[0]) == model
    assert store.get(key) == model.encode()


def test_raw_unicode_keys_round_trip(store: Store) -> None:
    keys = ["run1/données/été ☃.json", "run1/données/a b+c%20.json", "run1/日本/語.json"]
    store.put_many_if_absent({k: k.encode() for k in keys})
    assert store.list("run1") == sorted(keys)
    assert store.list_dirs("run1") == ["données", "日本"]
    assert store.get_many(keys) == {k: k.encode() for k in keys}


@pytest.mark.parametrize(
    "key", ["", "/abs.json", "../escape.json", "a//b.json", "a/./b.json", "a/b/", ".tmp-x"]
)
def test_invalid_keys_are_refused(store: Store, key: str) -> None:
    with pytest.raises(StoreError, match="invalid store key"):
        store.put_if_absent(key, b"x")
    with pytest.raises(StoreError, match="invalid store key"):
        store.get(key)


def test_store_survives_pickling(store: Store) -> None:
    store.put("run1/a.json", b"A")
    clone = pickle.loads(pickle.dumps(store))
    assert clone.url == store.url
    assert clone.get("run1/a.json") == b"A"
    assert clone.put_if_absent("run1/b.json", b"B") is True
    assert store.get("run1/b.json") == b"B"


def test_reopen_from_url(store: Store) -> None:
    """A Ray worker rebuilds the store from its URL (and endpoint) and sees the same keys."""
    store.put("run1/a.json", b"A")
    endpoint = store.endpoint_url if isinstance(store, S3Store) else None
    again = open_store(store.url, s3_endpoint_url=endpoint)
    assert type(again) is type(store)
    assert again.url == store.url
    assert again.list("") == ["run1/a.json"]


# -- local only ----------------------------------------------------------------


def test_local_leftover_temp_files_are_invisible(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("run1/a/0.json", b"A")
    (tmp_path / "run1" / "a" / f"{TMP_PREFIX}0123abcd").write_bytes(b'{"half')
    (tmp_path / "run1" / f"{TMP_PREFIX}dir").mkdir()
    assert store.list("") == ["run1/a/0.json"]
    assert store.list_dirs("run1") == ["a"]
    assert store.put_if_absent("run1/a/1.json", b"B") is True
    assert sorted(p.name for p in (tmp_path / "run1" / "a").iterdir()) == [
        ".tmp-0123abcd",
        "0.json",
        "1.json",
    ]


@pytest.mark.parametrize("unnamed", [True, False], ids=["o_tmpfile", "named-temp"])
def test_local_crash_between_temp_write_and_link(tmp_path: Path, unnamed: bool) -> None:
    """The process dies (os._exit, so no cleanup runs) right before os.link. An unnamed
    temp file (O_TMPFILE) leaves nothing behind; a named one (filesystems without it) is
    left, invisible to readers."""
    script = textwrap.dedent(
        f"""
        import os
        import evalfleet.storage.local
        from evalfleet.storage import LocalStore
        if not {unnamed}:
            evalfleet.storage.local._TMPFILE = None
        os.link = lambda *a, **k: os._exit(17)
        LocalStore({str(tmp_path)!r}).put_if_absent("run1/m/7/0.json", b"complete record")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60)
    assert done.returncode == 17
    leftovers = [p.name for p in (tmp_path / "run1" / "m" / "7").iterdir()]
    if unnamed:
        assert leftovers == []
    else:
        assert len(leftovers) == 1 and leftovers[0].startswith(TMP_PREFIX)
    store = LocalStore(tmp_path)
    assert store.list("") == []
    assert store.exists("run1/m/7/0.json") is False
    assert store.get("run1/m/7/0.json") is None
    assert store.put_if_absent("run1/m/7/0.json", b"retried record") is True
    assert store.get("run1/m/7/0.json") == b"retried record"


def test_local_fsync_mode(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=True)
    assert store.put_if_absent("run1/a.json", b"A") is True
    store.put("run1/b.json", b"B")
    assert store.get_many(["run1/a.json", "run1/b.json"]) == {
        "run1/a.json": b"A",
        "run1/b.json": b"B",
    }


def test_local_files_follow_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        LocalStore(tmp_path).put_if_absent("run1/a.json", b"A")
    finally:
        os.umask(old)
    assert (tmp_path / "run1" / "a.json").stat().st_mode & 0o777 == 0o644


def test_local_root_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("oops")
    with pytest.raises(StoreError) as info:
        LocalStore(tmp_path / "runs")
    assert str(info.value) == (
        f"store root {tmp_path / 'runs'} exists and is not a directory: "
        "pick another store URL or move the file away"
    )


# -- S3 only ---------------------------------------------------------------------


def test_s3_requests_go_over_http(moto_server: MotoS3Server, s3_store: S3Store) -> None:
    before = moto_server.requests
    s3_store.put("run1/a.json", b"A")
    assert s3_store.get("run1/a.json") == b"A"
    # The store's first contact in this process (a HEAD of the bucket, short waits), the PUT,
    # the GET.
    assert moto_server.requests - before == 3
    assert s3_store.client.meta.endpoint_url == moto_server.endpoint


def test_s3_objects_live_under_the_prefix(moto_server: MotoS3Server) -> None:
    bucket = fresh_bucket(moto_server)
    inner = open_store(f"s3://{bucket}/team/runs/", s3_endpoint_url=moto_server.endpoint)
    root = open_store(f"s3://{bucket}", s3_endpoint_url=moto_server.endpoint)
    inner.put("run1/a.json", b"A")
    assert inner.url == f"s3://{bucket}/team/runs"
    assert root.url == f"s3://{bucket}"
    assert root.list("") == ["team/runs/run1/a.json"]
    assert root.list_dirs("") == ["team"]
    assert inner.list_dirs("") == ["run1"]
    assert root.get("team/runs/run1/a.json") == b"A"


def test_s3_content_type(s3_store: S3Store) -> None:
    s3_store.put_if_absent("run1/a.json", b"{}")
    s3_store.put("run1/results/plot.png", b"\x89PNG")
    head = s3_store.client.head_object
    assert head(Bucket=s3_store.bucket, Key="p/run1/a.json")["ContentType"] == "application/json"
    assert head(Bucket=s3_store.bucket, Key="p/run1/results/plot.png")["ContentType"] == "image/png"


def test_s3_conflict_409_is_retried(moto_server: MotoS3Server, s3_store: S3Store) -> None:
    moto_server.inject("PUT", "p/run1/a.json", "conflict", times=2)
    assert s3_store.put_if_absent("run1/a.json", b"A") is True
    assert s3_store.get("run1/a.json") == b"A"


def test_s3_conflict_409_that_persists(moto_server: MotoS3Server, s3_store: S3Store) -> None:
    moto_server.inject("PUT", "p/run1/a.json", "conflict", times=5)
    with pytest.raises(StoreError) as info:
        s3_store.put_if_absent("run1/a.json", b"A")
    assert str(info.value) == (
        f"write 'run1/a.json' to {s3_store.url} kept conflicting with concurrent writes "
        "(5 attempts): ConditionalRequestConflict"
    )
    assert s3_store.get("run1/a.json") is None


def test_s3_lost_response_then_412_is_our_write(
    moto_server: MotoS3Server, s3_store: S3Store
) -> None:
    """botocore retries a 500 whose write went through; the retry's 412 is our own key."""
    moto_server.inject("PUT", "p/run1/a.json", "lost_response")
    assert s3_store.put_if_absent("run1/a.json", b"ours") is True
    assert s3_store.get("run1/a.json") == b"ours"
    moto_server.inject("PUT", "p/run1/a.json", "lost_response")
    assert s3_store.put_if_absent("run1/a.json", b"someone else") is False
    assert s3_store.get("run1/a.json") == b"ours"


def test_s3_missing_bucket(moto_server: MotoS3Server) -> None:
    store = open_store("s3://evalfleet-missing-bucket", s3_endpoint_url=moto_server.endpoint)
    expected = (
        "S3 bucket 'evalfleet-missing-bucket' does not exist (S3 s3://evalfleet-missing-bucket "
        f"via endpoint {moto_server.endpoint}): create it "
        "(e.g. `aws s3 mb s3://evalfleet-missing-bucket`) or fix the store URL"
    )
    for call in (
        lambda: store.put_if_absent("run1/a.json", b"A"),
        lambda: store.put("run1/a.json", b"A"),
        lambda: store.get("run1/a.json"),
        lambda: store.exists("run1/a.json"),
        lambda: store.list(""),
        lambda: store.list_dirs(""),
    ):
        with pytest.raises(StoreError) as info:
            call()
        assert str(info.value) == expected


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])
def test_s3_endpoint_from_environment(
    moto_server: MotoS3Server, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    bucket = fresh_bucket(moto_server)
    monkeypatch.setenv(variable, moto_server.endpoint)
    store = open_store(f"s3://{bucket}/p")
    assert store.describe() == f"S3 s3://{bucket}/p via endpoint {moto_server.endpoint}"
    assert store.put_if_absent("run1/a.json", b"A") is True
    assert store.list("") == ["run1/a.json"]


def test_s3_without_credentials(moto_server: MotoS3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    store = open_store("s3://evalfleet-nocreds/p", s3_endpoint_url=moto_server.endpoint)
    with pytest.raises(StoreError) as info:
        store.get("run1/a.json")
    assert str(info.value) == (
        "read 'run1/a.json' in s3://evalfleet-nocreds/p: no AWS credentials found; set "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
    )


def test_s3_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    apply_fake_aws_env(monkeypatch)
    store = S3Store("evalfleet-nowhere", endpoint_url="http://127.0.0.1:9", max_attempts=1)
    with pytest.raises(StoreError) as info:
        store.list("")
    assert str(info.value) == (
        "list '' in s3://evalfleet-nowhere: cannot reach S3 s3://evalfleet-nowhere via "
        "endpoint http://127.0.0.1:9; check the endpoint URL and that the server is up"
    )


def test_s3_endpoint_that_never_answers_is_named_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that takes the connection and never answers (a wrong port of some other
    program): the store's first contact gives up after its short waits, where botocore's own
    (60 s, five times) held a command six minutes; the threads of a bulk read that waited for
    that first contact are given its failure, not a probe each (32 of them one after another
    took 16 minutes)."""
    apply_fake_aws_env(monkeypatch)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        found = {}
        calls = {
            "write": lambda store: store.check_writable(),
            "list": lambda store: store.list("run1/"),
            "read": lambda store: store.get_many([f"run1/{i}.json" for i in range(16)]),
        }
        for op, call in calls.items():
            store = S3Store("evalfleet-silent", endpoint_url=endpoint, probe_timeout_s=0.5)
            started = time.monotonic()
            with pytest.raises(StoreError) as info:
                call(store)
            found[op] = (str(info.value), time.monotonic() - started)
    where = f"S3 s3://evalfleet-silent via endpoint {endpoint}"
    fix = "did not answer in time; check that the endpoint URL names a running S3 server"
    assert found["write"][0] == f"write '(bucket)' in s3://evalfleet-silent: {where} {fix}"
    assert found["list"][0] == f"list 'run1/' in s3://evalfleet-silent: {where} {fix}"
    assert found["read"][0].endswith(f"in s3://evalfleet-silent: {where} {fix}")
    # One probe each: two attempts of 0.5 s waits and a backoff, about 2 s quiet, 9.4 s seen
    # on a loaded CI host; a probe per thread of the 16-key read would be 16 of them (32 s+).
    for _, waited in found.values():
        assert 1.0 <= waited < 20.0


class _AnswersOnce(threading.Thread):
    """An HTTP server on loopback that answers its first request (the store's first
    contact, a HEAD) and then takes requests without ever answering: a server that is up and
    stalls."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.held: list[socket.socket] = []

    def run(self) -> None:
        first = True
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if first:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                conn.close()
                first = False
            else:
                self.held.append(conn)


def test_s3_server_that_stalls_after_answering_is_told_as_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    apply_fake_aws_env(monkeypatch)
    server = _AnswersOnce()
    server.start()
    store = S3Store(
        "evalfleet-slow", endpoint_url=server.endpoint, max_attempts=1, answer_timeout_s=0.5
    )
    try:
        with pytest.raises(StoreError) as info:
            store.get("run1/a.json")
    finally:
        server.listener.close()
    assert str(info.value) == (
        f"read 'run1/a.json' in s3://evalfleet-slow: S3 s3://evalfleet-slow via endpoint "
        f"{server.endpoint} did not answer in 1 attempt of 0.5 s; the server is slow or "
        "overloaded: try again (what is stored is kept)"
    )


def test_s3_describe_hides_secrets() -> None:
    store = S3Store("evalfleet-x", "p", endpoint_url="https://user:hunter2@minio.local:9000/?t=s")
    assert store.describe() == "S3 s3://evalfleet-x/p via endpoint https://minio.local:9000/"


def test_s3_client_is_lazy_and_not_pickled(s3_store: S3Store) -> None:
    fresh = S3Store("evalfleet-x", endpoint_url="http://127.0.0.1:9")
    assert fresh._client is None
    s3_store.put("run1/a.json", b"A")
    assert s3_store._client is not None
    state = pickle.loads(pickle.dumps(s3_store)).__dict__
    assert state["_client"] is None


# -- URLs and key helpers ----------------------------------------------------------


def test_open_store_local_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert DEFAULT_STORE_URL == "./runs"
    default = open_store()
    assert isinstance(default, LocalStore)
    assert default.url == str(tmp_path / "runs")
    assert open_store("file:///srv/eval%20runs/").url == "/srv/eval runs"
    assert open_store("file://localhost/srv/runs").url == "/srv/runs"
    assert open_store("  relative/dir ").url == str(tmp_path / "relative" / "dir")
    assert default.describe() == f"local directory {tmp_path / 'runs'}"


def test_open_store_s3_forms() -> None:
    store = open_store("s3://evalfleet-bucket/a/b/", s3_endpoint_url="http://127.0.0.1:9")
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix, store.url) == (
        "evalfleet-bucket",
        "a/b/",
        "s3://evalfleet-bucket/a/b",
    )
    assert store.endpoint_url == "http://127.0.0.1:9"
    bare = open_store("S3://my.bucket-1", s3_endpoint_url=" ")
    assert isinstance(bare, S3Store)
    assert (bare.bucket, bare.prefix, bare.url, bare.endpoint_url) == (
        "my.bucket-1",
        "",
        "s3://my.bucket-1",
        None,
    )


FORMS = "use a directory path, file:///absolute/path or s3://bucket/prefix"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", f"empty store URL: {FORMS}"),
        ("   ", f"empty store URL: {FORMS}"),
        ("gs://bucket/x", f"unsupported store URL scheme 'gs' in 'gs://bucket/x': {FORMS}"),
        ("s3:/bucket/x", f"malformed store URL 's3:/bucket/x': {FORMS}"),
        ("s3://", "bad S3 URL 's3://': no bucket name; write s3://bucket/prefix"),
        (
            "s3://My_Bucket/x",
            "bad S3 URL 's3://My_Bucket/x': 'My_Bucket' is not a valid bucket name "
            "(3-63 characters: lowercase letters, digits, '.', '-')",
        ),
        (
            "s3://b/x",
            "bad S3 URL 's3://b/x': 'b' is not a valid bucket name "
            "(3-63 characters: lowercase letters, digits, '.', '-')",
        ),
        (
            "s3://AKIAXX:secret@bucket/x",
            "bad S3 URL 's3://***@bucket/x': write s3://bucket/prefix; credentials come from "
            "the AWS environment/profile and the endpoint from --s3-endpoint-url",
        ),
        (
            "s3://bucket/a//b",
            "bad S3 URL 's3://bucket/a//b': the prefix has an empty, '.' or '..' segment",
        ),
        (
            "s3://bucket/x?versionId=1",
            "bad S3 URL 's3://bucket/x?versionId=1': remove the '?…'/'#…' part",
        ),
        (
            "file://host/srv/runs",
            "bad file URL 'file://host/srv/runs': write file:///absolute/path (three slashes) "
            "or a plain directory path",
        ),
    ],
)
def test_open_store_errors(url: str, message: str) -> None:
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert str(info.value) == message
    assert "secret" not in str(info.value)


def test_open_store_bad_endpoint() -> None:
    with pytest.raises(StoreError) as info:
        open_store("s3://bucket/x", s3_endpoint_url="127.0.0.1:9000")
    assert str(info.value) == (
        "bad S3 endpoint URL '127.0.0.1:9000': write http(s)://host[:port], "
        "e.g. http://127.0.0.1:9000"
    )


def test_key_helpers() -> None:
    model = safe_segment("openai/gpt-4o")
    assert model == "openai%2Fgpt-4o"
    assert join_key("run1", "completions", model, "zerobench", 7, 0) == (
        "run1/completions/openai%2Fgpt-4o/zerobench/7/0"
    )
    assert join_key("run1/completions/", "/x.json") == "run1/completions/x.json"
    assert safe_segment(".hidden") == "%2Ehidden"
    assert safe_segment("..") == "%2E."
    assert safe_segment("a b%c") == "a%20b%25c"
    for name in MODEL_IDS:
        assert unsafe_segment(safe_segment(name)) == name
    with pytest.raises(ValueError, match="empty name"):
        safe_segment("")
    with pytest.raises(ValueError, match="empty part"):
        join_key("run1", "", "x")
    with pytest.raises(StoreError, match="invalid store key"):
        join_key("run1", "..", "x")


def test_check_writable(store: Store, tmp_path: Path) -> None:
    store.check_writable()
    assert store.list("") == []  # the probe is gone
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match=r"^cannot write to the store .*a-file/runs \(.*a-file "):
        LocalStore(blocker / "runs").check_writable()
    LocalStore(tmp_path / "new" / "runs").check_writable()
    assert not (tmp_path / "new").exists()  # checking creates nothing
    with pytest.raises(StoreError, match="^cannot write to the store /proc/evalfleet"):
        LocalStore("/proc/evalfleet").check_writable()


def test_evalfleet_fsync_turns_on_flushed_writes(tmp_path: Path, monkeypatch) -> None:
    from evalfleet.storage import open_store

    monkeypatch.setenv("EVALFLEET_FSYNC", "1")
    flushed = open_store(str(tmp_path / "flushed"))
    assert flushed.fsync is True and flushed.writes_are_local is False
    assert flushed.put_if_absent("a/b.json", b"{}") and not flushed.put_if_absent("a/b.json", b"")
    assert flushed.get("a/b.json") == b"{}"
    monkeypatch.delenv("EVALFLEET_FSYNC")
    assert open_store(f"file://{tmp_path / 'plain'}").fsync is False


def test_a_local_walk_gives_sorted_keys_in_pages(tmp_path) -> None:
    """Keys come out of the directory walk in the order a sort gives, a directory's name
    counted with its '/' ('a.x' < 'a/b' < 'a0'), temp files left out, in pages."""
    store = LocalStore(tmp_path / "store")
    keys = ["r/a.x", "r/a/b", "r/a/c/d", "r/a0", "r/b", "r/Z", "r/été/1", "r/a-b"]
    store.put_many_if_absent({k: b"x" for k in keys})
    (tmp_path / "store" / "r" / "a" / ".tmp-123-4").write_bytes(b"partial")
    assert store.list("r") == sorted(keys)
    assert store.list("r/a/") == ["r/a/b", "r/a/c/d"]
    pages = list(store.iter_pages("r", page_size=3))
    assert pages == [
        [("r/Z", None), ("r/a-b", None), ("r/a.x", None)],
        [("r/a/b", None), ("r/a/c/d", None), ("r/a0", None)],
        [("r/b", None), ("r/été/1", None)],
    ]
    assert list(store.iter_pages("nothing/")) == []
