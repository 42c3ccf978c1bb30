"""Magic-byte sniffing and the upstream-exact image downscale."""

from __future__ import annotations

import io
import struct

import pytest
from PIL import Image

from evalfleet.benchmarks.media import downscale_image, sniff_media_type


def encode(fmt: str, size: tuple[int, int] = (6, 4), mode: str = "RGB") -> bytes:
    img = Image.new(mode, size, (200, 30, 30) if mode == "RGB" else 3)
    out = io.BytesIO()
    img.save(out, format=fmt)
    return out.getvalue()


def wav_header(data_len: int = 4) -> bytes:
    """A minimal 8 kHz mono 16-bit PCM WAV, written by hand."""
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + fmt + b"data" + struct.pack("<I", data_len) + b"\x00" * data_len
    return b"RIFF" + struct.pack("<I", len(body)) + body


def size_and_format(data: bytes) -> tuple[tuple[int, int], str | None]:
    with Image.open(io.BytesIO(data)) as img:
        return img.size, img.format


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("PNG", "image/png"),
        ("JPEG", "image/jpeg"),
        ("GIF", "image/gif"),
        ("WEBP", "image/webp"),
        ("BMP", "image/bmp"),
    ],
)
def test_sniff_images_made_by_pillow(fmt: str, expected: str) -> None:
    assert sniff_media_type(encode(fmt)) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (wav_header(), "audio/wav"),
        (b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\x00" * 8, "audio/mpeg"),
        (b"\xff\xfb\x90\x64" + b"\x00" * 8, "audio/mpeg"),  # MPEG-1 layer III, 128 kbit/s
        (b"\xff\xf3\x48\xc4" + b"\x00" * 8, "audio/mpeg"),  # MPEG-2 layer III
        (b"fLaC\x00\x00\x00\x22" + b"\x00" * 8, "audio/flac"),
        (b"OggS\x00\x02" + b"\x00" * 10, "audio/ogg"),
    ],
)
def test_sniff_audio(data: bytes, expected: str) -> None:
    assert sniff_media_type(data) == expected


@pytest.mark.parametrize(
    "data",
    [
        b"hello world, not media",
        b"BM this is text, not a bitmap",
        b"\xff\xf1\x50\x80\x00\x1f\xfc",  # AAC ADTS: sync bits but layer 00
        b"\xff\xfb\xf0\x64",  # bad bitrate index 1111
        b"RIFF\x04\x00\x00\x00AVI ",
    ],
)
def test_sniff_rejects_unknown_bytes(data: bytes) -> None:
    with pytest.raises(ValueError, match="unrecognised media bytes"):
        sniff_media_type(data)


def test_sniff_rejects_empty_bytes() -> None:
    with pytest.raises(ValueError, match="empty bytes"):
        sniff_media_type(b"")


def test_downscale_landscape_png_matches_upstream_vector() -> None:
    out = downscale_image(encode("PNG", (3000, 2000)), 1024)
    assert size_and_format(out) == ((1024, 683), "PNG")


def test_downscale_portrait_jpeg_matches_upstream_vector() -> None:
    out = downscale_image(encode("JPEG", (500, 4000)), 1024)
    assert size_and_format(out) == ((128, 1024), "JPEG")
    assert sniff_media_type(out) == "image/jpeg"


def test_downscale_never_upscales_but_still_resaves() -> None:
    source = encode("PNG", (100, 50))
    assert size_and_format(downscale_image(source, 1024)) == ((100, 50), "PNG")


def test_downscale_bytes_equal_a_plain_pillow_thumbnail() -> None:
    source = encode("PNG", (300, 90))
    with Image.open(io.BytesIO(source)) as img:
        img.thumbnail((64, 64))
        expected = io.BytesIO()
        img.save(expected, format="PNG")
    assert downscale_image(source, 64) == expected.getvalue()


@pytest.mark.parametrize(
    ("fmt", "mode", "out_format"),
    [("BMP", "RGB", "BMP"), ("GIF", "P", "GIF"), ("WEBP", "RGB", "PNG")],
)
def test_downscale_resave_format(fmt: str, mode: str, out_format: str) -> None:
    out = downscale_image(encode(fmt, (40, 20), mode), 10)
    assert size_and_format(out) == ((10, 5), out_format)


def test_downscale_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="max_side must be >= 1"):
        downscale_image(encode("PNG"), 0)
    with pytest.raises(ValueError, match="cannot decode image bytes"):
        downscale_image(b"not an image", 64)
