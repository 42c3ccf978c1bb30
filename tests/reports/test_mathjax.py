"""Which reports carry MathJax: the scan finds every formula the Markdown view reads (`$…$`,
`\\(…\\)`, `$$…$$`, `\\[…\\]`, a bare `\\boxed{…}`) in any text of the gzipped chunks, and not
dollars of money; the script embedded is MathJax 3.2.2 from the dependency, configured first,
its `safe` filter after it.
Its drawing is tested in Chromium (test_report_browser.py)."""

from __future__ import annotations

import gzip
import json

import pytest

from evalfleet.reports.mathjax import CONFIG, bundle, chunks_have_math, has_math, strings


@pytest.mark.parametrize(
    ("text", "math"),
    [
        ("so $\\frac{1}{2}$ it is", True),
        ("$x$", True),
        ("first line\n$x$ at the start of one", True),
        ("\\(a+b\\)", True),
        ("$$\\sum_i i$$", True),
        ("\\[x\\]", True),
        ("the answer is \\boxed{24}", True),
        ("It costs $5 and $10.", False),
        ("$ 5 $", False),  # a space inside a `$`: not math, as in markdown.js
        ("US$5 and 6$", False),
        ("a \\$5 fee and $x", False),
        ("{24}, 12 apples", False),
        ("", False),
    ],
)
def test_a_formula_is_found_and_money_is_not(text, math):
    assert has_math([text]) is math


def test_every_string_of_a_chunk_is_read():
    value = [{"response": "plain", "judges": [{"words": ["no", {"why": "by $x^2$"}]}]}, 3, None]
    assert list(strings(value)) == ["plain", "no", "by $x^2$"]
    chunks = [gzip.compress(json.dumps(v).encode()) for v in ([{"a": "$5 and $10"}], value)]
    assert chunks_have_math(chunks) is True
    assert chunks_have_math(chunks[:1]) is False
    assert chunks_have_math([]) is False


def test_the_script_is_mathjax_3_2_2_configured_first():
    script = bundle()
    assert script.startswith(CONFIG + "\n")
    assert 'VERSION="3.2.2"' in script and len(script) > 2_000_000
    assert script.index('checkVersion("ui/safe"') > script.index('checkVersion("output/svg"')
    assert "</script" not in script.lower()
