"""Messages in the user's words (issue 29, item 8): a bad run id, option value or number is
named as the user typed it, in one line, exit 2, before anything is written or sent."""

from __future__ import annotations

import pytest

from evalfleet.cli.main import main

RULE = "a run id is 1-128 letters, digits, '.', '_' or '-', the first a letter or a digit"


@pytest.fixture
def store(tmp_path):
    """A store holding one file, to show that a refused command changes nothing."""
    runs = tmp_path / "runs"
    (runs / "kept").mkdir(parents=True)
    (runs / "manifest.json").write_text("{}")
    return runs


def files(root) -> dict:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("command", "run_id"),
    [
        (["aggregate", ".."], ".."),
        (["status", ".."], ".."),
        (["report", "../manifest.json"], "../manifest.json"),
        (["compare", "..", "kept"], ".."),
        (["compare", "kept", "../x@v-1:openai/sim-0.5"], "../x"),
        (["judge", "..", "--judge", "openai/sim-0.5"], ".."),
        (["status", "leaderboard"], None),
        (["datbench", "delta", "kept", "a b"], "a b"),
        (["run", "-m", "openai/sim-0.5", "--run-id", ".x"], ".x"),
    ],
)
def test_a_bad_run_id_is_named_as_a_run_id(command, run_id, store, capsys):
    before = files(store)
    assert main([*command, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    if run_id is None:
        expected = "run id 'leaderboard' is not valid: it is where the store keeps the leaderboard"
    else:
        expected = f"run id {run_id!r} is not valid: {RULE}"
    assert err == f"error: {expected}\n"
    assert files(store) == before


def test_demo_checks_its_run_id_before_it_writes_the_dataset(tmp_path, capsys, monkeypatch):
    from evalfleet.cli.demo import run_demo
    from evalfleet.core.types import ConfigError

    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--run-id", "../x", "--store", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == f"error: run id '../x' is not valid: {RULE}\n"
    with pytest.raises(ConfigError, match="run id 'a/b' is not valid"):
        run_demo(run_id="a/b", workdir=str(tmp_path / "demo-data"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "-m", "openai/sim-0.5", "--max-cost-usd", "abc"],
         "--max-cost-usd takes a number, not 'abc' (`evalfleet run --help` lists the options)"),
        (["run", "-m", "openai/sim-0.5", "--limit", "1.5"],
         "--limit takes a whole number from 1 to 100000000, not '1.5' (`evalfleet run --help` "
         "lists the options)"),
        (["run", "-m", "openai/sim-0.5", "--datbench-judge-layout", "x"],
         "--datbench-judge-layout: invalid choice: 'x' (choose from 'slots', 'append') "
         "(`evalfleet run --help` lists the options)"),
        (["up", "--port", "http"],
         "--port takes a whole number from 1 to 65535, not 'http' (`evalfleet up --help` lists "
         "the options)"),
        (["report"],
         "the following arguments are required: run_id (`evalfleet report --help` lists the "
         "options)"),
    ],
)  # fmt: skip
def test_a_malformed_option_is_one_line_not_the_usage(args, said, capsys):
    assert main(args) == 2
    assert capsys.readouterr().err == f"error: {said}\n"


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "1e400", "lots"])
def test_report_refuses_a_media_budget_that_is_no_size(value, store, capsys):
    before = files(store)
    assert main(["report", "kept", f"--media-mb={value}", "--store", str(store)]) == 2
    assert capsys.readouterr().err == (
        f"error: --media-mb takes a size in MB, 0 or more, not {value!r} (`evalfleet report "
        "--help` lists the options)\n"
    )
    assert files(store) == before


ROME_TASKS = "academic, diagrams, puzzles-games, memes, geo, recognition, multi-image, spatial"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["-b", "rome", "--rome-tasks", "bogus"],
         f"--rome-tasks: 'bogus' is not valid: use one of {ROME_TASKS}"),
        (["-b", "rome", "--rome-tasks", "academic,bogus"],
         f"--rome-tasks: 'bogus' is not valid: use one of {ROME_TASKS}"),
        (["-b", "rome", "--rome-judge-tasks", "diagram"],
         f"--rome-judge-tasks: 'diagram' is not valid: use one of {ROME_TASKS}"),
        (["-b", "omnibench", "--omnibench-text-alternatives", "video"],
         "--omnibench-text-alternatives: 'video' is not valid: use one of image, audio"),
        (["-b", "datbench", "--datbench-capabilities", "chart,charts"],
         "--datbench-capabilities: 'charts' is not valid: use one of chart, counting, document, "
         "general, grounding, math, scene, spatial, table"),
    ],
)  # fmt: skip
def test_a_benchmark_option_value_it_does_not_take_is_refused_with_the_valid_ones(
    flags, said, tmp_path, capsys
):
    runs = tmp_path / "runs"
    code = main(["run", "-m", "openai/sim-0.5", *flags, "--simulator-url", "http://127.0.0.1:9",
                 "--dataset-path", str(tmp_path / "none"), "--store", str(runs)])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == f"error: {said}\n"
    assert not runs.exists()


def test_the_request_names_a_bad_option_value_as_the_form_does():
    """The UI form and the deployments build the request without flags: the same refusal,
    the option named by its place in the request."""
    from pydantic import ValidationError

    from evalfleet.cli.errors import one_line
    from evalfleet.engine.run.request import EvalRequest

    with pytest.raises(ValidationError) as refused:
        EvalRequest(
            models=["openai/sim-0.5"],
            benchmarks=["rome"],
            benchmark_options={"rome": {"tasks": ["geo", "bogus"]}},
        )
    assert one_line(refused.value) == (
        f"invalid request: rome.tasks: 'bogus' is not valid: use one of {ROME_TASKS}"
    )
    with pytest.raises(ValidationError) as refused:
        EvalRequest(
            models=["openai/sim-0.5"],
            benchmarks=["rome"],
            benchmark_options={"rome": {"task": ["geo"]}},
        )
    assert one_line(refused.value) == (
        "invalid request: rome.task is not an option: use rome.annotations, rome.tasks, "
        "rome.judge_tasks"
    )
