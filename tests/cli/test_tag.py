"""`evalfleet tag`: a run's tags and note in `{run}/tags.json`, printed exactly, refused in one
line with nothing stored changed, and listed in the store index it rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalfleet.cli.main import main
from evalfleet.reports.store_index import INDEX_KEY
from evalfleet.storage import open_store
from evalfleet.storage.tags import RunTags, read_tags

RUN = "r1"
MANIFEST = b'{"not": "read by tag"}'


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding one run (only its manifest: `tag` reads nothing else of it)."""
    (tmp_path / "s" / RUN).mkdir(parents=True)
    (tmp_path / "s" / RUN / "manifest.json").write_bytes(MANIFEST)
    return tmp_path / "s"


def tag(store: Path, *argv: str) -> int:
    return main(["tag", RUN, "--store", str(store), *argv])


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_tags_and_a_note_are_stored_apart_and_printed(store, capsys):
    assert tag(store, "--add", "baseline", "gpu-a", "baseline", "--note", "before the fix") == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"run {RUN}",
        "tags: baseline, gpu-a",
        "note: before the fix",
        f"index: {store}/{INDEX_KEY}",
    ]
    doc = json.loads((store / RUN / "tags.json").read_text())
    assert doc == {"tags": ["baseline", "gpu-a"], "note": "before the fix"}
    assert (store / RUN / "manifest.json").read_bytes() == MANIFEST
    page = (store / INDEX_KEY).read_text()
    assert '<span class="tag">baseline</span>, <span class="tag">gpu-a</span>' in page
    assert '<div class="note">before the fix</div>' in page


def test_no_flags_print_and_change_nothing(store, capsys):
    assert tag(store) == 0
    assert capsys.readouterr().out == f"run {RUN}\ntags: none\nnote: none\n"
    assert snapshot(store) == {f"{RUN}/manifest.json": MANIFEST}


def test_remove_and_clear_note(store, capsys):
    tag(store, "--add", "a", "b", "c", "--note", "n")
    capsys.readouterr()
    assert tag(store, "--remove", "b", "zz", "--clear-note") == 0
    assert capsys.readouterr().out.splitlines()[1:3] == ["tags: a, c", "note: none"]
    assert read_tags(open_store(str(store)), RUN) == RunTags(("a", "c"), "")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--add", ""], "error: a tag is empty: give a word such as `baseline`"),
        (["--add", "two words"], "error: tag 'two words' holds a space or a newline: join"),
        (["--remove", "a\nb"], "error: tag 'a\\nb' holds a space or a newline"),
        (
            ["--add", "x" * 65],
            "error: tag 'xxxxxxxxxxxxxxxxxxxx'... is 65 characters: keep it to 64",
        ),
        (["--note", "n" * 2001], "error: the note is 2001 characters: keep it to 2000"),
        (
            ["--add", "ok", "--note", "n", "--clear-note"],
            "error: --clear-note: not allowed with argument --note",
        ),
    ],
)
def test_bad_input_is_one_line_and_nothing_changes(store, capsys, argv, says):
    tag(store, "--add", "kept", "--note", "kept note")
    before = snapshot(store)
    capsys.readouterr()
    assert tag(store, *argv) == 2
    out, err = capsys.readouterr()
    assert (out, err.count("\n")) == ("", 1)
    assert err.startswith(says)
    assert snapshot(store) == before


def test_an_unknown_run_is_refused(store, capsys):
    assert main(["tag", "nope", "--store", str(store), "--add", "a"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: no run 'nope' in local directory {store}: `evalfleet runs` lists them\n"
    assert not (store / "nope").exists()


def test_an_unreadable_tags_file_reads_as_none(store):
    (store / RUN / "tags.json").write_text("[not an object")
    assert read_tags(open_store(str(store)), RUN) == RunTags()
    (store / RUN / "tags.json").write_text('["a list"]')
    assert read_tags(open_store(str(store)), RUN) == RunTags()
