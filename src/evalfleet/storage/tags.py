"""A run's tags and note, `{run}/tags.json`: `{"tags": [...], "note": "..."}`, kept apart from
the manifest and the records (which a run writes and a resume checks) so that labelling a run
never touches what it measured. Written whole with `Store.put` (atomic on disk and on S3)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

from evalfleet.core.types import ConfigError
from evalfleet.storage.base import Store
from evalfleet.storage.layout import manifest_key

MAX_TAG = 64
MAX_NOTE = 2000


class RunTags(NamedTuple):
    tags: tuple[str, ...] = ()
    note: str = ""


def tags_key(run_id: str) -> str:
    return f"{run_id}/tags.json"


def read_tags(store: Store, run_id: str) -> RunTags:
    """The run's tags and note; none when the file is absent or does not read (a label is
    never a reason for a report or an index to fail)."""
    data = store.get(tags_key(run_id))
    if data is None:
        return RunTags()
    try:
        doc = json.loads(data)
        tags = tuple(str(tag) for tag in doc.get("tags", []))
        return RunTags(tags, str(doc.get("note") or ""))
    except (ValueError, AttributeError, TypeError):
        return RunTags()


def check_tag(tag: str) -> str:
    if not tag.strip():
        raise ConfigError("a tag is empty: give a word such as `baseline`")
    if any(c.isspace() for c in tag):
        raise ConfigError(f"tag {tag!r} holds a space or a newline: join its words with - or _")
    if len(tag) > MAX_TAG:
        raise ConfigError(f"tag {tag[:20]!r}... is {len(tag)} characters: keep it to {MAX_TAG}")
    return tag


def check_note(note: str) -> str:
    if len(note) > MAX_NOTE:
        raise ConfigError(
            f"the note is {len(note)} characters: keep it to {MAX_NOTE} (a longer text belongs "
            "in a file the note names)"
        )
    return note


def change_tags(
    store: Store,
    run_id: str,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    note: str | None = None,
) -> RunTags:
    """Add and remove tags and set (`note`, "" clears it) the note of a stored run; every
    argument is checked before anything is written. The new tags and note."""
    add, remove = [check_tag(t) for t in add], [check_tag(t) for t in remove]
    if note is not None:
        check_note(note)
    if not store.exists(manifest_key(run_id)):
        raise ConfigError(f"no run {run_id!r} in {store.describe()}: `evalfleet runs` lists them")
    old = read_tags(store, run_id)
    tags = [t for t in old.tags if t not in remove]
    tags += [t for t in dict.fromkeys(add) if t not in tags]
    new = RunTags(tuple(tags), old.note if note is None else note)
    if new != old:
        doc = {"tags": list(new.tags), "note": new.note}
        store.put(tags_key(run_id), (json.dumps(doc, indent=1) + "\n").encode())
    return new
