"""DatBench judge prompts: upstream's rewrite, the slots they are filled through, and the verdict.

- Rewrite (upstream #6): a `judge_prompt` containing ``Respond with exactly two lines:`` is cut
  at its last occurrence, right-stripped, and ends with ``\\n\\nOutput exactly one boolean
  token: true or false. answer: `` instead, so a short output budget cannot cut the verdict.
- Slots: the response and the ground truth are filled where the prompt says, through
  ``{response}`` (also ``{{response}}``, ``{model_response}``, ``{prediction}``) and
  ``{ground_truth}`` (also ``{{ground_truth}}``, ``{answer}``, ``{gold}``); ``{question}``
  takes the bare question. A prompt with no slot for the response is refused at load, unless
  the `judge_layout` option is ``append``: then the question, the ground truth and the
  response follow the prompt in a fixed block (upstream leaves this to the runner).
- Verdict: the first ``true``/``false`` after the last ``answer:`` (any case, JSON quotes
  allowed); no such token is an unparsable verdict, counted apart, never a wrong answer.
"""

from __future__ import annotations

import re

from evalfleet.core.types import DatasetError

MARKER = "Respond with exactly two lines:"
REWRITE_TAIL = "\n\nOutput exactly one boolean token: true or false. answer: "
RESPONSE_SLOTS = ("{{response}}", "{response}", "{model_response}", "{prediction}")
TRUTH_SLOTS = ("{{ground_truth}}", "{ground_truth}", "{answer}", "{gold}")
QUESTION_SLOTS = ("{{question}}", "{question}")
APPENDED = (
    "\n\n[Question]\n{question}\n\n[Ground truth]\n{ground_truth}\n\n"
    "[Model response]\n{response}\n\nanswer: "
)
_ANY_SLOT = re.compile(
    "|".join(
        re.escape(s)
        for s in sorted(QUESTION_SLOTS + TRUTH_SLOTS + RESPONSE_SLOTS, key=len, reverse=True)
    )
)
_VERDICT = re.compile(r"answer\"?\s*:\s*\"?\s*(true|false)\b", re.IGNORECASE)


def rewrite(prompt: str) -> str:
    """upstream #6: drop the two-line output format, ask for one boolean token."""
    at = prompt.rfind(MARKER)
    if at == -1:
        return prompt
    return prompt[:at].rstrip() + REWRITE_TAIL


def judge_template(prompt: str, sample_id: str, layout: str) -> str:
    """The rewritten prompt, checked to have a response slot (or given one when `append`)."""
    template = rewrite(prompt)
    if any(slot in template for slot in RESPONSE_SLOTS):
        return template
    if layout == "append":
        return template.rstrip() + APPENDED
    where = (
        " (it was cut with the two-line format)"
        if any(slot in prompt for slot in RESPONSE_SLOTS)
        else ""
    )
    raise DatasetError(
        f"DatBench judge row {sample_id!r}: its judge_prompt has no slot for the response"
        f"{where}: put {{response}} where it goes, or pass --datbench-judge-layout append"
    )


def fill(template: str, question: str, ground_truth: str, response: str) -> str:
    """Every slot filled in one pass, so a response that quotes a slot stays as written."""
    values = {
        **dict.fromkeys(QUESTION_SLOTS, question),
        **dict.fromkeys(TRUTH_SLOTS, ground_truth),
        **dict.fromkeys(RESPONSE_SLOTS, response),
    }
    return _ANY_SLOT.sub(lambda m: values[m.group(0)], template)


def verdict(reply: str) -> bool | None:
    found = _VERDICT.findall(reply)
    return None if not found else found[-1].lower() == "true"


def simulator_patterns(template: str) -> tuple[str, str]:
    """Regexes that find the response and the ground truth in a filled template (what a
    simulated judge reads): the literal text around each slot, escaped."""
    return _around(template, RESPONSE_SLOTS), _around(template, TRUTH_SLOTS)


def _around(template: str, slots: tuple[str, ...]) -> str:
    for slot in slots:
        at = template.find(slot)
        if at != -1:
            before = template[max(0, at - 40) : at]
            after = template[at + len(slot) : at + len(slot) + 40]
            before = re.split(r"\{\{?\w+\}?\}", before)[-1]
            after = re.split(r"\{\{?\w+\}?\}", after)[0]
            return re.escape(before) + "(.*?)" + (re.escape(after) if after else r"\Z")
    return "(?!)"
