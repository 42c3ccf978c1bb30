"""`evalfleet tag RUN [--add TAG ...] [--remove TAG ...] [--note TEXT | --clear-note]
[--set KEY=VALUE ...] [--unset KEY ...]`: label a stored run; with no change asked, print its
tags, note and metadata."""

from __future__ import annotations

import argparse
import sys

from evalfleet.cli.options import add_store_options, store_from
from evalfleet.core.types import ConfigError


def add_commands(sub: argparse._SubParsersAction) -> None:
    tag = sub.add_parser(
        "tag",
        help="add or remove a run's tags, set its note and metadata (no flags: print them)",
        description="Tags, a note and key=value metadata kept in the run's folder "
        "({run}/tags.json), apart from its records: the store index (leaderboard/runs.html, "
        "rewritten here) lists and searches them, the run report shows them from its next "
        "`evalfleet report RUN` (at once when opened through `evalfleet view`, which also edits "
        "them in the page), and `evalfleet export --format inspect` carries them into the logs.",
    )
    tag.add_argument("run_id")
    tag.add_argument("--add", nargs="+", default=[], metavar="TAG", help="tags to add")
    tag.add_argument("--remove", nargs="+", default=[], metavar="TAG", help="tags to remove")
    note = tag.add_mutually_exclusive_group()
    note.add_argument("--note", metavar="TEXT", help="the run's note (at most 2,000 characters)")
    note.add_argument("--clear-note", action="store_true", help="remove the run's note")
    tag.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="metadata pairs to set: KEY is 1 to 64 of A-Z a-z 0-9 _ . -, VALUE one line of at "
        "most 500 characters (split on the first =); at most 50 keys a run",
    )
    tag.add_argument("--unset", nargs="+", default=[], metavar="KEY", help="metadata to remove")
    add_store_options(tag)
    tag.set_defaults(func=cmd_tag)


def parse_pairs(given: list[str]) -> dict[str, str]:
    """`KEY=VALUE` words as a dict, split on the first `=` (a value may hold more)."""
    pairs: dict[str, str] = {}
    for word in given:
        key, equals, value = word.partition("=")
        if not equals:
            raise ConfigError(f"--set {word!r} has no =: give KEY=VALUE, such as gpu=a100")
        if key in pairs:
            raise ConfigError(f"--set gives {key!r} twice: give each key once")
        pairs[key] = value
    return pairs


def cmd_tag(args: argparse.Namespace) -> int:
    from evalfleet.storage.tags import change_tags, read_tags

    pairs = parse_pairs(args.set)
    store = store_from(args)
    note = "" if args.clear_note else args.note
    changing = bool(args.add or args.remove or note is not None or pairs or args.unset)
    old = read_tags(store, args.run_id, strict=True)
    labels = change_tags(store, args.run_id, args.add, args.remove, note, pairs, args.unset)
    # A typo removes nothing: say so (on stderr, exit 0: removing is idempotent).
    for absent in dict.fromkeys(t for t in args.remove if t not in old.tags):
        print(f"note: run {args.run_id} had no tag {absent!r}: nothing removed", file=sys.stderr)
    keys = dict(old.metadata)
    for absent in dict.fromkeys(k for k in args.unset if k not in keys):
        print(f"note: run {args.run_id} had no metadata {absent!r}: nothing unset", file=sys.stderr)
    print(f"run {args.run_id}")
    print(f"tags: {', '.join(labels.tags) or 'none'}")
    print(f"note: {labels.note or 'none'}")
    print("metadata:" + ("" if labels.metadata else " none"))
    for key, value in labels.metadata:
        print(f"  {key}={value}")
    if changing:
        from evalfleet.reports.store_index import write_index

        print(f"index: {write_index(store)}")
    return 0
