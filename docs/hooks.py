"""mkdocs hooks (mkdocs.yml `hooks:`): every shell block of a page must say whether the docs
test runs it (`shell_blocks`), and the site shows the block with its language alone."""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from shell_blocks import blocks_in, broken_fences, strip_marks


def on_page_markdown(markdown, page, config, files):
    where = Path("docs") / page.file.src_path
    problems = broken_fences(markdown, where)
    problems += [f"{b.where}: {b.problem}" for b in blocks_in(markdown, where) if b.problem]
    if problems:
        raise PluginError("shell blocks without a valid mark:\n" + "\n".join(problems))
    return strip_marks(markdown)
