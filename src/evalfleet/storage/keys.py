"""Store keys: '/'-separated relative paths, identical on every backend.

A key such as ``run1/completions/openai%2Fgpt-4o/zerobench/7/0.json`` maps to a file
under a local root or to an object under an S3 prefix. Keys are validated so that no
key can escape a local root, collide with a temporary file, or mean different things
on different backends.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from evalfleet.storage.base import StoreError

TMP_PREFIX = ".tmp-"
"""Name prefix of in-flight temporary files; never a valid key segment, never listed."""
SEGMENT_BYTES = 255
"""The longest key segment: a file name on ext4, XFS, btrfs, APFS."""
KEY_BYTES = 1024
"""The longest key, the store's prefix included: an S3 object key."""

_FORBIDDEN_CHARS = ("\\", "\x00")


def safe_segment(name: str) -> str:
    """Encode any string (e.g. the model id ``openai/gpt-4o``) as one key segment.

    Percent-encodes every reserved character, including '/', and a leading '.', so
    the result is never empty, '.', '..' or a hidden/temporary file name.
    """
    if not name:
        raise ValueError("cannot encode an empty name as a key segment")
    seg = quote(name, safe="")
    return "%2E" + seg[1:] if seg.startswith(".") else seg


def unsafe_segment(seg: str) -> str:
    """Invert :func:`safe_segment`."""
    return unquote(seg)


def check_key(key: str) -> str:
    """Return ``key`` unchanged if it is a valid key, else raise StoreError."""
    if _plain(key):
        return key
    if not isinstance(key, str) or not key:
        raise StoreError(f"invalid store key {key!r}: keys are non-empty '/'-separated paths")
    for seg in key.split("/"):
        _check_segment(seg, key)
    return key


def oversize(key: str, prefix: str = "") -> tuple[str, int, int] | None:
    """What of `key` (under the store's `prefix`) is too long to be stored on every backend:
    (its longest segment, or "" for the whole key; its bytes; the limit), or None."""
    segment = max(key.split("/"), key=lambda s: len(s.encode()))
    if len(segment.encode()) > SEGMENT_BYTES:
        return segment, len(segment.encode()), SEGMENT_BYTES
    size = len(prefix.encode()) + len(key.encode())
    return ("", size, KEY_BYTES) if size > KEY_BYTES else None


def norm_prefix(prefix: str) -> str:
    """Normalise a listing prefix to directory form: '' (root) or 'a/b/'.

    Prefixes name directories, so ``run1`` and ``run1/`` both mean the keys under
    ``run1/`` and never those under ``run10/``.
    """
    stripped = prefix.rstrip("/")
    if not stripped:
        if prefix not in ("", "/"):
            raise StoreError(f"invalid store prefix {prefix!r}")
        return ""
    return check_key(stripped) + "/"


def join_key(*parts: str | int) -> str:
    """Join key parts with '/'. Parts may hold several segments ('run1/completions').

    Integers (sample ids, epochs) are formatted with ``str``. Empty parts are an error
    rather than silently dropped, since they usually mean a missing model or run id.
    """
    if not parts:
        raise ValueError("join_key needs at least one part")
    texts = [str(p) for p in parts]
    if any(not t.strip("/") for t in texts):
        raise ValueError(f"join_key got an empty part in {texts!r}")
    return check_key("/".join(t.strip("/") for t in texts))


def _plain(key: object) -> bool:
    """A key with no segment `_check_segment` could refuse: none empty or starting with '.',
    no backslash or NUL. A few substring searches, not a loop over its segments (a resume
    reads back every stored record); a key that fails it is checked segment by segment."""
    return (
        isinstance(key, str)
        and bool(key)
        and not key.startswith(("/", "."))
        and not key.endswith("/")
        and "//" not in key
        and "/." not in key
        and "\\" not in key
        and "\x00" not in key
    )


def _check_segment(seg: str, key: str) -> None:
    if seg in ("", ".", ".."):
        raise StoreError(
            f"invalid store key {key!r}: empty, '.' or '..' segment "
            "(use storage.safe_segment for free-form names)"
        )
    if seg.startswith(TMP_PREFIX) or any(c in seg for c in _FORBIDDEN_CHARS):
        raise StoreError(
            f"invalid store key {key!r}: segment {seg!r} is reserved or has a "
            "backslash/NUL (use storage.safe_segment for free-form names)"
        )
