"""Escaping for every writer of a page, a table or an artifact: the one place that knows how
untrusted text (model and judge names, dataset targets, responses, store paths) is made inert
in Markdown, HTML and JSON embedded in HTML.

Names are checked before a run starts (`evalfleet.providers.names`), but the text a page shows also
comes from datasets, providers and stores written by older versions, so every writer escapes
whatever it is given:

- `markdown_cell` (and `markdown_rows` for a table's rows): a Markdown table cell or a line
  of Markdown. `|` would add a column, HTML
  would be rendered by the Prefect UI and most Markdown viewers, a newline would end the row.
- `html_text`: text or an attribute value in an HTML page.
- `json_for_html`: JSON placed inside `<script type="application/json">`. The HTML parser
  ends a script at `</script` and treats `<!--` and `<script` inside it specially (a block
  holding `<!--<script>` never closes), so `<`, `>` and `&` are written as `\\u003c`,
  `\\u003e` and `\\u0026`: the same JSON value, no markup.
"""

from __future__ import annotations

import html
import json
from typing import Any

_MARKDOWN = str.maketrans(
    {
        "\\": "\\\\",  # first: an escaped pipe must not become a backslash and a pipe
        "|": "\\|",
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "`": "\\`",
        "[": "\\[",
        "]": "\\]",
        "\r": " ",
        "\n": " ",
    }
)
_SCRIPT = str.maketrans(
    {
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


def markdown_cell(value: Any) -> Any:
    """Text as one Markdown table cell (or inline Markdown) shows it literally; numbers,
    booleans and None unchanged."""
    if not isinstance(value, str):
        return value
    return value.translate(_MARKDOWN)


def markdown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table rows (a Prefect table artifact) with every column name and text escaped."""
    return [{markdown_cell(k): markdown_cell(v) for k, v in row.items()} for row in rows]


def html_text(value: Any) -> str:
    """Text (or an attribute value, quotes included) as an HTML page shows it literally."""
    return html.escape("" if value is None else str(value), quote=True)


def json_for_html(value: Any) -> str:
    """JSON that can sit inside a `<script>` element of a page and parse to `value`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_SCRIPT)  # JSON strings take these escapes; nothing else has them
