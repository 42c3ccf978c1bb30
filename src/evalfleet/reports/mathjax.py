"""MathJax 3 for the formulas of the report's Markdown view, from the `django-static-mathjax`
dependency (MathJax 3.2.2's built files, Apache 2.0; only the files are used, no Django).

How it reaches the page: the report promises to open from disk, from a copy downloaded from S3
or from a mail, with nothing from the network, so MathJax cannot come from a CDN, and a file
beside a single-page report would be lost when the page alone is mailed. So its text is
embedded in the page, but only when the run's texts hold math (`has_math`, a scan of the
prompts, responses, judges' words and explanations as the page is written): a run without
math keeps its page 2.2 MB smaller. A paged report writes it once into its folder, beside the
files the page already reads from there.

The file is `tex-svg-full.js`: every TeX extension built in (`\\color`, `\\tag`,
`\\newcommand`, `\\substack`, `align`, ...), so none is fetched on demand (MathJax's autoload
would ask the network), and SVG output, which draws glyphs as paths and needs no font file;
then `ui/safe.js`, MathJax's own filter of what a formula may set (`\\mmlToken{mi}[href=
"javascript:..."]` makes a link without it, `\\bbox[background-image:url(...)]` a request).
`markdown.js` decides which text is a formula (its rules for `$` keep "$5 and $10" and code
as written) and hands MathJax each formula alone (`MathJax.tex2svg`): MathJax never scans the
page for delimiters, as its own `$` rule would read "$5 and $" as a formula. Removed from
TeX: `html` (`\\href`, `\\style`, `\\class`: not wanted from an untrusted response), `require`
and `autoload` (they load from the network)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

FILES = ("static/mathjax/es5/tex-svg-full.js", "static/mathjax/es5/ui/safe.js")
# Set before MathJax runs: no typesetting of the page at start, no menu (its a11y tools load
# from the network), links only to http(s), equation numbers as amsmath numbers them, glyphs
# drawn in each formula.
CONFIG = """window.MathJax = {
  loader: { load: [] },
  startup: { typeset: false },
  options: { enableMenu: false, safeOptions: { safeProtocols: { file: false } } },
  tex: { packages: { "[-]": ["html", "require", "autoload"] }, tags: "ams" },
  svg: { fontCache: "local" },
};"""
# A set-apart formula wider than its box scrolls inside it (MathJax 3 does not break lines).
STYLE = (
    ".md mjx-container[display='true'] { overflow-x: auto; overflow-y: hidden; "
    "max-width: 100%; padding: 2px 0 }"
)
# What markdown.js reads as a formula, or more: `$$`, `\(`, `\[`, `\boxed{` anywhere (a plain
# substring test), or a `$...$` on one line, `$` not after a letter, digit, `\` or `$`, no
# space inside either `$` (the regex starts on its `$`: Python's search skips to each one).
_SIGNS = ("$$", "\\(", "\\[", "\\boxed{")
INLINE = re.compile(r"\$(?<![\\$\w]\$)(?=[^\s$])[^$\n]*?[^\s$\\]\$(?![\w$])")


@cache
def bundle() -> str:
    """The configuration, then MathJax: one script. Its text holds no `</script` (checked), so
    it may sit inside the page's `<script>`."""
    texts = [CONFIG]
    for name in FILES:
        text = resources.files("mathjax").joinpath(name).read_text(encoding="utf-8")
        if "</script" in text.lower():
            raise ValueError(f"mathjax/{name} holds '</script': it cannot be embedded in a page")
        texts.append(text)
    return "\n".join(texts)


def has_math(texts: Iterable[str]) -> bool:
    return any(
        any(s in text for s in _SIGNS) or ("$" in text and INLINE.search(text)) for text in texts
    )


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (keys aside)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner)


def chunks_have_math(chunks: Iterable[bytes]) -> bool:
    """Whether the gzipped JSON chunks of a report hold a formula. A chunk whose JSON text has
    no `$` and no backslash holds none and is not parsed."""
    for chunk in chunks:
        text = gzip.decompress(chunk).decode()
        if ("$" in text or "\\\\" in text) and has_math(strings(json.loads(text))):
            return True
    return False
