"""ROME's LLM judge: upstream's grader prompt byte for byte, its verdict parse, and a robust one.

The prompt (`judge_prompt.txt`, 4528 characters, sha256 `PROMPT_SHA256`) is the string
ROME-evaluation sends, as Python evaluates its source: the ``\\f`` of ``\\frac`` is a form feed.
Its placeholders are filled with ``str.replace`` in upstream's order: the annotation's question,
its reference, then the raw answer (no extraction in judge mode). Sent with temperature 0,
top_p 1 and seed 42, as FlagEvalMM does.

Two judge scoring modes read the same reply:

- ``judge``: the last ``Judgement: 0|1`` of the reply; a reply without one is an error,
  counted apart, never a wrong answer;
- ``judge_upstream``: upstream's parse — drop ``Judgement:``, keep the last blank-line block,
  its first number (default 0) > 0.5.

Only the tasks named in the options are judged (upstream's official use is `diagrams`); the
others keep their `upstream` rule score in both modes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from evalfleet.benchmarks.interface import BenchmarkOptions, Judgement, JudgeSpec
from evalfleet.core.types import Decoding, Sample, Score

PROMPT = (Path(__file__).parent / "judge_prompt.txt").read_text(encoding="utf-8")
PROMPT_SHA256 = "2ff1eab0483ced07b1da036617798030f62bdb3e549bde611235104c7ae3cebd"
_FIRST_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
_JUDGEMENT = re.compile(r"Judgement:\s*\**\s*([01])(?![\d.])")


def grader_prompt(question: str, reference: object, answer: str) -> str:
    reference_text = reference if isinstance(reference, str) else json.dumps(reference)
    return (
        PROMPT.replace("{{question}}", question)
        .replace("{{answer}}", reference_text)
        .replace("{{extracted_answer}}", answer)
    )


def parse_upstream(content: str) -> int:
    text = content.replace("Judgement:", "").strip()
    if "\n\n" in text:
        text = text.split("\n\n")[-1].strip()
    match = _FIRST_NUMBER.search(text)
    return int(float(match.group(1) if match else "0") > 0.5)


def parse_robust(content: str) -> int | None:
    found = _JUDGEMENT.findall(content)
    return int(found[-1]) if found else None


class RomeJudge(JudgeSpec):
    scorings = ("judge", "judge_upstream")
    decoding = Decoding(temperature=0.0, top_p=1.0, max_tokens=4096, seed=42)
    reply_tokens = 8  # a line of reasoning and "Judgement: 1"

    def wants(self, sample: Sample, response: str, options: BenchmarkOptions) -> bool:
        return sample.metadata.get("task") in getattr(options, "judge_tasks", ())

    def prompt(self, sample: Sample, response: str) -> str:
        annotation = sample.metadata["annotation"]
        return grader_prompt(annotation["question"], annotation["reference"], response)

    def score(
        self,
        sample: Sample,
        response: str,
        options: BenchmarkOptions,
        judgement: Judgement | None,
    ) -> list[Score]:
        if judgement is None:  # not a judged task: the upstream rules decide
            from evalfleet.benchmarks.rome.scoring import rule_score

            rule = rule_score(sample, response, "upstream")
            why = f"not a judged task, so the rules decide: {rule.explanation}"
            return [
                Score(mode, rule.answer, rule.correct, rule.value, explanation=why)
                for mode in self.scorings
            ]
        if judgement.reply is None:
            error = judgement.error or "not judged"
            return [Score(m, None, False, 0.0, judged=True, error=error) for m in self.scorings]
        robust = parse_robust(judgement.reply)
        upstream = parse_upstream(judgement.reply)
        said = "the judge's reply, read by {} parser, gives Judgement: {}"
        return [
            Score("judge", None, False, 0.0, judged=True, error="unparsable verdict")
            if robust is None
            else Score(
                "judge",
                str(robust),
                robust == 1,
                float(robust),
                judged=True,
                explanation=said.format("our robust", robust),
            ),
            Score(
                "judge_upstream",
                str(upstream),
                upstream == 1,
                float(upstream),
                judged=True,
                explanation=said.format("upstream's", upstream),
            ),
        ]

    def answer_key(self, samples, options) -> list[dict]:
        return [
            {
                "kind": "judge",
                "marker": PROMPT.split("\n", 1)[0] + "\n\nYour task is to evaluate",
                "mode": "verdict",
                "response_pattern": r"\[Model Response\] : (.*)\n\Z",
                "reference_pattern": r"\[Ground Truth\]: (.*?)\n\[Model Response\]",
                "true_reply": "Reasoning: the answer matches the ground truth.\n\nJudgement: 1",
                "false_reply": "Reasoning: the answer differs from the ground truth.\n\n"
                "Judgement: 0",
            }
        ]
