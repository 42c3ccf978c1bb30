"""ROME end to end: every evaluator, a multi-image and a Chinese question, three epochs, two
simulated models on two providers, the judge on the diagrams task; the mean ± std table, the
judge rows and upstream's per-epoch scores.json checked against the stored records by hand."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.benchmarks.rome.demo import demo_items, write_rome_demo
from evalfleet.benchmarks.rome.judge import parse_robust
from evalfleet.benchmarks.rome.scoring import score_annotation
from evalfleet.cli.main import main
from evalfleet.metrics.intervals import unit_mean_interval
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table, results_dir

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


MODELS = ["openai/sim-0.6", "anthropic/sim-0.7"]
JUDGE = "google/sim-0.9"


def std(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


@pytest.fixture(scope="module")
def rome_run(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("rome")
    dataset = str(write_rome_demo(work / "rome"))
    answers = write_answer_key(dataset, ["rome"], work / "answers.jsonl")
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        with start_simulator(answers, {"latency": {"ms": 1}}, work / "sim.jsonl") as sim:
            code = main(
                ["run", "-b", "rome", "--dataset-path", dataset, "--epochs", "3"]
                + ["--judge-model", JUDGE, "--run-id", "rome", "--store", str(runs)]
                + ["--simulator-url", sim.url]
                + [arg for model in MODELS for arg in ("-m", model)]
            )
    assert code == 0
    return runs


def records(runs: Path, kind: str) -> dict[tuple[str, str, int], dict]:
    out = {}
    for path in (runs / "rome" / kind).rglob("*.json"):
        record = json.loads(path.read_text())
        out[(record["model"], record["sample_id"], record["epoch"])] = record
    return out


def test_mean_and_std_over_epochs_by_hand(rome_run):
    annotations = {a["question_id"]: a for a in demo_items()}
    answers = records(rome_run, "completions")
    assert len(answers) == len(annotations) * 3 * len(MODELS)
    summary = result_table(rome_run, "rome", "summary_rome.parquet")
    for model in MODELS:
        per_epoch: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        tokens: dict[str, list[int]] = defaultdict(list)
        per_question: dict[str, list[float]] = defaultdict(list)
        for (m, qid, epoch), record in answers.items():
            if m != model:
                continue
            value = score_annotation(annotations[qid], record["response"], "upstream").value
            per_question[qid].append(value)
            for group in ("all", annotations[qid]["task"]):
                per_epoch[group][epoch].append(value)
                tokens[group].append(record["usage"]["output_tokens"])
        rows = summary[(summary.model == model) & (summary.scoring == "upstream")]
        assert rows.task.iloc[0] == "all"
        # the interval is over questions, each its mean over the epochs: a percentile
        # bootstrap of those means (the draws are checked by hand in tests/metrics)
        means = [sum(v) / len(v) for _, v in sorted(per_question.items())]  # by question id
        interval = unit_mean_interval(means)
        assert rows.ci95_pct_over_questions.iloc[0] == (
            f"{100 * interval.low:.1f}–{100 * interval.high:.1f}"
        )
        for row in rows.iloc[1:].itertuples():  # per task: over that task's questions
            task_means = [
                sum(v) / len(v)
                for qid, v in sorted(per_question.items())
                if annotations[qid]["task"] == row.task
            ]
            if len(task_means) == 1:
                assert row.ci95_pct_over_questions == "—, one question"
                continue
            task_interval = unit_mean_interval(task_means)
            assert row.ci95_pct_over_questions == (
                f"{100 * task_interval.low:.1f}–{100 * task_interval.high:.1f}"
            )
        assert set(rows.task) == {"all", *(a["task"] for a in annotations.values())}
        for row in rows.itertuples():
            accuracies = [sum(v) / len(v) for _, v in sorted(per_epoch[row.task].items())]
            mean, sd = 100 * sum(accuracies) / 3, 100 * std(accuracies)
            assert row.epochs == 3
            assert row.accuracy_mean_pct == pytest.approx(round(mean, 3), abs=1e-9)
            assert row.accuracy_std_pct_ddof1 == pytest.approx(round(sd, 3), abs=1e-9)
            # upstream's spread over epochs, labelled as such
            assert row.upstream_mean_std_over_epochs == f"{mean:.1f} ± {sd:.1f}"
            assert row.mean_output_tokens == pytest.approx(
                round(sum(tokens[row.task]) / len(tokens[row.task]), 1)
            )


def test_the_judge_grades_the_diagrams_only(rome_run):
    judgements = records(rome_run, "judgements")
    assert {key[1] for key in judgements} == {"diagrams_1", "diagrams_2"}
    assert len(judgements) == 2 * 3 * len(MODELS)
    samples = result_table(rome_run, "rome", "samples.parquet")
    judged = samples[samples.scoring == "judge"].set_index(["model", "sample_id", "epoch"])
    upstream = samples[samples.scoring == "upstream"].set_index(["model", "sample_id", "epoch"])
    for key, row in judged.iterrows():
        if key in judgements:
            verdict = parse_robust(judgements[key]["response"])
            assert row["judged"] and row["value"] == float(verdict)
        else:
            assert not row["judged"] and row["value"] == upstream.loc[key, "value"]
    usage = result_table(rome_run, "rome", "usage.parquet")
    assert usage.judgements.sum() == len(judgements)


def test_upstream_scores_json_per_model_scoring_and_epoch(rome_run):
    annotations = {a["question_id"]: a for a in demo_items()}
    answers = records(rome_run, "completions")
    folder = results_dir(rome_run, "rome") / "rome"
    for model in MODELS:
        for epoch in range(3):
            path = folder / model.replace("/", "__") / "upstream" / f"epoch-{epoch}"
            scores = json.loads((path / "scores.json").read_text())
            values = {}
            for qid, annotation in annotations.items():
                response = answers[(model, qid, epoch)]["response"]
                values[qid] = score_annotation(annotation, response, "upstream").value
            assert scores["final_score"] == [sum(values.values()), len(annotations)]
            assert scores["accuracy"] == round(sum(values.values()) / len(annotations) * 100, 3)
            spatial = [values["spatial_1"], values["spatial_2"]]
            assert scores["spatial"][:3] == [sum(spatial), 2, round(sum(spatial) / 2, 3)]
            updated = json.loads((path / "updated_predictions.json").read_text())
            assert [u["question_id"] for u in updated] == list(annotations)
            assert all(
                u["raw_answer"] == answers[(model, u["question_id"], epoch)]["response"]
                for u in updated
            )
