"""Which store, and the Store object for it: `store_url` resolves the store every command,
flow and deployment uses; `open_store` opens it once per process."""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from evalfleet.core.settings import FSYNC, STORE
from evalfleet.storage.base import Store, StoreError
from evalfleet.storage.local import LocalStore

if TYPE_CHECKING:
    from evalfleet.storage.s3 import S3Store

DEFAULT_STORE_URL = "./runs"
STORE_ENV = STORE.name  # set by `evalfleet up --store` for the deployments it serves
_FORMS = "use a directory path, file:///absolute/path or s3://bucket/prefix"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def store_url(given: str | None = None) -> str:
    """The store to use: `given` (``--store``, a flow parameter), else ``$EVALFLEET_STORE``,
    else ``./runs``. A local path is made absolute: another process (a flow run, a Ray
    worker) started elsewhere must find the same directory."""
    url = (given or "").strip() or STORE.get() or DEFAULT_STORE_URL
    if _SCHEME.match(url) or re.match(r"^(s3|file):", url, re.IGNORECASE):
        return url
    return os.path.abspath(os.path.expanduser(url))


_opened: dict[tuple[str, str | None], Store] = {}
_opening = threading.Lock()


def open_store(url: str | None = None, *, s3_endpoint_url: str | None = None) -> Store:
    """The Store at `url` (None: `store_url()`), opened once per process.

    ``s3://bucket/prefix`` -> S3Store; a path or ``file:///abs/path`` -> LocalStore.
    ``s3_endpoint_url`` (e.g. ``http://127.0.0.1:9000`` for MinIO) applies to S3 URLs
    only; None or '' means botocore's own resolution (``AWS_ENDPOINT_URL_S3``, ...).
    """
    if url is None:
        url = store_url()
    elif isinstance(url, str) and url.strip() and not _SCHEME.match(url.strip()):
        url = store_url(url)  # a local path: the same directory whatever the spelling
    endpoint = (s3_endpoint_url or "").strip() or None
    with _opening:
        store = _opened.get((url, endpoint))
        if store is None:
            store = _opened[(url, endpoint)] = _open(url, endpoint)
    return store


def _open(url: str, s3_endpoint_url: str | None) -> Store:
    text = url.strip() if isinstance(url, str) else ""
    if not text:
        raise StoreError(f"empty store URL: {_FORMS}")
    match = _SCHEME.match(text)
    if match is None:
        if re.match(r"^(s3|file):", text, re.IGNORECASE):
            raise StoreError(f"malformed store URL {_show(text)}: {_FORMS}")
        return LocalStore(text, fsync=_fsync())
    scheme = match.group(1).lower()
    if scheme == "file":
        return _open_file(text)
    if scheme == "s3":
        return _open_s3(text, s3_endpoint_url)
    raise StoreError(f"unsupported store URL scheme {scheme!r} in {_show(text)}: {_FORMS}")


def _open_file(text: str) -> LocalStore:
    parts = urlsplit(text)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise StoreError(
            f"bad file URL {_show(text)}: write file:///absolute/path (three slashes) "
            "or a plain directory path"
        )
    if parts.query or parts.fragment:
        raise StoreError(f"bad file URL {_show(text)}: remove the '?…'/'#…' part")
    return LocalStore(unquote(parts.path), fsync=_fsync())


def _fsync() -> bool:
    """EVALFLEET_FSYNC=1: local writes are flushed to disk before they count (see
    `LocalStore`); read where the store is opened, so set it where the workers run too."""
    return FSYNC.get()


def _open_s3(text: str, endpoint_url: str | None) -> S3Store:
    endpoint_url = (endpoint_url or "").strip() or None
    parts = urlsplit(text)
    if "@" in parts.netloc or parts.port is not None:
        raise StoreError(
            f"bad S3 URL {_show(text)}: write s3://bucket/prefix; credentials come from the "
            "AWS environment/profile and the endpoint from --s3-endpoint-url"
        )
    bucket = parts.netloc
    if not bucket:
        raise StoreError(f"bad S3 URL {_show(text)}: no bucket name; write s3://bucket/prefix")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise StoreError(
            f"bad S3 URL {_show(text)}: {bucket!r} is not a valid bucket name "
            "(3-63 characters: lowercase letters, digits, '.', '-')"
        )
    if parts.query or parts.fragment:
        raise StoreError(f"bad S3 URL {_show(text)}: remove the '?…'/'#…' part")
    prefix = parts.path.strip("/")
    if prefix and any(seg in ("", ".", "..") for seg in prefix.split("/")):
        raise StoreError(f"bad S3 URL {_show(text)}: the prefix has an empty, '.' or '..' segment")
    if endpoint_url:
        endpoint = urlsplit(endpoint_url)
        if endpoint.scheme not in ("http", "https") or not endpoint.hostname:
            raise StoreError(
                f"bad S3 endpoint URL {_show(endpoint_url)}: write http(s)://host[:port], "
                "e.g. http://127.0.0.1:9000"
            )

    from evalfleet.storage.s3 import S3Store  # deferred: boto3 takes ~0.5 s to import

    return S3Store(bucket, prefix, endpoint_url=endpoint_url)


def _show(text: str) -> str:
    """Quote a URL for an error message, hiding any user-info (possible secrets)."""
    return repr(re.sub(r"(://)[^/@]*@", r"\1***@", text))
