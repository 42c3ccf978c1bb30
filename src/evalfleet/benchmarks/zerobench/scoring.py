r"""ZeroBench scoring in two modes, reported under separate names.

``upstream`` reproduces inspect_evals exactly and is the official number: the whole response is
stripped and lower-cased, ``re.findall(r"\{(.*?)\}", ...)`` (no DOTALL) finds brace groups, the
last group, unstripped, must equal the stripped, lower-cased target.

``robust`` is ours. It reads the same answer format more forgivingly:

Extraction (the first rule that yields a candidate wins):

- E1. Braces are matched as balanced pairs, across lines; an unmatched ``{`` or ``}`` is ignored.
  A group's content is everything between its braces, so ``{\frac{1}{2}}`` gives ``\frac{1}{2}``.
- E2. Groups whose normalised content is empty or the echoed placeholder ``final answer`` are never
  answers.
- E3. If the response holds ``\boxed{...}`` (at any depth), the last one is the answer.
- E4. Otherwise the last top-level group labelled as the answer: preceded on its line by
  ``final answer`` or ``answer``, optionally followed by ``is``, ``:`` or ``=`` and markdown
  ``*``. ``Final answer: {7}. Check: {x+1}`` answers 7, not ``x+1``.
- E5. Otherwise the last top-level group that is not a LaTeX argument: a group right after a
  command (``\frac{1}``), after ``^`` or ``_``, or right after another LaTeX argument
  (``\frac{1}{2}``). This keeps ``$\frac{a}{b}$`` written after the answer from winning.
- E6. Otherwise the last top-level group of any kind (``\textbf{42}`` still answers 42).
- E7. Otherwise there is no answer and the response is incorrect.

A group's content is unwrapped before it is read: a group holding exactly one braced group
(``{{x}}``) reads as its inner content, and a leading ``answer:`` (or ``final answer:``) label
inside the braces is dropped (``{Answer: 7}`` reads 7).

Normalisation (answer and target alike):

- N1. Unicode case folding; the Unicode minus (U+2212) becomes ``-``; ``\%`` and ``\$`` become
  ``%`` and ``$``; ``\text{x}``, ``\textbf{x}``, ``\textit{x}``, ``\mathrm{x}``, ``\mathbf{x}``
  and ``\mbox{x}`` become ``x``.
- N2. Markdown wrappers ``**x**`` and ```x``` are removed.
- N3. Whitespace runs become one space, the ends are stripped, one trailing ``.`` is dropped.

Comparison:

- C1. When the target holds no ``$`` and no ``%``, every ``$`` and ``%`` is removed from the answer
  (currency, percent and ``$...$`` math delimiters): ``{$11.90}`` matches ``11.90``. When the
  target holds one, the answer must carry the same symbols.
- C2. Equal normalised strings are correct.
- C3. Two numbers are equal when their decimal values are: an optional sign (``+``, ``-``), an
  optional ``$``, digits with optional ``,`` thousands groups of exactly three digits, optional
  decimals, an optional ``%``. So ``11.9 == 11.90``, ``1,234 == 1234``, ``+5 == 5``, ``−5 == -5``.
  The symbols must agree.
- C4. Two comma-separated lists (neither side a number) are equal when their items are equal by
  C2 or C3: ``down,right == down, right``.

Nothing else is equated: fractions and decimals (``1/2`` vs ``0.5``), units (``7 apples`` vs
``7``), number words, or JSON answers (``{"answer": "11.90"}``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from decimal import Decimal

from evalfleet.core.types import Score

PLACEHOLDER = "final answer"

_UPSTREAM_GROUP = re.compile(r"\{(.*?)\}")
_LATEX_COMMAND_BEFORE = re.compile(r"(\\[A-Za-z]+\*?\s*|[\^_]\s*)$")
_BOXED_BEFORE = re.compile(r"\\boxed\s*$")
_ANSWER_LABEL_BEFORE = re.compile(
    r"(?:final\s+answer|answer)\s*(?:is\b|[:=])?[\s*:]*$", re.IGNORECASE
)
_INNER_LABEL = re.compile(r"^(?:final\s+)?answer\s*[:=]\s*", re.IGNORECASE)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_MARKDOWN_WRAPPERS = (re.compile(r"^\*\*([^*]+)\*\*$"), re.compile(r"^`([^`]+)`$"))
_WHITESPACE = re.compile(r"\s+")
_BRACE = re.compile(r"[{}]")
_NUMBER = re.compile(
    r"^(?P<sign1>[+-]?)(?P<cur>\$?)\s?(?P<sign2>[+-]?)"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d*)(?P<frac>\.\d+)?\s?(?P<pct>%?)$"
)


def score_upstream(response: str, target: str) -> Score:
    """inspect_evals ZeroBench scorer, exactly (reference §1.4)."""
    matches = _UPSTREAM_GROUP.findall(response.strip().lower())
    if not matches:
        why = "upstream rule: the lower-cased response holds no {...} group, so no answer"
        return Score(scoring="upstream", answer=None, correct=False, value=0.0, explanation=why)
    answer = matches[-1]
    correct = answer == target.strip().lower()
    why = (
        f"upstream rule: the last {{...}} group of the lower-cased response, {answer!r}, "
        f"{'equals' if correct else 'differs from'} the lower-cased target "
        f"{target.strip().lower()!r} (exact text)"
    )
    return Score("upstream", answer, correct, float(correct), explanation=why)


def score_robust(response: str, target: str) -> Score:
    """Our forgiving scorer; the rules are in the module docstring."""
    answer, extracted_by = extract_with_rule(response)
    if answer is None:
        why = f"{extracted_by}: no answer group in the response, so wrong"
        return Score("robust", None, False, 0.0, explanation=why)
    normal_target = _normalised_target(target)
    rule = match_rule(answer, normal_target)
    correct = rule is not None
    compared = rule or "C1-C4: no rule equates them"
    why = (
        f"{extracted_by} read {answer!r}; compared with the normalised target "
        f"{normal_target!r}: {compared}, so {'right' if correct else 'wrong'}"
    )
    return Score("robust", answer, correct, float(correct), explanation=why)


SCORERS: dict[str, Callable[[str, str], Score]] = {
    "upstream": score_upstream,
    "robust": score_robust,
}


def extract_robust(response: str) -> str | None:
    """The normalised answer picked by rules E1-E7, or None."""
    return extract_with_rule(response)[0]


_RULE_WORDS = {
    "E3": "E3 (the last \\boxed{...})",
    "E4": "E4 (the last group labelled as the answer)",
    "E5": "E5 (the last group that is not a LaTeX argument)",
    "E6": "E6 (the last group of any kind)",
    "E7": "E7",
}


def extract_with_rule(response: str) -> tuple[str | None, str]:
    """The answer of rules E1-E7 and, in words, the rule that picked it."""
    pairs = _balanced_pairs(response)

    boxed: list[str] = []
    for o, c in pairs:
        if _BOXED_BEFORE.search(_before(response, o)) and (text := _candidate(response, o, c)):
            boxed.append(text)
    if boxed:
        return boxed[-1], _RULE_WORDS["E3"]

    labelled: list[str] = []
    plain: list[str] = []
    any_kind: list[str] = []
    previous_arg_end = -2
    for o, c in _top_level(pairs):
        before = _before(response, o)
        is_arg = bool(_LATEX_COMMAND_BEFORE.search(before))
        is_arg = is_arg or previous_arg_end == o - 1
        previous_arg_end = c if is_arg else -2
        text = _candidate(response, o, c)
        if text is None:
            continue
        any_kind.append(text)
        if not is_arg:
            plain.append(text)
            if _ANSWER_LABEL_BEFORE.search(before.rsplit("\n", 1)[-1]):
                labelled.append(text)
    for rule, found in (("E4", labelled), ("E5", plain), ("E6", any_kind)):
        if found:
            return found[-1], _RULE_WORDS[rule]
    return None, _RULE_WORDS["E7"]


def _candidate(response: str, open_at: int, close_at: int) -> str | None:
    """The normalised, unwrapped content of a brace group; None if empty or the placeholder."""
    text = _unwrap(response[open_at + 1 : close_at])
    text = normalise(_INNER_LABEL.sub("", text.strip(), count=1))
    return None if not text or text == PLACEHOLDER else text


def _unwrap(content: str) -> str:
    """``{x}`` for a content that is exactly one balanced group, repeatedly."""
    while True:
        inner = content.strip()
        if not (inner.startswith("{") and inner.endswith("}")):
            return content
        pairs = _balanced_pairs(inner)
        if not pairs or pairs[0] != (0, len(inner) - 1):
            return content
        content = inner[1:-1]


def normalise(text: str) -> str:
    """Rules N1-N3."""
    s = text.casefold().replace("\u2212", "-")
    if "\\" in s:  # a LaTeX escape or wrapper (most answers hold none)
        s = s.replace("\\%", "%").replace("\\$", "$")
        while True:
            unwrapped = _TEXT_WRAPPER.sub(r"\1", s)
            if unwrapped == s:
                break
            s = unwrapped
    s = _WHITESPACE.sub(" ", s).strip()
    if s[:1] in ("*", "`"):
        for wrapper in _MARKDOWN_WRAPPERS:
            if match := wrapper.match(s):
                s = match.group(1).strip()
    if s.endswith("."):
        s = s[:-1].rstrip()
    return s


# A run scores each target once per model and epoch: normalised once.
_normalised_target = functools.lru_cache(maxsize=1 << 16)(normalise)


def answers_match(answer: str, target: str) -> bool:
    """Rules C1-C4 on normalised strings."""
    return match_rule(answer, target) is not None


def match_rule(answer: str, target: str) -> str | None:
    """The comparison rule (C2-C4, in words) that equates normalised `answer` and `target`,
    None when none does."""
    dropped = ""
    if "$" not in target and "%" not in target:
        plain = _WHITESPACE.sub(" ", answer.replace("$", "").replace("%", "")).strip()
        dropped = " after C1 dropped $ and %" if plain != answer else ""
        answer = plain
    if answer == target:
        return f"C2 (equal text{dropped})"
    a_num, t_num = _parse_number(answer), _parse_number(target)
    if a_num is not None and t_num is not None:
        return f"C3 (equal numbers{dropped})" if a_num == t_num else None
    if a_num is None and t_num is None and "," in answer and "," in target:
        a_items = [item.strip() for item in answer.split(",")]
        t_items = [item.strip() for item in target.split(",")]
        same = len(a_items) == len(t_items) and all(
            a == t or (_parse_number(a) is not None and _parse_number(a) == _parse_number(t))
            for a, t in zip(a_items, t_items, strict=True)
        )
        return f"C4 (equal lists{dropped})" if same else None
    return None


def _parse_number(text: str) -> tuple[str, Decimal] | None:
    """(symbols, value) for a plain number such as "-$1,234.50" or "12 %"; None otherwise."""
    m = _NUMBER.match(text)
    if m is None or (m["sign1"] and m["sign2"]) or not (m["int"] or m["frac"]):
        return None
    digits = (m["int"] or "0").replace(",", "") + (m["frac"] or "")
    value = Decimal(digits)
    if "-" in (m["sign1"], m["sign2"]):
        value = -value
    return m["cur"] + m["pct"], value


def _before(text: str, index: int) -> str:
    """A short window before `index`: enough to see a LaTeX command, cheap on long responses."""
    return text[max(0, index - 40) : index]


def _balanced_pairs(text: str) -> list[tuple[int, int]]:
    """(open, close) index pairs of balanced braces, sorted by opening position."""
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    for brace in _BRACE.finditer(text):  # from brace to brace: long answers hold few
        if brace.group() == "{":
            stack.append(brace.start())
        elif stack:
            pairs.append((stack.pop(), brace.start()))
    return sorted(pairs)


def _top_level(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs not nested in another pair, in order."""
    out: list[tuple[int, int]] = []
    for o, c in pairs:
        if not out or o > out[-1][1]:
            out.append((o, c))
    return out
