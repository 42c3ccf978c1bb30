"""Media bytes helpers: sniff the media type from magic bytes, read the bytes of a dataset's
undecoded media item, downscale images like upstream."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image

# DIB header sizes a real BMP carries right after its 14-byte file header; checking one keeps
# arbitrary text that starts with "BM" from passing as a bitmap.
_BMP_DIB_SIZES = {12, 16, 40, 52, 56, 64, 108, 124}

# Formats upstream re-saves as themselves after resizing; anything else becomes PNG.
_RESAVE_AS_SOURCE = {"JPEG", "PNG", "BMP", "GIF"}


def sniff_media_type(data: bytes) -> str:
    """Return the MIME type of image or audio bytes, judged from their magic bytes only.

    Raises ValueError for empty or unrecognised bytes: a wrong MIME type sent to a provider
    fails later and less clearly.
    """
    if not data:
        raise ValueError("cannot sniff the media type of empty bytes")
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"BM") and int.from_bytes(data[14:18], "little") in _BMP_DIB_SIZES:
        return "image/bmp"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3") or _is_mp3_frame_header(head):
        return "audio/mpeg"
    raise ValueError(
        f"unrecognised media bytes (first bytes {data[:8].hex(' ')}): expected PNG, JPEG, GIF, "
        "WebP, BMP, WAV, MP3, FLAC or Ogg"
    )


def _is_mp3_frame_header(head: bytes) -> bool:
    """An MPEG audio frame header: 11 sync bits, then no reserved version/layer/rate values."""
    if len(head) < 4 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version = (head[1] >> 3) & 0b11
    layer = (head[1] >> 1) & 0b11
    bitrate = head[2] >> 4
    sample_rate = (head[2] >> 2) & 0b11
    return version != 0b01 and layer != 0b00 and bitrate != 0b1111 and sample_rate != 0b11


def stored_bytes(item: Mapping[str, Any]) -> bytes | None:
    """The bytes of an undecoded `Image` / `Audio` item (`{bytes, path}`): its bytes, else the
    file its path names; None if it has neither."""
    if item.get("bytes"):
        return bytes(item["bytes"])
    path = item.get("path")
    if path and Path(path).is_file():
        return Path(path).read_bytes()
    return None


def encoded_image(image: Image.Image) -> bytes:
    """A decoded PIL image re-encoded in its own format (PNG if unknown)."""
    out = io.BytesIO()
    image.save(out, format=image.format or "PNG")
    return out.getvalue()


def downscale_image(data: bytes, max_side: int) -> bytes:
    """Shrink an image so neither side exceeds max_side, exactly as inspect_evals ZeroBench does.

    PIL `thumbnail((max_side, max_side))`: aspect ratio kept, never upscaled (3000x2000 ->
    1024x683 for 1024). The result is always re-encoded, in the source format when it is
    JPEG/PNG/BMP/GIF and as PNG otherwise, with Pillow's default settings (so a JPEG is
    re-compressed even when its size does not change, as upstream).
    """
    if max_side < 1:
        raise ValueError(f"max_side must be >= 1, got {max_side}")
    try:
        with Image.open(io.BytesIO(data)) as img:
            source_format = img.format
            img.thumbnail((max_side, max_side))
            out = io.BytesIO()
            img.save(out, format=source_format if source_format in _RESAVE_AS_SOURCE else "PNG")
    except (OSError, Image.DecompressionBombError) as exc:
        raise ValueError(f"cannot decode image bytes for downscaling: {exc}") from exc
    return out.getvalue()
