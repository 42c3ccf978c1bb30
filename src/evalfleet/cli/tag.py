"""`evalfleet tag RUN [--add TAG ...] [--remove TAG ...] [--note TEXT | --clear-note]`: label a
stored run; with no change asked, print its tags and note."""

from __future__ import annotations

import argparse

from evalfleet.cli.options import add_store_options, store_from


def add_commands(sub: argparse._SubParsersAction) -> None:
    tag = sub.add_parser(
        "tag",
        help="add or remove a run's tags and set its note (no flags: print them)",
        description="Tags and a note kept in the run's folder ({run}/tags.json), apart from its "
        "records: the store index (leaderboard/runs.html, rewritten here) lists and searches "
        "them, and the run report shows them from its next `evalfleet report RUN` (at once when "
        "opened through `evalfleet view`, which also edits them in the page).",
    )
    tag.add_argument("run_id")
    tag.add_argument("--add", nargs="+", default=[], metavar="TAG", help="tags to add")
    tag.add_argument("--remove", nargs="+", default=[], metavar="TAG", help="tags to remove")
    note = tag.add_mutually_exclusive_group()
    note.add_argument("--note", metavar="TEXT", help="the run's note (at most 2,000 characters)")
    note.add_argument("--clear-note", action="store_true", help="remove the run's note")
    add_store_options(tag)
    tag.set_defaults(func=cmd_tag)


def cmd_tag(args: argparse.Namespace) -> int:
    from evalfleet.storage.tags import change_tags

    store = store_from(args)
    note = "" if args.clear_note else args.note
    changing = bool(args.add or args.remove or note is not None)
    labels = change_tags(store, args.run_id, args.add, args.remove, note)
    print(f"run {args.run_id}")
    print(f"tags: {', '.join(labels.tags) or 'none'}")
    print(f"note: {labels.note or 'none'}")
    if changing:
        from evalfleet.reports.store_index import write_index

        print(f"index: {write_index(store)}")
    return 0
