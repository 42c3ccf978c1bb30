"""Reading the final answer out of a ROME response, in two modes.

``upstream`` is ROME-evaluation's rule pipeline exactly (reference §2.3 and §2.4, quirks
included):

- extraction: the first indicator present among ``Answer:``, ``Answer``, ``答案：``, ``答案:``,
  ``答案`` (case-sensitive substring, so ``Answered`` matches) gives the text after its last
  occurrence, stripped and markdown kept; else the first ``\\boxed{...}`` (no nested braces);
  else the text unchanged;
- normalisation: ``′`` → ``'``, thin space → space, ``‐`` ``−`` ``–`` → ``-``, ``⋅`` → ``·``;
- choice letters: the ``[INST]`` / ``[/INST]`` patterns are regex character classes, so every
  capital I, N, S, T (and ``/``) is deleted before the letters are read.

``fixed`` corrects each of those quirks, and nothing else:

- F1. The indicators match as words (``\\bAnswer\\b``, so ``Answered:`` is not one), and markdown
  emphasis (``*``, ``_``, backticks) around the extracted answer is removed:
  ``**Final Answer: A, B, D, C**`` reads ``A, B, D, C``.
- F2. ``\\boxed{}`` is read with balanced braces, and the last one wins (the final answer comes
  last): ``\\boxed{\\frac{1}{2}}`` reads ``\\frac{1}{2}``.
- F3. Only the literal tokens ``[INST]``, ``[/INST]``, ``<Img>``, ``</Img>``, ``The`` and ``If``
  are removed before the letters are read, so options I, N, S and T can be scored.
"""

from __future__ import annotations

import re

INDICATORS = ("Answer:", "Answer", "答案：", "答案:", "答案")
_UPSTREAM_BOXED = re.compile(r"\\boxed\{([^}]+)\}")
_NORMALISE = {
    "\u2032": "'",
    "\u2009": " ",
    "\u2010": "-",
    "\u2212": "-",
    "\u2013": "-",
    "\u22c5": "\u00b7",
}
_FIXED_INDICATORS = tuple(
    re.compile(r"\b" + re.escape(i) + (r"\b" if i[-1].isalpha() else ""))
    if i[0].isascii()
    else re.compile(re.escape(i))
    for i in INDICATORS
)
_EMPHASIS = re.compile(r"^[\s*_`]+|[\s*_`]+$")

# -- choices (process_multiple_choice) --
_STRIP_UPSTREAM = ("The", "If", "[INST]", "[/INST]", "<Img>", "</Img>")  # as regexes
_STRIP_FIXED = ("[INST]", "[/INST]", "<Img>", "</Img>", "The", "If")  # as literal text
_KEYWORDS = (
    "boxed",
    "Answer:",
    "Answer is",
    "answer is",
    "option is",
    "Correct option",
    "correct option",
    "Answer",
    "answer",
    "故选",
    "选择",
    "正确选项为",
    "答案选",
    "答案为",
    "答案是",
    "因此",
    "答案",
)
_NOT_A_LETTER = re.compile(
    r"[-`\\【】\*\$、,，。.；;:：？\?！!\s\n\u4e00-\u9fff0-9①②③④⑤⑥⑦\[\]\<>a-z=\'\"\(\)\{\}]+"
)
_LEADING_LETTER = re.compile(r"^([A-Z])\.")


def normalize(text: str) -> str:
    for old, new in _NORMALISE.items():
        text = text.replace(old, new)
    return text


def extract(answer: str, mode: str = "upstream") -> str:
    """The final answer of a response, normalised (before evaluator-specific reading)."""
    return normalize(extract_upstream(answer) if mode == "upstream" else extract_fixed(answer))


def extract_upstream(answer: str) -> str:
    for indicator in INDICATORS:
        if indicator in answer:
            return answer.split(indicator)[-1].strip()
    match = _UPSTREAM_BOXED.search(answer)
    if match:
        return match.group(1).strip()
    return answer


def extract_fixed(answer: str) -> str:
    for pattern in _FIXED_INDICATORS:
        found = list(pattern.finditer(answer))
        if found:
            return _EMPHASIS.sub("", answer[found[-1].end() :])
    boxed = last_boxed(answer)
    if boxed is not None:
        return boxed.strip()
    return answer


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}``, braces balanced; None if there is none."""
    start = text.rfind("\\boxed")
    while start != -1:
        i = start + len("\\boxed")
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return text[i + 1 : j]
        start = text.rfind("\\boxed", 0, start)
    return None


def choice_letters(answer: str, mode: str = "upstream") -> str:
    """The capital letters an extracted answer names (process_multiple_choice)."""
    text = answer
    if mode == "upstream":
        for pattern in _STRIP_UPSTREAM:
            text = re.sub(pattern, "", text)
    else:
        for token in _STRIP_FIXED:
            text = re.sub(
                r"\b" + re.escape(token) + r"\b" if token[0].isalpha() else re.escape(token),
                "",
                text,
            )
    text = text.strip()
    match = _LEADING_LETTER.match(text)
    if match:
        return match.group(1)
    for keyword in _KEYWORDS:
        if keyword in text:
            text = text.split(keyword)[-1]
            break
    text = _NOT_A_LETTER.sub("", text)
    return "".join(re.findall(r"[A-Z]", text.split("\n")[-1]))
