"""The shell blocks of the README and the docs, and how each says whether it runs.

A fenced block in a shell language (bash, sh, shell, console) carries one mark after its
language, in the fence's info string:

    ```bash runnable                     the docs test runs it (tests/docs/test_docs_run.py)
    ```bash skip: needs a real API key   it does not, and says why

A block with no mark, or a mark of another kind, is a mistake: `make docs` and the fast docs
test both refuse it. Blocks in other languages (text, yaml, python, ...) are never run.

`strip_marks` hands the site builder the info string's language alone (Python-Markdown's
fences take no words after it); GitHub shows the language and ignores the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SHELLS = frozenset({"bash", "sh", "shell", "console"})
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
MARK = re.compile(r"^(?P<runnable>runnable)$|^skip:[ \t]*(?P<reason>\S.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced shell block: where it is, its mark, and its text (indent removed)."""

    path: Path
    line: int  # of the opening fence, from 1
    language: str
    runnable: bool
    reason: str | None  # why it is skipped; None when it runs or has no valid mark
    problem: str | None  # what is wrong with its mark; None when it is marked
    text: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def fences(markdown: str):
    """(opening line index, closing line index, indent, info string) of each fenced block."""
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence = opening["fence"]
        end = index + 1
        while end < len(lines):
            closing = FENCE.match(lines[end])
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"]
            ):
                break
            end += 1
        yield index, end, opening["indent"], opening["info"]
        index = end + 1


def blocks(path: Path, root: Path | None = None) -> list[Block]:
    """Every shell block of a Markdown file, marked or not (named relative to `root`)."""
    return blocks_in(path.read_text(), path.relative_to(root) if root else path)


def blocks_in(markdown: str, shown: Path) -> list[Block]:
    """Every shell block of a Markdown text, marked or not."""
    lines = markdown.split("\n")
    found = []
    for start, end, indent, info in fences(markdown):
        language, _, rest = info.partition(" ")
        if language not in SHELLS:
            continue
        mark = MARK.match(rest.strip())
        if mark:
            problem = None
        elif rest.strip():
            problem = f"mark {rest.strip()!r} is neither 'runnable' nor 'skip: REASON'"
        else:
            problem = "no mark: add 'runnable' or 'skip: REASON' after the language"
        body = [line[len(indent) :] if line.startswith(indent) else line for line in lines]
        found.append(
            Block(
                path=shown,
                line=start + 1,
                language=language,
                runnable=bool(mark and mark["runnable"]),
                reason=mark["reason"] if mark else None,
                problem=problem,
                text="\n".join(body[start + 1 : end]) + "\n",
            )
        )
    return found


def broken_fences(markdown: str, shown: Path) -> list[str]:
    """Lines that look like an opening fence but are not one: a backtick fence whose info
    string holds a backtick is inline code (CommonMark), so the block opens a line later and
    every block after it is read inside out."""
    return [
        f"{shown}:{number}: a backtick in a fence's info string (write the reason without one)"
        for number, line in enumerate(markdown.split("\n"), 1)
        if re.match(r"^[ \t]*`{3,}(?!`)[^`]*`", line)
    ]


def strip_marks(markdown: str) -> str:
    """The Markdown with each shell fence's info string cut to its language."""
    lines = markdown.split("\n")
    for start, _, indent, info in list(fences(markdown)):
        language = info.partition(" ")[0]
        if language in SHELLS and info != language:
            fence = FENCE.match(lines[start])["fence"]
            lines[start] = f"{indent}{fence}{language}"
    return "\n".join(lines)


def names_of_files(text: str) -> list[str]:
    """The files a block names, which must exist once it has run: each word that ends in a
    file suffix of these docs (.json, .jsonl, .yaml, .md, .csv, .parquet, .html, .png, .txt)
    or starts with ./ (a URL, a flag and a word with a $ or a wildcard are not files)."""
    suffixes = (".json", ".jsonl", ".yaml", ".yml", ".md", ".csv", ".parquet", ".html")
    suffixes += (".png", ".txt")
    found = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0]  # a comment names no file
        for word in re.split(r"[\s=]+", line.strip()):
            word = word.strip("'\"")
            if not word or word.startswith("-") or "://" in word or "$" in word:
                continue
            if any(c in word for c in "*?[]{}<>|&;()"):
                continue
            if word.endswith(suffixes) or (word.startswith("./") and len(word) > 2):
                found.append(word)
    return list(dict.fromkeys(found))
