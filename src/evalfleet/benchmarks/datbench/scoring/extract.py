r"""``extract_final_answer``: the short answer almost every DatBench scorer reads.

Upstream (``erma_utils.extract_final_answer``) tries, in order: the last
``<|begin_of_box|>...<|end_of_box|>``; the last ``\boxed{...}`` matched as ``\\+boxed\{([^}]+)\}``;
the last line starting with ``Answer:`` or ``Final Answer:``; the last non-empty line. The pick is
cleaned: whitespace and the characters ``"'`` and backtick stripped from the ends, an
``<answer>``/``<final_answer>``/``<final>`` wrapper unwrapped, whitespace collapsed, and
placeholders such as ``<answer>`` turned into ``""``.

Default mode changes (compat mode keeps upstream exactly):

- E1. ``\boxed{...}`` content is read with balanced braces, so ``\boxed{\frac{1}{2}}`` gives
  ``\frac{1}{2}`` (upstream stops at the first ``}`` and gives ``\frac{1``). An unbalanced or
  empty box is ignored, as upstream ignores ``\boxed{}``.
- E2. An answer line may wrap its label in Markdown emphasis: ``**Answer:** B`` and
  ``**Final Answer**: 42`` are answer lines (upstream falls through to the last line and returns
  ``**Answer:** B``), and ``*`` is stripped from the ends of the answer with the quotes.
"""

from __future__ import annotations

import re

_PIPE_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)
_BOXED_UPSTREAM = re.compile(r"\\+boxed\{([^}]+)\}")
_BOXED_OPEN = re.compile(r"\\+boxed\{")
_ANSWER_LINE_UPSTREAM = re.compile(r"(?im)^\s*(?:final\s+answer|answer)\s*:\s*(.+)$")
_ANSWER_LINE_MARKDOWN = re.compile(
    r"(?im)^\s*\**\s*(?:final\s+answer|answer)\s*\**\s*:[ \t]*\**\s*(\S.*)$"
)
_TAG_NAMES = ("answer", "final_answer", "final")
_PLACEHOLDERS = frozenset({"<answer>", "<final>", "<final answer>", "<final_answer>"})
_PLACEHOLDER_PATTERN = re.compile(r"<\s*answer\s*>")
_WHITESPACE = re.compile(r"\s+")
_QUOTES = "\"'` "


def extract_final_answer(text: object, compat: bool = False) -> str:
    """The final short answer of a model output ("" when there is none)."""
    if not isinstance(text, str):
        return ""
    boxes = _PIPE_BOX.findall(text)
    if boxes:
        return _clean(boxes[-1], compat)
    boxed = _BOXED_UPSTREAM.findall(text) if compat else balanced_boxed(text)
    if boxed:
        return _clean(boxed[-1], compat)
    pattern = _ANSWER_LINE_UPSTREAM if compat else _ANSWER_LINE_MARKDOWN
    lines = pattern.findall(text)
    if lines:
        return _clean(lines[-1], compat)
    non_empty = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return _clean(non_empty[-1], compat) if non_empty else ""


def balanced_boxed(text: str) -> list[str]:
    r"""Every non-empty ``\boxed{...}`` content with balanced braces, in order of the opening."""
    found: list[str] = []
    for opening in _BOXED_OPEN.finditer(text):
        depth = 1
        for index in range(opening.end(), len(text)):
            char = text[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    content = text[opening.end() : index]
                    if content:
                        found.append(content)
                    break
    return found


def _clean(answer: str, compat: bool) -> str:
    answer = answer.strip().strip(_QUOTES if compat else _QUOTES + "*")
    answer = _unwrap_tag(answer)
    answer = _WHITESPACE.sub(" ", answer).strip()
    if _is_placeholder(answer):
        return ""
    return answer


def _unwrap_tag(answer: str) -> str:
    answer = answer.strip()
    for name in _TAG_NAMES:
        pattern = rf"^<\s*{name}\s*>\s*(.*?)\s*<\s*/\s*{name}\s*>$"
        match = re.match(pattern, answer, flags=re.IGNORECASE | re.DOTALL)
        if match:
            return match.group(1).strip()
    return answer


def _is_placeholder(answer: str) -> bool:
    if not answer:
        return True
    lowered = answer.strip().lower()
    return lowered in _PLACEHOLDERS or _PLACEHOLDER_PATTERN.fullmatch(lowered) is not None
