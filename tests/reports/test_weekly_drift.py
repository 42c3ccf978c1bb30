"""Three weekly runs against the simulator: in week 2 one model's accuracy falls from 0.8 to 0.3
and its reported version changes, the other stays. `drift` flags the first only, a local
webhook gets exactly one POST naming it, and `history` lists three points per model.

The commands run in this process on the session's Ray and Prefect server (`session_services`):
as subprocesses without them, each weekly run started its own Ray head and Prefect server."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.benchmarks.answer_key import write_answer_key
from evalfleet.benchmarks.zerobench.dataset import upstream_features
from evalfleet.benchmarks.zerobench.demo import demo_questions
from evalfleet.core.types import ConfigError
from evalfleet.simulator.process import start_simulator
from tests.support.cli_here import evalfleet_here

STEADY, DRIFTY = "openai-compatible/steady", "openai-compatible/drifty"


def forty_questions(path: Path) -> str:
    """The demo's four main questions, ten variants each (their own texts: their own draws)."""
    from datasets import Dataset, DatasetDict

    main, subs = demo_questions()
    rows = [
        {**row, "question_id": f"{row['question_id']}v{k}"}
        | {"question_text": f"{row['question_text']} (variant {k})"}
        for k in range(10)
        for row in main
    ]
    features = upstream_features()
    splits = {"zerobench": rows, "zerobench_subquestions": subs}
    DatasetDict(
        {name: Dataset.from_list(r, features=features) for name, r in splits.items()}
    ).save_to_disk(str(path))
    return str(path)


class Receiver(BaseHTTPRequestHandler):
    posts: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.posts.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


evalfleet = evalfleet_here


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # three runs on the session's services, three drifts and a history
def test_three_weeks_flag_the_model_that_drifted_and_post_once(tmp_path, session_services):
    dataset = forty_questions(tmp_path / "data")
    key = write_answer_key(dataset, ["zerobench"], tmp_path / "answers.jsonl")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Receiver.posts.clear()
    hook = f"http://127.0.0.1:{server.server_address[1]}/hook"
    store = str(tmp_path / "runs")
    steady = {"match": "steady", "accuracy": 0.8}
    before = {"match": "drifty", "accuracy": 0.8}
    after = {"match": "drifty", "accuracy": 0.3, "system_fingerprint": "fp_v2"}
    drifts = []
    try:
        for week, rules in enumerate([[steady, before], [steady, after], [steady, after]], 1):
            config = {"models": ["steady", "drifty"], "rules": rules, "require_auth": False}
            with start_simulator(key, config, tmp_path / f"sim{week}.jsonl") as sim:
                done = evalfleet(
                    *("run", "-m", STEADY, "-m", DRIFTY, "--base-url", sim.url + "/v1"),
                    *("-b", "zerobench", "--dataset-path", dataset, "--protocol", "greedy"),
                    *("--epochs", "1", "--store", store, "--run-id", f"week{week}"),
                )
            assert done.returncode == 0, done.stderr[-2000:]
            if week == 2:  # a webhook that does not answer: one line, the table written
                dead = evalfleet(
                    "drift", "--store", store, "--notify", f"http://127.0.0.1:{closed_port()}/"
                )
                assert dead.returncode == 1
                assert dead.stderr.startswith("error: --notify http://127.0.0.1:")
                assert dead.stderr.strip().endswith(
                    "the drift table was written to leaderboard/drift.csv"
                )
            if week > 1:
                drifts.append(evalfleet("drift", "--store", store, "--notify", hook))
                assert drifts[-1].returncode == 0, drifts[-1].stderr[-2000:]
        history = evalfleet("history", DRIFTY, "--store", store)
    finally:
        server.shutdown()

    # week 2: the drifted model flagged, in both scoring modes; week 3: nothing
    table = f"{store}/leaderboard/drift.csv"
    said = "4 comparisons of a run with the one before it (by model, benchmark and scoring)"
    assert drifts[0].stdout.splitlines()[0] == f"{said}, 2 flagged: {table}"
    assert drifts[0].stdout.splitlines()[-1] == f"notified {hook}"
    assert drifts[1].stdout.splitlines() == [
        f"{said}, 0 flagged: {table}",
        "nothing flagged: nothing sent",
    ]
    assert len(Receiver.posts) == 1
    flagged = Receiver.posts[0]["flagged"]
    assert [(r["model"], r["scoring"]) for r in flagged] == [
        (DRIFTY, "upstream"),
        (DRIFTY, "robust"),
    ]
    for row in flagged:
        assert (row["run_before"], row["run_after"]) == ("week1", "week2")
        assert (row["before"], row["after"]) == (0.825, 0.375)  # 33 then 15 of 40 right
        assert row["changed"] and row["version_changed"] and not row["judge_changed"]
        assert row["high"] < 0 and row["p"] < 0.001 and row["test"] == "exact McNemar"
        assert (row["version_before"], row["version_after"]) == (
            "drifty fp_evalfleet_sim",
            "drifty fp_v2",
        )

    last = pd.read_csv(tmp_path / "runs" / table).set_index(["model", "scoring"])
    assert list(last.run_before) == ["week2"] * 4 and list(last.run_after) == ["week3"] * 4
    assert not last.changed.any() and not last.version_changed.any() and not last.flagged.any()
    assert list(last.loc[STEADY, "diff"]) == [0.0, 0.0]

    lines = history.stdout.splitlines()
    assert history.returncode == 0, history.stderr[-2000:]
    assert [line.split()[1] for line in lines if line.startswith("  20")] == [
        "week1",
        "week2",
        "week3",
    ] * 2
    assert sum("reported drifty fp_v2" in line for line in lines) == 4

    # the weekly re-run asks both models again on week 3's item set, fresh, in one dated run
    from evalfleet.reports.ranked import ranked_requests
    from evalfleet.storage import open_store

    (again,) = ranked_requests(open_store(store), [], "20261130")
    assert (again.run_id, again.models, again.reuse_from) == (
        "weekly-20261130",
        [DRIFTY, STEADY],
        [],
    )
    assert (again.benchmarks, again.dataset_path, again.protocol, again.epochs) == (
        ["zerobench"],
        dataset,
        "greedy",
        1,
    )
    assert sorted(again.endpoints) == [DRIFTY, STEADY]
    (one,) = ranked_requests(open_store(store), [STEADY], "20261130")
    assert one.models == [STEADY] and list(one.endpoints) == [STEADY]
    with pytest.raises(ConfigError, match="^no results of openai/nope in "):
        ranked_requests(open_store(store), ["openai/nope"], "20261130")

    # week 2's manifest damaged: drift pairs week1 with week3 and history lacks week2, and both
    # say so (without a word, the pair read as if week2 had never run)
    (tmp_path / "runs" / "week2" / "manifest.json").write_text("")
    damaged = f"{store}/week2/manifest.json is damaged (not JSON: Expecting value: line 1"
    for argv in (("drift", "--store", store), ("history", DRIFTY, "--store", store)):
        said = evalfleet(*argv)
        assert said.returncode == 0, said.stderr[-2000:]
        assert [line[: len("left out: ") + len(damaged)] for line in said.stderr.splitlines()] == [
            f"left out: {damaged}"
        ]
