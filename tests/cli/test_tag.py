"""`evalfleet tag`: a run's tags, note and metadata in `{run}/tags.json`, printed exactly,
refused in one line with nothing stored changed, and listed in the store index it rewrites."""

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
        "metadata: none",
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
    assert capsys.readouterr().out == f"run {RUN}\ntags: none\nnote: none\nmetadata: none\n"
    assert snapshot(store) == {f"{RUN}/manifest.json": MANIFEST}


def test_remove_and_clear_note(store, capsys):
    tag(store, "--add", "a", "b", "c", "--note", "n")
    capsys.readouterr()
    assert tag(store, "--remove", "b", "zz", "--clear-note") == 0
    printed = capsys.readouterr()
    assert printed.out.splitlines()[1:3] == ["tags: a, c", "note: none"]
    assert printed.err == f"note: run {RUN} had no tag 'zz': nothing removed\n"
    assert read_tags(open_store(str(store)), RUN) == RunTags(("a", "c"), "")


def test_metadata_is_set_changed_unset_and_printed(store, capsys):
    assert tag(store, "--set", "gpu=a100", "cmd=x=1 y=2", "--add", "t") == 0
    assert capsys.readouterr().out.splitlines()[3:6] == ["metadata:", "  gpu=a100", "  cmd=x=1 y=2"]
    doc = json.loads((store / RUN / "tags.json").read_text())
    assert doc == {"tags": ["t"], "note": "", "metadata": {"gpu": "a100", "cmd": "x=1 y=2"}}
    page = (store / INDEX_KEY).read_text()
    assert '<span class="meta">gpu=a100</span> <span class="meta">cmd=x=1 y=2</span>' in page
    assert tag(store, "--set", "gpu=h100", "commit=abc1234", "--unset", "cmd", "nokey") == 0
    assert capsys.readouterr().err == f"note: run {RUN} had no metadata 'nokey': nothing unset\n"
    assert tag(store) == 0
    assert capsys.readouterr().out == (
        f"run {RUN}\ntags: t\nnote: none\nmetadata:\n  gpu=h100\n  commit=abc1234\n"
    )
    assert read_tags(open_store(str(store)), RUN).metadata == (
        ("gpu", "h100"),
        ("commit", "abc1234"),
    )
    assert tag(store, "--unset", "gpu", "commit") == 0
    doc = json.loads((store / RUN / "tags.json").read_text())
    assert doc == {"tags": ["t"], "note": ""}  # no pairs: the field as old files had it


def test_fifty_keys_and_no_more(store, capsys):
    assert tag(store, "--set", *[f"k{i}=v" for i in range(50)]) == 0
    capsys.readouterr()
    before = snapshot(store)
    assert tag(store, "--set", "one.more=v") == 2
    assert capsys.readouterr().err == (
        "error: the run would have 51 metadata keys: keep it to 50 (unset some, or name a file "
        "that holds the rest)\n"
    )
    assert snapshot(store) == before
    assert tag(store, "--set", "one.more=v", "--unset", "k0") == 0


def test_an_old_tags_file_without_metadata_reads(store):
    (store / RUN / "tags.json").write_text('{"tags": ["old"], "note": "n"}')
    assert read_tags(open_store(str(store)), RUN) == RunTags(("old",), "n", ())


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
        (["--set", "gpu"], "error: --set 'gpu' has no =: give KEY=VALUE, such as gpu=a100\n"),
        (["--set", "a=1", "a=2"], "error: --set gives 'a' twice: give each key once\n"),
        (
            ["--set", "a b=1"],
            "error: metadata key 'a b' is not 1 to 64 letters, digits, _ . or -: give a name "
            "such as `gpu` or `commit`\n",
        ),
        (["--set", "=v"], "error: metadata key '' is not 1 to 64 letters"),
        (["--unset", "k" * 65], "error: metadata key 'kkkkkkkkkkkkkkkkkkkk'... is not 1 to 64"),
        (
            ["--set", "note=x"],
            "error: metadata key 'note' is the run's note: set it with --note\n",
        ),
        (["--set", "a="], "error: metadata 'a' has an empty value: give one, or unset 'a'\n"),
        (["--set", "a=x\ny"], "error: metadata 'a' holds a newline: keep a value to one line\n"),
        (
            ["--set", "a=" + "v" * 501],
            "error: metadata 'a' is 501 characters: keep a value to 500\n",
        ),
        (
            ["--set", "a=1", "--unset", "a"],
            "error: metadata 'a' is both set and unset: give one of the two\n",
        ),
        (["--add", "fine", "--set", "ok=1", "b=\r"], "error: metadata 'b' holds a newline"),
        (
            ["--add", "ok", "--note", "n", "--clear-note"],
            "error: --clear-note: not allowed with argument --note",
        ),
    ],
)
def test_bad_input_is_one_line_and_nothing_changes(store, capsys, argv, says):
    tag(store, "--add", "kept", "--note", "kept note", "--set", "a=kept")
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


@pytest.mark.parametrize("argv", [(), ("--add", "new"), ("--unset", "gpu")])
def test_a_damaged_tags_file_is_named_and_never_written_over(store, capsys, argv):
    """Read as none by a report, it would be written over by the next change with the labels
    it held lost: `tag` names it instead, and changes nothing."""
    whole = json.dumps({"tags": ["keep1", "keep2"], "note": "important", "metadata": {"gpu": "a"}})
    (store / RUN / "tags.json").write_text(whole[:-15])  # cut short, as a full disk leaves it
    before = snapshot(store)
    assert tag(store, *argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {store}/{RUN}/tags.json is damaged (")
    assert err.endswith(
        "), so its labels were left as they are: mend the file by hand, or move it aside to "
        "label the run afresh\n"
    )
    assert err.count("\n") == 1
    assert snapshot(store) == before


def test_a_tag_both_added_and_removed_is_refused(store, capsys):
    before = snapshot(store)
    assert tag(store, "--add", "x", "--remove", "x") == 2
    assert capsys.readouterr().err == (
        "error: tag 'x' is both added and removed: give one of the two\n"
    )
    assert snapshot(store) == before
