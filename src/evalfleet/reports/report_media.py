"""The media a run report embeds: each sample's images and audio, once per sample, from the
run's dataset when it can still be read at the revision the run asked (a run keeps no media of
its own).

The page shows an image as a tile of `THUMB_SIDE` pixels that opens full size. Within the
media budget every image gets a tile; then, in dataset order, an image's tile is replaced by the
full image while the budget allows (the full image is then the tile too: no image is embedded
twice), and audio is embedded while it fits. What the budget leaves out is said on the page.
A paged report (`paged_media`) keeps its media in files beside the page, read as a sample is
shown: there the budget counts the full images and audio only.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalfleet.engine.store.stored import StoredRun

THUMB_SIDE = 128  # the tile's side on the page, in CSS pixels
# A sample's parts as sent, without their bytes: (kind, text, media type, bytes) per part.
Layout = list[tuple[str, str | None, str | None, int]]
THUMB_QUALITY = 60


@dataclass
class _Part:
    sample: int
    kind: str  # image | audio
    media_type: str | None
    data: bytes
    thumb: str = ""
    full: str = ""


def embedded_media(
    run: StoredRun,
    sample_keys: dict[tuple[str, str], int],
    budget_mb: float,
    layouts: dict[int, Layout] | None = None,
) -> tuple[dict[int, list[dict[str, str]]], str]:
    """sample -> its media parts ({"kind", "thumb" or "full"}), and a line saying what was
    left out and why ("" when nothing was). `layouts`, if given, gets each sample's parts
    as sent, their bytes left out (`Layout`)."""
    notes: list[str] = []
    parts = [p for _, found in _sample_parts(run, sample_keys, notes, layouts) for p in found]
    budget = budget_mb * 2**20
    for part in parts:
        if part.kind == "image":
            part.thumb = _thumbnail(part.data)
            budget -= len(part.thumb)
    tiles_only = budget < 0
    left_out = 0
    for part in parts:
        full = 4 * ((len(part.data) + 2) // 3) + len(f"data:{part.media_type};base64,")
        if full - len(part.thumb) <= budget:
            part.full = _data_uri(part.media_type, part.data)
            budget -= len(part.full) - len(part.thumb)
            part.thumb = ""
        else:
            left_out += 1
    if tiles_only:
        notes.append(
            f"the image tiles alone pass the {budget_mb:g} MB media budget: no full-size media "
            "(--media-mb)"
        )
    elif left_out:
        notes.append(
            f"{left_out} media beyond the {budget_mb:g} MB budget are shown as "
            f"{THUMB_SIDE}-pixel tiles only, audio not at all (--media-mb)"
        )
    media: dict[int, list[dict[str, str]]] = {}
    for part in parts:
        entry = {"kind": part.kind}
        if part.full:
            entry["full"] = part.full
        elif part.thumb:
            entry["thumb"] = part.thumb
        media.setdefault(part.sample, []).append(entry)
    return media, "; ".join(notes)


def paged_media(
    run: StoredRun,
    sample_keys: dict[tuple[str, str], int],
    budget_mb: float,
    write: Callable[[int, dict[int, list[dict[str, str]]]], None],
    per_file: int,
    layouts: dict[int, Layout] | None = None,
) -> str:
    """The media of a paged report, written a file of `per_file` samples at a time
    (`write(file number, sample -> parts)`): every image as a tile, then in dataset order the
    full image in its place, and audio, while the budget allows. The tiles are not counted:
    they are read from their file only as a sample is shown. Returns the line saying what
    was left out ("" when nothing was)."""
    notes: list[str] = []
    budget = budget_mb * 2**20
    left_out = 0
    files: dict[int, dict[int, list[dict[str, str]]]] = {}
    for sample, parts in _sample_parts(run, sample_keys, notes, layouts):
        entries = []
        for part in parts:
            size = 4 * ((len(part.data) + 2) // 3) + len(f"data:{part.media_type};base64,")
            if size <= budget:
                entries.append({"kind": part.kind, "full": _data_uri(part.media_type, part.data)})
                budget -= size
                continue
            left_out += 1
            tile = _thumbnail(part.data) if part.kind == "image" else ""
            entries.append({"kind": part.kind, **({"thumb": tile} if tile else {})})
        number = sample // per_file
        files.setdefault(number, {})[sample] = entries
        for done in [n for n in files if n < number]:  # the dataset's order is the plan's
            write(done, files.pop(done))
    for number in sorted(files):
        write(number, files.pop(number))
    if left_out:
        notes.append(
            f"{left_out} media beyond the {budget_mb:g} MB budget are shown as "
            f"{THUMB_SIDE}-pixel tiles only, audio not at all (--media-mb)"
        )
    return "; ".join(notes)


def _sample_parts(
    run: StoredRun,
    sample_keys: dict[tuple[str, str], int],
    notes: list[str],
    layouts: dict[int, Layout] | None = None,
) -> Iterator[tuple[int, list[_Part]]]:
    """Each sample's images and audio, sample by sample (a dataset that cannot be read, or
    changed since the run, is said in `notes`)."""
    from evalfleet.engine.prepare.reading import downscaled

    for name, data in run.data.items():
        path = run.request.dataset_path_for(name)
        try:
            loaded = data.benchmark.load(path, data.options, run.request.limit)
        except Exception as exc:  # a Hub dataset offline, a moved copy: the texts still show
            notes.append(
                f"{name}: media not shown, the dataset could not be read ({_one_line(exc)})"
            )
            continue
        if loaded.revision != data.revision:
            notes.append(f"{name}: media not shown, the dataset changed since the run ({path})")
            continue
        for sample in loaded.samples:
            where = sample_keys.get((name, sample.id))
            if where is None:
                continue
            if run.request.max_image_side is not None:
                sample = downscaled(sample, run.request.max_image_side)
            if layouts is not None:
                layouts[where] = [
                    (p.kind, p.text, p.media_type, len(p.data or b"")) for p in sample.parts
                ]
            found = [
                _Part(where, part.kind, part.media_type, part.data)
                for part in sample.parts
                if part.data is not None and part.kind in ("image", "audio")
            ]
            if found:
                yield where, found


def _thumbnail(data: bytes) -> str:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            out = io.BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=THUMB_QUALITY)
    except Exception:  # an image PIL cannot read: no tile, the full one may still show
        return ""
    return _data_uri("image/jpeg", out.getvalue())


def _data_uri(media_type: str | None, data: bytes) -> str:
    kind = media_type or "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
