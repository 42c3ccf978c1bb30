"""DatBench's judge rows (`eval_mode == "judge"`), graded by the run's judge model through the
judge stage: the row's own prompt (rewritten and filled, `judge_prompt`), the verdict from the
last `answer:`. Direct rows keep their rule score in the judge mode."""

from __future__ import annotations

from evalfleet.benchmarks.datbench import judge_prompt
from evalfleet.benchmarks.datbench.dataset import scorer_input
from evalfleet.benchmarks.interface import BenchmarkOptions, Judgement, JudgeSpec
from evalfleet.core.types import Decoding, Sample, Score


class DatBenchJudge(JudgeSpec):
    scorings = ("judge",)
    decoding = Decoding(temperature=0.0, top_p=1.0, max_tokens=1024, seed=42)
    reply_tokens = 3  # "answer: true"

    def wants(self, sample: Sample, response: str, options: BenchmarkOptions) -> bool:
        return sample.metadata.get("eval_mode") == "judge"

    def prompt(self, sample: Sample, response: str) -> str:
        return judge_prompt.fill(
            sample.metadata["judge_template"],
            question=sample.metadata["question"],
            ground_truth=sample.target,
            response=response,
        )

    def score(
        self,
        sample: Sample,
        response: str,
        options: BenchmarkOptions,
        judgement: Judgement | None,
    ) -> list[Score]:
        if judgement is None:  # a direct row: the default rules decide
            from evalfleet.benchmarks.datbench import scoring

            inputs = scorer_input(sample)
            details = scoring.score(inputs, response, compat=False)
            why = (
                f"a direct row, so the rules decide: DatBench scorer "
                f"{scoring.scorer_name(inputs.dataset)} read {details.answer!r}: score "
                f"{details.score:g}"
            )
            score = float(details.score)
            return [Score("judge", details.answer, details.is_correct, score, explanation=why)]
        if judgement.reply is None:
            return [Score("judge", None, False, 0.0, judged=True, error=judgement.error)]
        verdict = judge_prompt.verdict(judgement.reply)
        if verdict is None:
            return [Score("judge", None, False, 0.0, judged=True, error="unparsable verdict")]
        why = f"the judge's verdict: {'correct' if verdict else 'incorrect'}"
        verdict_text = str(verdict).lower()
        return [Score("judge", verdict_text, verdict, float(verdict), judged=True, explanation=why)]

    def answer_key(self, samples, options) -> list[dict]:
        entries = []
        seen = set()
        for sample in samples:
            template = sample.metadata.get("judge_template")
            if not template or template in seen:
                continue
            seen.add(template)
            response, reference = judge_prompt.simulator_patterns(template)
            entries.append(
                {
                    "kind": "judge",
                    "marker": template.split("\n", 1)[0][:80],
                    "mode": "verdict",
                    "response_pattern": response,
                    "reference_pattern": reference,
                    "true_reply": "answer: true",
                    "false_reply": "answer: false",
                }
            )
        return entries
