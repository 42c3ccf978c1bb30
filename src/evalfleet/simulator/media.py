"""Validation of inline media (base64 and data URLs) in requests."""

from __future__ import annotations

import binascii

from evalfleet.simulator.protocol import BadRequest

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def decode_base64(data: object, param: str, *, urlsafe: bool = False) -> bytes:
    """Decode strict base64 or raise BadRequest naming the offending field.

    ``urlsafe`` also accepts the URL-safe alphabet, which google-genai sends (proto JSON
    accepts both).
    """
    if not isinstance(data, str) or not data:
        raise BadRequest(f"{param}: expected a non-empty base64 string", param)
    if urlsafe and ("-" in data or "_" in data):
        data = data.replace("-", "+").replace("_", "/")
    if urlsafe and len(data) % 4:
        data += "=" * (-len(data) % 4)
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{param}: invalid base64 data", param) from None
    if not raw:
        raise BadRequest(f"{param}: empty media data", param)
    return raw


def check_data_url(url: object, param: str) -> str | None:
    """Validate a ``data:<mime>;base64,...`` URL; return its media type (None for http URLs)."""
    if not isinstance(url, str) or not url:
        raise BadRequest(f"{param}: expected a URL string", param)
    if not url.startswith("data:"):
        if url.startswith(("http://", "https://")):
            return None
        raise BadRequest(f"{param}: expected a data URL or an http(s) URL", param)
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        raise BadRequest(f"{param}: expected a base64 data URL", param)
    decode_base64(payload, param)
    return header[5 : -len(";base64")]


def sniff_image_type(raw: bytes) -> str | None:
    for magic, media_type in _MAGIC:
        if raw.startswith(magic):
            return media_type
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None
