"""Checkpoint store in an S3 bucket (AWS, MinIO, R2, moto, ... via ``endpoint_url``)."""

from __future__ import annotations

import builtins
import contextlib
import mimetypes
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from evalfleet.storage.base import Store, StoreError
from evalfleet.storage.keys import TMP_PREFIX, check_key, norm_prefix

_MISSING_KEY_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_PRECONDITION_CODES = frozenset({"PreconditionFailed", "412"})
_CONFLICT_CODES = frozenset({"ConditionalRequestConflict", "409"})
_BUCKET = "(bucket)"  # pseudo-key for bucket-level calls in error messages
_CONFLICT_ATTEMPTS = 5  # 409 ConditionalRequestConflict: another conditional write in flight
_CONFLICT_BACKOFF_S = 0.02
# botocore waits 60 s to connect and 60 s for each answer, five times over: an endpoint that
# takes the connection and never answers held a command for six minutes. Work keeps the 60 s
# answer wait (a large PUT on a loaded server); a connection is given 10 s. A store's first
# contact in a process (`_first_contact`) is a HEAD that waits PROBE_TIMEOUT_S, twice: an
# endpoint that never answers is named after about 31 s (measured; botocore may wait out the
# timeout more than once an attempt), before anything is bought. 10 s, not less: a loaded
# 2-core host can hold a local server's answer for seconds.
CONNECT_TIMEOUT_S = 10.0
WORK_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 10.0
_PROBE_ATTEMPTS = 2
FIRST_CONTACT = "evalfleet: the store's first request in this process"  # a note on its error


class S3Store(Store):
    """Keys are objects ``{prefix}/{key}`` in ``bucket``.

    The boto3 client is created lazily, once per process (and again after a fork or
    unpickling), so the store can be shipped to Ray workers; one client is shared by
    all threads. The endpoint is ``endpoint_url`` if given, else whatever botocore
    resolves itself (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, AWS config), and
    credentials come from the standard chain.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        max_pool_connections: int = 64,
        max_attempts: int = 5,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        answer_timeout_s: float = WORK_TIMEOUT_S,
    ) -> None:
        self.bucket = bucket
        self.prefix = norm_prefix(prefix)  # '' or 'a/b/'
        self.key_prefix = self.prefix
        self.endpoint_url = endpoint_url
        self.max_pool_connections = max_pool_connections
        self.max_attempts = max_attempts
        self.probe_timeout_s = probe_timeout_s
        self.answer_timeout_s = answer_timeout_s
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self._lock = threading.Lock()
        self._client: Any = None
        self._client_pid = 0
        # (pid, when, what) of the last first contact that failed: `_first_contact`
        self._contact_failed: tuple[int, float, BotoCoreError] | None = None
        self._bucket_checked = False

    # -- pickling / client ----------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_lock=None, _client=None, _client_pid=0, _contact_failed=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The process-wide boto3 S3 client of this store (created on first use), once the
        endpoint has answered this process (`_first_contact`)."""
        if self._client is None or self._client_pid != os.getpid():
            with self._lock:
                if self._client is None or self._client_pid != os.getpid():
                    # One session for both clients: the second is made from what the first
                    # loaded (4 ms, not 56 ms of CPU in every process that opens the store).
                    session = boto3.session.Session()  # the default one is not thread-safe
                    self._first_contact(session)
                    self._client = self._make_client(session)
                    self._client_pid = os.getpid()
        return self._client

    def _first_contact(self, session: Any) -> None:
        """One HEAD of the bucket with short waits: an endpoint that takes the connection
        and never answers is named in seconds (by the caller's `_errors`), not after the
        work's waits. Any answer will do, an error too: what it means is the caller's. A
        failure is given again, without asking, to the threads that waited for this one
        (a bulk read starts 32) for as long as one probe takes; then the next call asks."""
        failed = self._contact_failed
        one_probe_s = self.probe_timeout_s * 2 * _PROBE_ATTEMPTS
        if failed and failed[0] == os.getpid() and time.monotonic() - failed[1] < one_probe_s:
            raise failed[2]
        try:
            self._make_client(session, probe=True).head_bucket(Bucket=self.bucket)
        except ClientError:
            pass
        except BotoCoreError as exc:
            exc.add_note(FIRST_CONTACT)
            self._contact_failed = (os.getpid(), time.monotonic(), exc)
            raise
        self._contact_failed = None

    def _make_client(self, session: Any, *, probe: bool = False) -> Any:
        """The work's client, or (`probe`) one that waits `probe_timeout_s` for an answer,
        twice, for the first contact."""
        custom = self.endpoint_url or _env_endpoint()
        config = Config(
            retries={
                "mode": "standard",
                "max_attempts": min(_PROBE_ATTEMPTS, self.max_attempts)
                if probe
                else self.max_attempts,
            },
            connect_timeout=min(CONNECT_TIMEOUT_S, self.probe_timeout_s)
            if probe
            else CONNECT_TIMEOUT_S,
            read_timeout=self.probe_timeout_s if probe else self.answer_timeout_s,
            max_pool_connections=self.max_pool_connections,
            # Bucket-in-hostname addressing rarely works on self-hosted endpoints.
            s3={"addressing_style": "path"} if custom else None,
        )
        return session.client("s3", endpoint_url=self.endpoint_url, config=config)

    def describe(self) -> str:
        endpoint = self.endpoint_url or _env_endpoint()
        where = f"endpoint {_redact(endpoint)}" if endpoint else "the default AWS endpoint"
        return f"S3 {self.url} via {where}"

    def _parallelism(self, requested: int) -> int:
        return min(requested, self.max_pool_connections)

    # -- writes ---------------------------------------------------------------

    def put_if_absent(self, key: str, data: bytes) -> bool:
        full = self._full(key)
        conflict: ClientError | None = None
        for attempt in range(_CONFLICT_ATTEMPTS):
            if attempt:
                time.sleep(_CONFLICT_BACKOFF_S * 2**attempt * (0.5 + random.random()))
            try:
                with self._errors("write", key, tolerate=_PRECONDITION_CODES | _CONFLICT_CODES):
                    self.client.put_object(
                        Bucket=self.bucket,
                        Key=full,
                        Body=data,
                        IfNoneMatch="*",
                        ContentType=_content_type(key),
                    )
                return True
            except ClientError as exc:
                if _code(exc) in _PRECONDITION_CODES:
                    return self._lost_race_or_retried_win(key, data, exc)
                conflict = exc  # 409 ConditionalRequestConflict: S3 asks for a retry
        raise StoreError(
            f"write {key!r} to {self.url} kept conflicting with concurrent writes "
            f"({_CONFLICT_ATTEMPTS} attempts): ConditionalRequestConflict"
        ) from conflict

    def _lost_race_or_retried_win(self, key: str, data: bytes, exc: ClientError) -> bool:
        """Decide a 412. If botocore retried the PUT, the first attempt may have
        succeeded with its response lost; the key then holds our own bytes."""
        if exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0):
            return self.get(key) == data
        return False

    def put(self, key: str, data: bytes) -> None:
        with self._errors("write", key):
            self.client.put_object(
                Bucket=self.bucket, Key=self._full(key), Body=data, ContentType=_content_type(key)
            )

    # -- reads ----------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        try:
            with self._errors("read", key, tolerate=_MISSING_KEY_CODES):
                response = self.client.get_object(Bucket=self.bucket, Key=self._full(key))
                return response["Body"].read()
        except ClientError:
            return None

    def exists(self, key: str) -> bool:
        try:
            with self._errors("check", key, tolerate=_MISSING_KEY_CODES):
                self.client.head_object(Bucket=self.bucket, Key=self._full(key))
                return True
        except ClientError:
            # HEAD has no error body, so a missing bucket also looks like a 404.
            self._check_bucket_once()
            return False

    def delete(self, key: str) -> None:
        with self._errors("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._full(key))

    def list(self, prefix: str) -> list[str]:
        full = self.prefix + norm_prefix(prefix)
        cut = len(self.prefix)
        keys: list[str] = []
        with self._errors("list", prefix):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=full
            )
            for page in pages:
                # Keys ending in '/' are console "folder" placeholders, not records.
                keys.extend(
                    o["Key"][cut:] for o in page.get("Contents", ()) if not o["Key"].endswith("/")
                )
        keys.sort()
        return keys

    def iter_pages(self, prefix: str) -> Iterator[builtins.list[tuple[str, int | None]]]:
        """(key, size) pages in key order; the next page is fetched while the caller handles
        this one."""
        pages: queue.Queue[list[tuple[str, int | None]] | BaseException | None] = queue.Queue(
            maxsize=8
        )

        def fetch() -> None:
            full = self.prefix + norm_prefix(prefix)
            cut = len(self.prefix)
            try:
                with self._errors("list", prefix):
                    paginator = self.client.get_paginator("list_objects_v2")
                    for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
                        contents = page.get("Contents", ())
                        pages.put(
                            [
                                (o["Key"][cut:], o.get("Size"))
                                for o in contents
                                if not o["Key"].endswith("/")
                            ]
                        )
                pages.put(None)
            except BaseException as exc:  # handed to the consumer, raised there
                pages.put(exc)

        threading.Thread(target=fetch, name="s3-list", daemon=True).start()
        while (item := pages.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def check_writable(self) -> None:
        """A probe object is written and removed: only a real PUT proves the permission."""
        probe = f"{self.prefix}{TMP_PREFIX}probe-{uuid.uuid4().hex}"
        with self._errors("write", _BUCKET):
            self.client.put_object(Bucket=self.bucket, Key=probe, Body=b"")
        with contextlib.suppress(ClientError, BotoCoreError):
            self.client.delete_object(Bucket=self.bucket, Key=probe)

    def check_folders(self, folders: Iterable[str]) -> None:
        """S3 has no folders, so none is of the wrong type: one probe object written and
        removed under the folders' common prefix (a bucket policy may grant some prefixes
        only), whatever their number."""
        common = os.path.commonprefix([norm_prefix(f) for f in folders])
        probe = (
            f"{self.prefix}{common[: common.rfind('/') + 1]}{TMP_PREFIX}probe-{uuid.uuid4().hex}"
        )
        with self._errors("write", probe[len(self.prefix) :]):
            self.client.put_object(Bucket=self.bucket, Key=probe, Body=b"")
        with contextlib.suppress(ClientError, BotoCoreError):
            self.client.delete_object(Bucket=self.bucket, Key=probe)

    def list_dirs(self, prefix: str) -> builtins.list[str]:
        full = self.prefix + norm_prefix(prefix)
        names: list[str] = []
        with self._errors("list", prefix):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=full, Delimiter="/"
            )
            for page in pages:
                names.extend(
                    p["Prefix"][len(full) :].rstrip("/") for p in page.get("CommonPrefixes", ())
                )
        return sorted(n for n in names if n)

    # -- helpers --------------------------------------------------------------

    def _full(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _check_bucket_once(self) -> None:
        if self._bucket_checked:
            return
        with self._errors("check", _BUCKET):
            self.client.head_bucket(Bucket=self.bucket)
        self._bucket_checked = True

    @contextmanager
    def _errors(self, op: str, key: str, tolerate: frozenset[str] = frozenset()) -> Iterator[None]:
        """Translate botocore failures into one-line StoreErrors.

        ClientErrors whose code is in ``tolerate`` are re-raised unchanged for the
        caller to interpret. Messages never include credentials.
        """
        try:
            yield
        except ClientError as exc:
            code = _code(exc)
            if code in tolerate:
                raise
            raise self._client_error(op, key, code, exc) from exc
        except NoCredentialsError as exc:
            raise StoreError(
                f"{op} {key!r} in {self.url}: no AWS credentials found; set "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
            ) from exc
        except (ConnectTimeoutError, ReadTimeoutError) as exc:
            connect = isinstance(exc, ConnectTimeoutError)
            what = "took no connection" if connect else "did not answer"
            if FIRST_CONTACT in getattr(exc, "__notes__", ()):
                raise StoreError(
                    f"{op} {key!r} in {self.url}: {self.describe()} {what} in time; check that "
                    "the endpoint URL names a running S3 server"
                ) from exc
            tries = f"{self.max_attempts} attempt{'s' if self.max_attempts > 1 else ''}"
            raise StoreError(  # it had answered: a server that is up, and slow
                f"{op} {key!r} in {self.url}: {self.describe()} {what} in {tries} of "
                f"{self.answer_timeout_s:g} s; the server is slow or overloaded: try again "
                "(what is stored is kept)"
            ) from exc
        except EndpointConnectionError as exc:
            raise StoreError(
                f"{op} {key!r} in {self.url}: cannot reach {self.describe()}; "
                "check the endpoint URL and that the server is up"
            ) from exc
        except BotoCoreError as exc:
            raise StoreError(f"{op} {key!r} in {self.url} failed: {exc}") from exc

    def _client_error(self, op: str, key: str, code: str, exc: ClientError) -> StoreError:
        if code == "NoSuchBucket" or (key == _BUCKET and code in _MISSING_KEY_CODES):
            return StoreError(
                f"S3 bucket {self.bucket!r} does not exist ({self.describe()}): create it "
                f"(e.g. `aws s3 mb s3://{self.bucket}`) or fix the store URL"
            )
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return StoreError(
                f"{op} {key!r} in {self.url}: access denied ({code}); check the AWS "
                "credentials and the bucket policy"
            )
        message = exc.response.get("Error", {}).get("Message") or str(exc)
        return StoreError(f"{op} {key!r} in {self.url} failed: {code}: {message}")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _content_type(key: str) -> str:
    return mimetypes.guess_type(key)[0] or "application/octet-stream"


def _env_endpoint() -> str | None:
    """The endpoint botocore itself will pick from the environment, if any."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        return None
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _redact(url: str) -> str:
    """Drop user-info and query (which could hold secrets) from an endpoint URL."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
