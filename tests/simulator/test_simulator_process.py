"""The simulator as a child process (start_simulator) and its command line."""

from __future__ import annotations

import argparse
import json
import re
import socket
import urllib.request
from pathlib import Path

import openai
import pytest

from evalfleet.simulator import SimulatorStartError, draw_correct, prompt_sha256, start_simulator
from evalfleet.simulator.cli import add_arguments, build_config, main
from evalfleet.simulator.samples import write_answer_key

PROMPT = "How many legs does a spider have? Answer in braces."
SECRET = "sk-process-secret-987"


def test_start_simulator_serves_and_flushes_the_log_on_stop(tmp_path: Path) -> None:
    key = write_answer_key(tmp_path / "key.jsonl", [(PROMPT, "8")])
    log = tmp_path / "logs" / "requests.jsonl"
    config = {"latency": {"ms": 2}, "models": ["sim-0.7"]}
    with start_simulator(key, config, log_path=log, port=0) as sim:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", sim.url)
        assert sim.port > 0
        assert sim.openai_base_url == sim.url + "/v1"
        assert sim.log_path == log
        with urllib.request.urlopen(sim.url + "/health", timeout=5) as response:
            assert json.loads(response.read()) == {"status": "ok", "answers": 1, "in_flight": 0}
        client = openai.OpenAI(
            base_url=sim.openai_base_url,
            api_key=SECRET,
            max_retries=0,
            _strict_response_validation=True,
        )
        for seed in range(5):
            completion = client.chat.completions.create(
                model="sim-0.7", messages=[{"role": "user", "content": PROMPT}], seed=seed
            )
            expected = draw_correct("sim-0.7", prompt_sha256(PROMPT), seed, 0.7)
            assert completion.choices[0].message.content.endswith("{8}") is expected
        assert [m.id for m in client.models.list()] == ["sim-0.7"]
    lines = [json.loads(x) for x in log.read_text().splitlines()]  # written at shutdown
    assert [x["route"] for x in lines] == ["openai.chat"] * 5 + ["openai.models"]
    assert [x["seed"] for x in lines[:5]] == [0, 1, 2, 3, 4]
    assert all(x["auth"] is True and x["status"] == 200 for x in lines)
    assert SECRET not in log.read_text()


def test_in_flight_counts_the_requests_being_answered(tmp_path: Path) -> None:
    """What a test waits on before it interrupts a run: calls the server holds, not a guess."""
    import threading

    key = write_answer_key(tmp_path / "key.jsonl", [(PROMPT, "8")])
    with start_simulator(key, {"latency": {"ms": 1500}, "models": ["sim-0.7"]}) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key=SECRET, max_retries=0)
        messages = [{"role": "user", "content": PROMPT}]
        calls = [
            threading.Thread(
                target=client.chat.completions.create,
                kwargs={"model": "sim-0.7", "messages": messages, "seed": seed},
            )
            for seed in range(3)
        ]
        for call in calls:
            call.start()
        seen = 0
        while seen < 3 and any(call.is_alive() for call in calls):
            seen = max(seen, sim.in_flight())
        for call in calls:
            call.join()
        assert seen == 3
        assert sim.in_flight() == 0


def test_start_simulator_with_a_config_file_and_a_fixed_port(tmp_path: Path) -> None:
    config = tmp_path / "sim.yaml"
    config.write_text("require_auth: false\nmodels: [sim-0.1]\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with start_simulator(None, config, port=port) as sim:
        assert sim.port == port
        with urllib.request.urlopen(sim.url + "/v1/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "sim-0.1"


def test_start_simulator_reports_a_bad_answer_key(tmp_path: Path) -> None:
    with pytest.raises(SimulatorStartError, match="cannot read answer key"):
        start_simulator(tmp_path / "missing.jsonl")


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--answers", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read answer key") and err.count("\n") == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("latency: [unclosed\n")
    assert main(["serve", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot parse config") and err.count("\n") == 1
    assert main(["serve", "--fault", "bogus=1"]) == 2
    assert capsys.readouterr().err.startswith("error: --fault 'bogus=1'")
    assert main(["serve", "--latency-ms", "-5"]) == 2
    assert capsys.readouterr().err == (
        "error: argument --latency-ms: takes a number from 0 to 86400000, not '-5'\n"
    )


def test_cli_flags_override_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "sim.json"
    config.write_text(json.dumps({"port": 9000, "latency": {"ms": 5}, "seed": 3}))
    parser = argparse.ArgumentParser(prog="evalfleet simulate")
    add_arguments(parser)
    args = parser.parse_args(
        [
            "--config", str(config),
            "--latency-ms", "200",
            "--latency-jitter-ms", "20",
            "--rpm", "60",
            "--tpm", "100000",
            "--fault", "http_529=0.05",
            "--fault", "hang=0.01",
            "--fail-first-n", "1",
            "--models", "sim-0.2, sim-0.8-think",
            "--no-auth",
        ]
    )  # fmt: skip
    built = build_config(args)
    assert built.port == 9000 and built.seed == 3
    assert (built.latency.ms, built.latency.distribution, built.latency.jitter_ms) == (
        200,
        "uniform",
        20,
    )
    assert (built.requests_per_minute, built.tokens_per_minute) == (60, 100000)
    assert (built.faults.http_529, built.faults.hang, built.faults.fail_first_n) == (0.05, 0.01, 1)
    assert built.models == ["sim-0.2", "sim-0.8-think"]
    assert built.require_auth is False
