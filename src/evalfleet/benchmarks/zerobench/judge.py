"""ZeroBench's fallback parser: an LLM re-reads answers that broke the braces format.

The paper re-parsed such answers with Gemini 2 Flash (inspect_evals has no fallback). The
judge only extracts: it never grades. Its extraction is then compared with the target the
way the upstream scorer compares (lower-cased, stripped target), and only answers where
upstream extraction found no brace group at all are sent to it. Every other answer keeps its
rule score, so the `judge` mode differs from `upstream` only on format failures.
"""

from __future__ import annotations

import re

from evalfleet.benchmarks.interface import BenchmarkOptions, Judgement, JudgeSpec
from evalfleet.benchmarks.zerobench.scoring import score_upstream
from evalfleet.core.types import Decoding, Sample, Score

PROMPT = (
    "A model answered the question below but did not give its final answer in curly braces "
    "as it was asked to. Read its response and extract the final answer it gives, exactly as "
    "written. Do not solve the question yourself and do not correct the answer.\n\n"
    "[Question]\n{question}\n\n[Response]\n{response}\n[End of response]\n\n"
    "Reply with the extracted final answer in curly braces, like this: {{answer}}. If the "
    "response gives no final answer, reply {{none}}."
)
FIRST_LINE = PROMPT.split("\n", 1)[0]
NONE = "none"
_GROUP = re.compile(r"\{(.*?)\}")


def needs_fallback(response: str) -> bool:
    """Upstream extraction finds no brace group (the answers the paper re-parsed)."""
    return bool(response.strip()) and not _GROUP.findall(response.strip().lower())


def parse_reply(reply: str) -> str | None:
    """The judge's extraction: its last brace group, lower-cased ("none": no answer), or
    None when the reply holds no brace group at all (unparsable)."""
    groups = _GROUP.findall(reply.strip().lower())
    return groups[-1] if groups else None


class FallbackParser(JudgeSpec):
    scorings = ("judge",)
    decoding = Decoding(temperature=0.0, top_p=1.0, max_tokens=1024, seed=42)
    reply_tokens = 2  # the extracted answer in braces
    answer_decides = True  # only answers whose format broke are judged
    extracts = True  # the judge's reply is the answer it read, compared with the target here

    def wants(self, sample: Sample, response: str, options: BenchmarkOptions) -> bool:
        return needs_fallback(response)

    def prompt(self, sample: Sample, response: str) -> str:
        question = str(sample.metadata.get("question", ""))
        return PROMPT.format(question=question, response=response)

    def score(
        self,
        sample: Sample,
        response: str,
        options: BenchmarkOptions,
        judgement: Judgement | None,
    ) -> list[Score]:
        if judgement is None:
            rule = score_upstream(response, sample.target)
            why = f"no judge asked, so the rules decide: {rule.explanation}"
            return [Score("judge", rule.answer, rule.correct, rule.value, explanation=why)]
        if judgement.reply is None:
            error = judgement.error or "not judged"
            return [Score("judge", None, False, 0.0, judged=True, error=error)]
        extracted = parse_reply(judgement.reply)
        if extracted is None:
            return [Score("judge", None, False, 0.0, judged=True, error="unparsable verdict")]
        if extracted.strip() == NONE:
            why = "the judge found no final answer in the response, so wrong"
            return [Score("judge", None, False, 0.0, judged=True, explanation=why)]
        target = sample.target.strip().lower()
        correct = extracted == target
        why = (
            f"the judge read the answer {extracted!r} out of the response; it "
            f"{'equals' if correct else 'differs from'} the lower-cased target {target!r}"
        )
        return [Score("judge", extracted, correct, float(correct), judged=True, explanation=why)]

    def answer_key(self, samples, options) -> list[dict]:
        return [
            {
                "kind": "judge",
                "marker": FIRST_LINE,
                "mode": "extract",
                "response_pattern": r"\[Response\]\n(.*)\n\[End of response\]",
                "reply_template": "{{answer}}",  # "{answer}" is replaced: "{x}"
                "none_reply": "{none}",
            }
        ]
