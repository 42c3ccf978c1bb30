"""A second judge added to a finished ROME demo run (`evalfleet judge`): nothing is asked of
the evaluated models, exactly one judgement per judgeable answer goes to the new judge, its
judgements are kept and priced apart, and the agreement table matches the verdicts in the
samples table, worked out here."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest

from evalfleet.cli.main import main
from evalfleet.simulator.process import start_simulator
from tests.support.helpers import result_table

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack

FIRST, SECOND = "anthropic/sim-0.9", "openai/sim-0.8"  # the demo's judge, the one added


@pytest.fixture(scope="module")
def judged(ray_address, prefect_api_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("judge")
    runs = work / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ADDRESS", ray_address)
        patch.setenv("PREFECT_API_URL", prefect_api_url)
        patch.chdir(work)
        assert main(["demo", "-b", "rome", "--run-id", "rome", "--store", str(runs)]) == 0
        before = result_table(runs, "rome", "samples.parquet")
        log = work / "second.jsonl"
        answers = work / "demo-data" / "answers-rome.jsonl"
        with start_simulator(answers, {"latency": {"ms": 1}}, log) as sim:
            code = main(
                ["judge", "rome", "--judge", SECOND, "--simulator-url", sim.url]
                + ["--store", str(runs)]
            )
            again = main(["judge", "rome", "--judge", SECOND, "--store", str(runs)])
        assert code == 0
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    return runs, before, requests, again


def test_only_the_new_judge_is_asked_once_per_judgeable_answer(judged, capsys):
    runs, before, requests, again = judged
    judgeable = before[(before.scoring == "judge") & before.judged]
    assert len(judgeable) == 16  # the diagrams questions: 2 models x 2 questions x 4 epochs
    # every request came in the first `evalfleet judge`; the second found nothing left
    assert Counter(r["model"] for r in requests) == {"sim-0.8": len(judgeable)}
    assert all(r["status"] == 200 for r in requests)
    stored = list((runs / "rome" / "judgements" / "openai%2Fsim-0.8").rglob("*.json"))
    assert len(stored) == len(judgeable)
    manifest = json.loads((runs / "rome" / "manifest.json").read_text())
    assert manifest["identity"]["judge_model"] == FIRST
    assert manifest["identity"]["extra_judges"] == [SECOND]
    # the second `evalfleet judge` resumed the judge the first one added
    assert [h["event"] for h in manifest["history"]] == ["created", "extended", "resumed"]
    assert again == 0  # the same judge again resumes it: nothing is left, nothing is asked


def test_each_judge_is_scored_and_priced_apart(judged):
    runs, _, _, _ = judged
    samples = result_table(runs, "rome", "samples.parquet")
    scorings = set(samples.scoring)
    assert {"judge", "judge_upstream", f"judge@{SECOND}", f"judge_upstream@{SECOND}"} <= scorings
    judges = result_table(runs, "rome", "judges.parquet")
    per_judge = judges.groupby("judge")["judgements"].sum().to_dict()
    assert per_judge == {FIRST: 16, SECOND: 16}
    usage = result_table(runs, "rome", "usage.parquet")
    assert usage.judge_cost_usd.sum() == pytest.approx(judges.cost_usd.sum(), abs=1e-6)


def test_agreement_matches_the_verdicts_by_hand(judged):
    runs, _, _, _ = judged
    samples = result_table(runs, "rome", "samples.parquet")
    keys = ["model", "sample_id", "epoch"]

    def verdicts(scoring: str, judged_only: bool) -> pd.Series:
        rows = samples[(samples.scoring == scoring) & samples.score_error.isna()]
        if judged_only:
            rows = rows[rows.judged]
        return rows.set_index(keys).correct.astype(bool)

    first, second = verdicts("judge", True), verdicts(f"judge@{SECOND}", True)
    rules = verdicts("upstream", False)
    agreement = result_table(runs, "rome", "judge_agreement.parquet")
    for a, b, name_a, name_b in (
        (rules, first, "rules (upstream)", FIRST),
        (rules, second, "rules (upstream)", SECOND),
        (first, second, FIRST, SECOND),
    ):
        both = pd.concat([a, b], axis=1, join="inner").to_numpy()
        n = len(both)
        agree = sum(x == y for x, y in both) / n
        pa, pb = sum(x for x, _ in both) / n, sum(y for _, y in both) / n
        chance = pa * pb + (1 - pa) * (1 - pb)
        row = agreement[(agreement.rater_a == name_a) & (agreement.rater_b == name_b)].iloc[0]
        assert row.answers == n == 16
        assert row.agreement_pct == pytest.approx(100 * agree, abs=1e-3)
        assert row.kappa == pytest.approx((agree - chance) / (1 - chance), abs=1e-3)


def test_a_judge_with_a_bad_name_is_refused_before_the_run_changes(judged, capsys):
    """The name is checked before the manifest is read: one line naming the character,
    exit 2, not one stored byte changed (the run's identity keeps its two judges)."""
    runs, _, _, _ = judged
    before = {p: p.read_bytes() for p in (runs / "rome").rglob("*") if p.is_file()}
    capsys.readouterr()
    bad = "openai/sim-0.9<img src=x onerror=alert(1)>"
    assert main(["judge", "rome", "--judge", bad, "--store", str(runs)]) == 2
    assert capsys.readouterr().err == (
        f"error: judge {bad!r} has the character '<': a simulated model is "
        "sim-<accuracy>[-<tag>], the accuracy a number from 0 to 1 and the tag letters, digits "
        "and - . _ (e.g. openai/sim-0.5-think)\n"
    )
    after = {p: p.read_bytes() for p in (runs / "rome").rglob("*") if p.is_file()}
    assert after == before
