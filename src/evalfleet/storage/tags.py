"""A run's tags, note and metadata, `{run}/tags.json`:
`{"tags": [...], "note": "...", "metadata": {"key": "value", ...}}` (metadata only when a run has
some, so older files, which have none, read as they are), kept apart from
the manifest and the records (which a run writes and a resume checks) so that labelling a run
never touches what it measured. Written whole with `Store.put` (atomic on disk and on S3)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from evalfleet.core.types import ConfigError
from evalfleet.storage.base import Store
from evalfleet.storage.layout import manifest_key

MAX_TAG = 64
MAX_NOTE = 2000
MAX_VALUE = 500
MAX_KEYS = 50
KEY_RULE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
NOTE_KEY = "note"  # the note's name in an inspect export's metadata, so no pair may take it


class RunTags(NamedTuple):
    tags: tuple[str, ...] = ()
    note: str = ""
    metadata: tuple[tuple[str, str], ...] = ()  # (key, value) pairs in the order first set


def tags_key(run_id: str) -> str:
    return f"{run_id}/tags.json"


def read_tags(store: Store, run_id: str, *, strict: bool = False) -> RunTags:
    """The run's tags and note; none when the file is absent. A file that does not read is
    none to a report or an index (a label is never a reason for them to fail); `strict`, it
    is an error naming the file, so that a change never writes over labels it could not
    read."""
    key = tags_key(run_id)
    data = store.get(key)
    if data is None:
        return RunTags()
    try:
        doc = json.loads(data)
        tags = tuple(str(tag) for tag in doc.get("tags", []))
        pairs = tuple((str(k), str(v)) for k, v in dict(doc.get("metadata") or {}).items())
        return RunTags(tags, str(doc.get("note") or ""), pairs)
    except (ValueError, AttributeError, TypeError) as exc:
        if not strict:
            return RunTags()
        reason = " ".join(str(exc).split())[:120]
        raise ConfigError(
            f"{store.url.rstrip('/')}/{key} is damaged ({reason}), so its labels were left as "
            "they are: mend the file by hand, or move it aside to label the run afresh"
        ) from None


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


def check_meta_key(key: str) -> str:
    if not KEY_RULE.fullmatch(key):
        shown = f"{key[:20]!r}..." if len(key) > 20 else repr(key)
        raise ConfigError(
            f"metadata key {shown} is not 1 to 64 letters, digits, _ . or -: "
            "give a name such as `gpu` or `commit`"
        )
    if key == NOTE_KEY:
        raise ConfigError("metadata key 'note' is the run's note: set it with --note")
    return key


def check_value(key: str, value: str) -> str:
    if not value:
        raise ConfigError(f"metadata {key!r} has an empty value: give one, or unset {key!r}")
    if "\n" in value or "\r" in value:
        raise ConfigError(f"metadata {key!r} holds a newline: keep a value to one line")
    if len(value) > MAX_VALUE:
        raise ConfigError(
            f"metadata {key!r} is {len(value)} characters: keep a value to {MAX_VALUE}"
        )
    return value


def check_metadata(set_: Mapping[str, str], unset: Iterable[str]) -> list[str]:
    """Every key and value checked (a key both set and unset refused); the keys to unset."""
    for key, value in set_.items():
        check_value(check_meta_key(key), value)
    unset = [check_meta_key(k) for k in unset]
    both = [k for k in unset if k in set_]
    if both:
        raise ConfigError(f"metadata {both[0]!r} is both set and unset: give one of the two")
    return unset


def change_tags(
    store: Store,
    run_id: str,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    note: str | None = None,
    set_: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
) -> RunTags:
    """Add and remove tags, set (`note`, "" clears it) the note and set and unset metadata pairs
    of a stored run; every argument is checked before anything is written. The new labels."""
    add, remove = [check_tag(t) for t in add], [check_tag(t) for t in remove]
    both = [t for t in add if t in remove]
    if both:  # as a metadata key both set and unset: which was meant is not ours to guess
        raise ConfigError(f"tag {both[0]!r} is both added and removed: give one of the two")
    if note is not None:
        check_note(note)
    set_ = dict(set_ or {})
    unset = check_metadata(set_, unset)
    if not store.exists(manifest_key(run_id)):
        raise ConfigError(f"no run {run_id!r} in {store.describe()}: `evalfleet runs` lists them")
    old = read_tags(store, run_id, strict=True)
    tags = [t for t in old.tags if t not in remove]
    tags += [t for t in dict.fromkeys(add) if t not in tags]
    pairs = {k: v for k, v in old.metadata if k not in unset} | set_
    if len(pairs) > MAX_KEYS:
        raise ConfigError(
            f"the run would have {len(pairs)} metadata keys: keep it to {MAX_KEYS} "
            "(unset some, or name a file that holds the rest)"
        )
    new = RunTags(tuple(tags), old.note if note is None else note, tuple(pairs.items()))
    if new != old:
        doc: dict[str, object] = {"tags": list(new.tags), "note": new.note}
        if new.metadata:
            doc["metadata"] = dict(new.metadata)
        store.put(tags_key(run_id), (json.dumps(doc, indent=1) + "\n").encode())
    return new
