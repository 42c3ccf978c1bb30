"""`evalfleet view`: a store's pages (the store index, the leaderboard, each run's report and
the folders beside it) served on 127.0.0.1 from the Store interface, so a local directory and an
S3 prefix read alike, with one JSON route that edits a run's tags, note and metadata
(`storage.tags.change_tags`, the code `evalfleet tag` runs) and rewrites the store index.

Each HTML page it serves gets a `<meta name='evalfleet-view'>` and the script
`assets/tags_edit.js`, which turns the page's tags into an editor reading the current tags from
`/api/runs/<run>/tags`; the files in the store are never changed by a GET, so a page opened from
disk stays exactly as it was written.

Why a token: any web page open in the user's browser may send requests to 127.0.0.1 (a form
or a `fetch` to another origin needs nobody's permission), so a bare write route would let any
site rewrite tags. A write needs the random token printed in the URL, sent in the
`X-Evalfleet-Token` header: another site cannot know it, and cannot add that header without a
CORS preflight, which this server never grants. Requests whose `Host` is not 127.0.0.1 or
localhost are refused, so a name rebound to 127.0.0.1 (DNS rebinding) reads nothing."""

from __future__ import annotations

import hmac
import json
import mimetypes
import os
import secrets
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from evalfleet.core.escape import html_text
from evalfleet.core.types import ConfigError
from evalfleet.engine.run.request import check_run_id
from evalfleet.reports.store_index import INDEX_KEY, index_rows, render_index, write_index
from evalfleet.storage.base import Store, StoreError
from evalfleet.storage.keys import check_key
from evalfleet.storage.local import LocalStore
from evalfleet.storage.tags import RunTags, change_tags

TOKEN_HEADER = "X-Evalfleet-Token"
EDITOR = Path(__file__).resolve().parent / "assets" / "tags_edit.js"
MAX_BODY = 64 * 1024
FIELDS = {"add", "remove", "note", "set", "unset"}


class ViewServer(ThreadingHTTPServer):
    """The server of one store; `token` authorises writes."""

    daemon_threads = True

    def __init__(self, store: Store, port: int = 0, token: str | None = None) -> None:
        self.store = store
        self.token = token or secrets.token_urlsafe(24)
        self.writing = threading.Lock()  # a change and the index it rewrites, one at a time
        try:
            super().__init__(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise ConfigError(
                f"port {port} on 127.0.0.1 is not free ({exc.strerror}): give another with "
                "--port, or --port 0 for any free one"
            ) from exc

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that went away mid-answer is no error; anything else is one line on
        stderr, and the server goes on."""
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, ConnectionError):
            print(f"evalfleet view: a request failed: {_one_line(error)}", file=sys.stderr)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"


def check_store(store: Store) -> None:
    """One line unless the store can be served: a local folder that exists, or an S3 prefix
    that lists."""
    if isinstance(store, LocalStore) and not os.path.isdir(store.root):
        raise ConfigError(
            f"no store at {store.root}: give the folder of your runs with --store "
            "(`evalfleet runs --store ...` lists what one holds)"
        )
    store.list_dirs("")  # S3: a bucket that is missing or denied raises a one-line StoreError


def store_key(path: str) -> str:
    """The store key a URL path names (decoded once, as a browser does for a file), or a
    ConfigError for one that could leave the store."""
    key = unquote(path).lstrip("/")
    if key.endswith("/") or not key:
        key += "index.html"
    if any(seg in ("", ".", "..") for seg in key.split("/")):
        raise ConfigError(f"bad path {path!r}: no empty, '.' or '..' part")
    try:
        return check_key(key)
    except StoreError as exc:
        raise ConfigError(f"bad path {path!r}: not a file of the store") from exc


def read_file(store: Store, key: str) -> bytes | None:
    """The bytes of a store file; None when absent, or when a local link leads out of it. The
    store index is made in memory when the store has none yet (nothing is written)."""
    if isinstance(store, LocalStore):
        root = os.path.realpath(store.root)
        if not os.path.realpath(os.path.join(root, key)).startswith(root + os.sep):
            return None
    data = store.get(key)
    if data is None and key == INDEX_KEY:
        data = render_index(index_rows(store), store.describe()).encode()
    return data


def with_editor(page: bytes, run_id: str) -> bytes:
    """An HTML page with the view's marker first in its head and the tag editor before its
    end. The head's opening tag is found from the start and `</body>` from the end: nothing
    before the one or after the other can be a script's text that spells them."""
    text = page.decode("utf-8", errors="replace")
    lower = text.lower()
    meta = f"<meta name='evalfleet-view' data-run='{html_text(run_id)}'>"
    script = f"<script>{EDITOR.read_text()}</script>"
    head, body = lower.find("<head"), lower.rfind("</body>")
    head = lower.find(">", head) + 1 if head >= 0 else 0
    if not head or body < head:
        return page
    return (text[:head] + meta + text[head:body] + script + text[body:]).encode()


def run_of(key: str) -> str:
    """The run a report page belongs to (`{run}/results/...`), "" for the store's own pages."""
    parts = key.split("/")
    return parts[0] if len(parts) > 2 and parts[1] == "results" else ""


def parse_change(body: bytes) -> dict[str, Any]:
    """`{"add": [...], "remove": [...], "note": "..." | null, "set": {k: v}, "unset": [k]}`,
    checked for its shape (the tags, note and pairs themselves are checked by `change_tags`)."""
    try:
        doc = json.loads(body or b"{}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the request body is not JSON ({exc.msg})") from exc
    except ValueError as exc:  # bytes that are not UTF-8
        raise ConfigError(f"the request body is not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise ConfigError('the request body must be an object: {"add": [...], "remove": [...]}')
    unknown = sorted(set(doc) - FIELDS)
    if unknown:
        raise ConfigError(f"unknown field {unknown[0]!r}: give add, remove, note, set or unset")
    for name, what in (("add", "tags"), ("remove", "tags"), ("unset", "metadata keys")):
        value = doc.get(name, [])
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise ConfigError(f"{name} must be a list of {what} (strings)")
    pairs = doc.get("set", {})
    if not isinstance(pairs, dict) or not all(isinstance(v, str) for v in pairs.values()):
        raise ConfigError('set must be an object of metadata, {"key": "value"} (strings)')
    note = doc.get("note")
    if note is not None and not isinstance(note, str):
        raise ConfigError('note must be a string ("" clears it) or null (keeps it)')
    return {
        "add": doc.get("add", []),
        "remove": doc.get("remove", []),
        "note": note,
        "set": pairs,
        "unset": doc.get("unset", []),
    }


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "evalfleet-view"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: the terminal keeps the one line the command printed."""

    def do_GET(self) -> None:  # noqa: N802
        if not self._local_host():
            return
        parts = urlsplit(self.path)
        if parts.path == "/":
            where = "/" + INDEX_KEY + (f"?{parts.query}" if parts.query else "")
            self._send(HTTPStatus.FOUND, b"", "text/plain", {"Location": where})
            return
        run = self._tags_route(parts.path)
        if run is not None:
            self._answer(lambda: _labels(run, change_tags(self.server.store, check_run_id(run))))
            return
        try:
            key = store_key(parts.path)
            data = read_file(self.server.store, key)
        except (ConfigError, StoreError) as exc:
            self._plain(HTTPStatus.BAD_REQUEST, str(exc))
            return
        if data is None:
            self._plain(
                HTTPStatus.NOT_FOUND, f"not found: {unquote(parts.path)} is not in the store"
            )
            return
        kind = mimetypes.guess_type(key)[0] or "application/octet-stream"
        if kind == "text/html":
            data, kind = with_editor(data, run_of(key)), "text/html; charset=utf-8"
        self._send(HTTPStatus.OK, data, kind)

    def do_POST(self) -> None:  # noqa: N802
        if not self._local_host():
            return
        run = self._tags_route(urlsplit(self.path).path)
        if run is None:
            self._plain(HTTPStatus.NOT_FOUND, "not found: only /api/runs/<run>/tags takes a POST")
            return
        given = self.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.server.token.encode()):
            self._json(
                HTTPStatus.FORBIDDEN,
                {"error": "no or wrong token: open the URL `evalfleet view` printed"},
            )
            return
        length = self.headers.get("Content-Length") or "0"
        if not length.isdigit() or int(length) > MAX_BODY:
            error = f"Content-Length {length!r}: give the body's size, at most {MAX_BODY} bytes"
            self._json(HTTPStatus.BAD_REQUEST, {"error": error})
            return
        size = int(length)
        body = self.rfile.read(size)
        self._answer(lambda: self._change(run, body))

    def _change(self, run: str, body: bytes) -> dict[str, Any]:
        change = parse_change(body)
        store = self.server.store
        with self.server.writing:
            labels = change_tags(
                store,
                check_run_id(run),
                change["add"],
                change["remove"],
                change["note"],
                change["set"],
                change["unset"],
            )
            write_index(store)
        return _labels(run, labels)

    def _tags_route(self, path: str) -> str | None:
        parts = path.split("/")
        if len(parts) == 5 and parts[:3] == ["", "api", "runs"] and parts[4] == "tags":
            return unquote(parts[3])
        return None

    def _answer(self, work: Any) -> None:
        try:
            self._json(HTTPStatus.OK, work())
        except ConfigError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": _one_line(exc)})
        except StoreError as exc:
            self._json(HTTPStatus.BAD_GATEWAY, {"error": _one_line(exc)})

    def _local_host(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host in ("127.0.0.1", "localhost"):
            return True
        self._plain(HTTPStatus.FORBIDDEN, "forbidden: open the page at 127.0.0.1")
        return False

    def _plain(self, status: HTTPStatus, line: str) -> None:
        self._send(status, (line + "\n").encode(), "text/plain; charset=utf-8")

    def _json(self, status: HTTPStatus, doc: dict[str, Any]) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json")

    def _send(
        self, status: HTTPStatus, data: bytes, kind: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")  # a reload shows what the store holds
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _labels(run: str, labels: RunTags) -> dict[str, Any]:
    return {
        "run": run,
        "tags": list(labels.tags),
        "note": labels.note,
        "metadata": dict(labels.metadata),
    }


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
