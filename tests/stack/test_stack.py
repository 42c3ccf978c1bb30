"""The stack as a user runs it: `evalfleet up --ray`, runs through the Prefect API, the UI in
headless Chromium, a SIGKILLed flow run, a scheduled reevaluation, `evalfleet down`.

One stack serves the whole module (a Prefect server, the served deployments and a Ray head
take about 40 s to start here); the tests run in file order and the last one stops it.
Every process the stack starts carries EVALFLEET_TEST_TAG, so "nothing left behind" is checked
on the processes themselves. Screenshots go to tests/output/stack/ (gitignored).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from evalfleet.simulator.process import start_simulator
from evalfleet.stack.services import free_port
from tests.support.browser import close, headless_chromium
from tests.support.helpers import parse, results_dir, tagged_processes, wait_for_no_processes
from tests.support.stack import Stack, stack_env

pytestmark = pytest.mark.slow  # starts Ray, a Prefect server, a browser or a stack


REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "tests" / "output" / "stack"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, answer_key):
    root = tmp_path_factory.mktemp("stack")
    tag = f"stack-{os.getpid()}-{time.monotonic_ns()}"
    env = stack_env(
        root,
        tag,
        EVALFLEET_SCHEDULER_LOOP_S="5",  # the server's scheduler: schedules show up in seconds
        EVALFLEET_HEARTBEAT_S="2",
    )
    port = free_port()
    sim_log = root / "sim.jsonl"
    # half of sim-0.7's answers in prose: what ZeroBench's judge (the fallback parser) grades
    config = {"latency": {"ms": 1}, "rules": [{"match": "sim-0.7", "unformatted_rate": 0.5}]}
    with start_simulator(answer_key, config, sim_log) as sim:
        found = Stack(env, tag, f"http://127.0.0.1:{port}", root / "runs", sim.url, sim_log, root)
        up = found.cli("up", "--ray", "--port", str(port), "--store", str(found.store))
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"Prefect UI     http://127.0.0.1:{port}" in up.stdout
        yield found
        found.cli("down")  # the last test checks it; this is for when a test failed before
        wait_for_no_processes(tag, timeout_s=30)


def test_an_up_that_fails_part_way_leaves_nothing_behind(tmp_path, monkeypatch):
    """The deployments cannot start (their reevaluation request file is gone by the time
    they read it): the Prefect server and the Ray head this `up` started are stopped again,
    and said so; the head's session folder is removed, its logs kept in the state folder."""
    from evalfleet.stack.ray_cluster import ray_temp_dir
    from evalfleet.stack.services import ServiceError
    from evalfleet.stack.up import up

    tag = f"failed-up-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("EVALFLEET_TEST_TAG", tag)
    state = tmp_path / "state"
    settings = {"EVALFLEET_REEVALUATE_REQUEST": str(tmp_path / "gone.yaml")}
    with pytest.raises(ServiceError, match="the deployments' serve process exited while"):
        up(
            folder=str(state), port=free_port(), ray=True, store=str(tmp_path),
            serve_settings=settings,
        )  # fmt: skip
    assert wait_for_no_processes(tag, timeout_s=30) == []
    recorded = json.loads((state / "stack.json").read_text())
    assert (recorded["prefect"], recorded["serve"], recorded["ray"]) == (None, None, None)
    assert not ray_temp_dir(state).exists()
    assert "Raylet graceful shutdown" in (state / "ray-session-logs" / "raylet.out").read_text()


def zerobench_request(stack: Stack, demo_dataset: str, run_id: str, **extra) -> dict:
    return {
        "models": ["openai/sim-0.7"],
        "benchmarks": ["zerobench"],
        "dataset_path": demo_dataset,
        "epochs": 1,
        "run_id": run_id,
        "store": str(stack.store),
        "simulator_url": stack.sim_url,
        **extra,
    }


def test_up_is_idempotent_and_the_ui_knows_its_port(stack):
    again = stack.cli("up")
    assert again.returncode == 0, again.stderr
    for service in ("Prefect UI", "deployments", "Ray head"):
        line = next(x for x in again.stdout.splitlines() if x.strip().startswith(service))
        assert line.endswith("already running"), line
    # The UI asks the server it is served from, not port 4200 ("Oops. Something went wrong").
    with urllib.request.urlopen(f"{stack.ui}/ui-settings", timeout=10) as response:
        assert json.loads(response.read())["api_url"] == stack.api
    with urllib.request.urlopen(f"{stack.ui}/", timeout=10) as response:
        assert b"<div id=" in response.read()
    state = json.loads((stack.root / "state" / "stack.json").read_text())
    assert oct((stack.root / "state" / "stack.json").stat().st_mode & 0o777) == "0o600"
    assert {state[k]["pid"] for k in ("prefect", "serve", "ray")} <= {
        pid for pid, _ in tagged_processes(stack.tag)
    }
    automations = stack.call("/automations/filter", {})
    assert [a["name"] for a in automations] == [
        "evalfleet: crash flow runs whose heartbeats stopped"
    ]

    nightly = stack.deployment("reevaluate/reevaluate")
    assert [s["schedule"]["cron"] for s in nightly["schedules"]] == ["0 3 * * *"]
    assert nightly["global_concurrency_limit"]["limit"] == 1, nightly
    assert nightly["concurrency_options"]["collision_strategy"] == "CANCEL_NEW"
    form = stack.deployment("evaluate-and-aggregate/evaluate")["parameter_openapi_schema"]
    request = form["definitions"]["EvalRequest"]["properties"]
    assert request["store"]["default"] == str(stack.store)  # absolute, as `up --store` said
    registered = request["models"]["anyOf"][0]["items"]["enum"]
    assert "openai/sim-0.7" in registered and "anthropic/claude-sonnet-4-6" in registered
    assert request["benchmarks"]["items"]["enum"] == [
        "zerobench",
        "zerobench_subquestions",
        "omnibench",
        "rome",
        "datbench",
        "datbench_blind",
    ]
    assert request["protocol"]["enum"] == ["zerobench-paper", "sampled-k", "greedy"]
    undocumented = [name for name, field in request.items() if not field.get("description")]
    assert undocumented == []


def test_runs_through_the_api_fail_fast_or_complete_with_tables(stack, demo_dataset):
    # The server refuses parameters the form's schema refuses: nothing is created.
    bad_form = zerobench_request(stack, demo_dataset, "bad-form", epochs=0)
    with pytest.raises(urllib.error.HTTPError) as refused:
        stack.start_run("evaluate-and-aggregate/evaluate", bad_form)
    assert refused.value.code == 409
    assert "epochs" in refused.value.read().decode()

    # A configuration error the schema cannot see fails at once, with its line, not retried.
    unknown = zerobench_request(stack, demo_dataset, "bad", models=["openai/gpt-nonexistent"])
    failed = stack.wait(stack.start_run("evaluate-and-aggregate/evaluate", unknown))
    assert failed["state"]["name"] == "Failed"
    assert (
        "unknown model 'openai/gpt-nonexistent': add it to a copy of the shipped model "
        "registry (providers/models.yaml, see docs/models.md) and set EVALFLEET_MODELS="
        in failed["state"]["message"]
    )
    assert failed["run_count"] == 1
    took = datetime.fromisoformat(failed["end_time"]) - datetime.fromisoformat(failed["start_time"])
    assert took.total_seconds() < 5
    assert not (stack.store / "bad").exists()

    good = zerobench_request(stack, demo_dataset, "api")
    done = stack.wait(stack.start_run("evaluate-and-aggregate/evaluate", good))
    assert done["state"]["name"] == "Completed", done["state"]["message"]
    summary = pd.read_csv(results_dir(stack.store, "api") / "summary_zerobench.csv")
    assert set(summary["model"]) == {"openai/sim-0.7"}
    assert set(summary["n_questions"]) == {4}
    assert (results_dir(stack.store, "api") / "report.html").exists()

    # a judge added from the UI: the judge deployment's form is three fields
    judge = {"run_id": "api", "judge": "anthropic/sim-0.9", "simulator_url": stack.sim_url}
    judged = stack.wait(stack.start_flow("judge/judge", judge))
    assert judged["state"]["name"] == "Completed", judged["state"]["message"]
    manifest = json.loads((stack.store / "api" / "manifest.json").read_text())
    assert manifest["identity"]["judge_model"] == "anthropic/sim-0.9"
    samples = pd.read_parquet(results_dir(stack.store, "api") / "samples.parquet")
    assert set(samples.scoring) == {"upstream", "robust", "judge"}
    # the served leaderboard deployment rebuilds it in a flow run of its own
    (board,) = _until(lambda: leaderboard_with(stack, "api"), 180, "leaderboard with run api")
    assert set(board.loc[board["run_id"] == "api", "model"]) == {"openai/sim-0.7"}
    leaderboard_id = stack.deployment("leaderboard/leaderboard")["id"]

    def rebuilt_by_the_deployment() -> list:
        runs = stack.call("/flow_runs/filter", {"limit": 200})
        return [
            r
            for r in runs
            if r.get("deployment_id") == leaderboard_id
            and r["parameters"].get("store") == str(stack.store)
            and r["state"]["name"] == "Completed"
        ]

    _until(rebuilt_by_the_deployment, 180, "a completed leaderboard/leaderboard flow run")


def leaderboard_with(stack, run_id: str):
    """[the store's leaderboard] once it has rows of `run_id` (else [])."""
    path = stack.store / "leaderboard" / "leaderboard.parquet"
    if not path.exists():
        return []
    try:
        board = pd.read_parquet(path)
    except Exception:  # being rewritten
        return []
    return [board] if (board["run_id"] == run_id).any() else []


def test_evalfleet_run_attaches_to_the_running_stack(stack, demo_dataset):
    result = stack.cli(
        "run",
        "-m",
        "openai/sim-0.5",
        "-b",
        "zerobench",
        "--dataset-path",
        demo_dataset,
        "--epochs",
        "1",
        "--limit",
        "2",
        "--run-id",
        "attached",
        "--store",
        str(stack.store),
        "--simulator-url",
        stack.sim_url,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    state = json.loads((stack.root / "state" / "stack.json").read_text())
    where = f"Prefect {stack.ui}, Ray {state['ray']['address']}"
    assert f"using the running evalfleet stack ({where})" in result.stderr
    runs = [
        r
        for r in stack.call("/flow_runs/filter", {})
        if (r["parameters"].get("request") or {}).get("run_id") == "attached"
    ]
    assert [r["state"]["name"] for r in runs] == ["Completed"]
    # Forked by the stack's launcher, the run has the leaderboard rebuilt by another process
    # forked there: a flow run of the `leaderboard` flow, as the served deployment's.
    launcher_log = Path(state["launcher"]["log"])
    assert "`evalfleet run` for pid" in launcher_log.read_text()

    def rebuilt_by_the_launcher() -> list:
        return [
            r
            for r in stack.call("/flow_runs/filter", {"limit": 200})
            if r["parameters"].get("store") == str(stack.store)
            and r.get("deployment_id") is None
            and r["state"]["name"] == "Completed"
        ]

    _until(rebuilt_by_the_launcher, 180, "a completed leaderboard flow run, not a deployment's")
    assert "`evalfleet leaderboard` on its own pid" in launcher_log.read_text()
    (board,) = _until(lambda: leaderboard_with(stack, "attached"), 180, "run attached's rows")
    assert set(board.loc[board["run_id"] == "attached", "model"]) == {"openai/sim-0.5"}


def _browser():
    return headless_chromium(1400, 1100)


def _until(find, timeout: float = 30, what: str = "element"):
    """Poll `find` until it returns something; a page re-rendering under it is a miss."""
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while True:
        try:
            found = find()
        except StaleElementReferenceException:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.25)


def test_every_run_form_is_a_form(stack):
    """No run form of any deployment, in either of the UI's versions, draws a field as
    'Property is type "None"'; the Deployments page lists names that read alone."""
    from selenium.webdriver.common.by import By

    SHOTS.mkdir(parents=True, exist_ok=True)
    deployments = stack.call("/deployments/filter", {})
    assert sorted(d["name"] for d in deployments) == [
        "aggregate",
        "evaluate",
        "judge",
        "leaderboard",
        "limits",
        "poll-batches",
        "reevaluate",
        "rerun-ranked",
    ]
    driver = _browser()
    try:
        for deployment in deployments:
            for ui in ("", "/v2"):
                driver.get(f"{stack.ui}{ui}/deployments/deployment/{deployment['id']}/run")
                # the form is drawn once its first field's description shows
                _until(lambda: driver.find_elements(By.XPATH, "//*[text()='Parameters']"), 60)
                _until(lambda: "(Optional)" in driver.find_element(By.TAG_NAME, "body").text, 60)
                text = driver.find_element(By.TAG_NAME, "body").text
                assert "Property is type" not in text, (deployment["name"], ui)
        driver.get(f"{stack.ui}/v2/deployments")
        _until(lambda: "poll-batches" in driver.find_element(By.TAG_NAME, "body").text, 60)
        driver.save_screenshot(str(SHOTS / "deployments.png"))
    except BaseException:
        driver.save_screenshot(str(SHOTS / "failure.png"))
        raise
    finally:
        close(driver)


def test_the_run_form_in_a_browser(stack, demo_dataset):
    """From the exact address `up` printed (Prefect's default UI, under /v2/), as the docs
    say: Deployments, evaluate, Run, Custom run. The models are a drop-down of the
    registry's, every description shows all its words, each benchmark has its dataset-path
    field; the form starts a run. The same form in the first UI ('Switch to V1 UI')."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    deployment = stack.deployment("evaluate-and-aggregate/evaluate")
    form = deployment["parameter_openapi_schema"]["definitions"]["EvalRequest"]["properties"]
    registered = form["models"]["anyOf"][0]["items"]["enum"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver = headless_chromium(1400, 1000)
    try:

        def _shown(description: str) -> str:
            """As the first UI shows it (Markdown): code spans without their backticks;
            '<accuracy>' or '*/sim-*' would have lost words."""
            return " ".join(description.replace("`", "").split())

        def buttons(text: str):
            return [b for b in driver.find_elements(By.TAG_NAME, "button") if b.text == text]

        def click(element):
            driver.execute_script("arguments[0].scrollIntoView({block:'center'});", element)
            driver.execute_script("arguments[0].click();", element)
            time.sleep(0.3)

        def option(text: str):
            def matching():
                options = driver.find_elements(By.CSS_SELECTOR, "[role=option]")
                return [o for o in options if o.text == text]

            return _until(matching, 10, f"option {text}")[0]

        def optional_field(label: str, value: str) -> None:
            """A plain input (no tabs to choose its type first), found by its label."""
            found = driver.find_element(By.XPATH, f"//label[normalize-space()='{label}']")
            field = driver.find_element(By.ID, found.get_attribute("for"))
            assert field.tag_name in ("input", "textarea"), label
            driver.execute_script("arguments[0].scrollIntoView({block:'center'});", field)
            field.send_keys(value)

        def click_link(text: str) -> None:
            """Click the link; found again if the page re-rendered it (a stale element)."""
            found = f"//a[normalize-space()='{text}']"
            for attempt in range(5):
                element = _until(lambda: driver.find_elements(By.XPATH, found), 60, f"link {text}")[
                    0
                ]
                try:
                    click(element)
                    return
                except StaleElementReferenceException:
                    assert attempt < 4, f"the link {text} was re-rendered five times"

        def body() -> str:
            return driver.find_element(By.TAG_NAME, "body").text

        driver.get(stack.ui)  # exactly what `up` printed
        click_link("Deployments")
        assert driver.current_url.startswith(f"{stack.ui}/v2/deployments"), driver.current_url
        click_link("evaluate")
        custom = "//*[@role='menuitem'][.='Custom run']"
        for attempt in range(3):  # a click before the page is live opens no menu: again
            _until(lambda: buttons("Run"), 60, "the deployment's Run button")[0].click()
            try:
                _until(lambda: driver.find_elements(By.XPATH, custom), 10, "Custom run")[0].click()
                break
            except AssertionError:
                assert attempt < 2, "the Run button opened no menu after three clicks"
                driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        _until(lambda: buttons("Submit"), 60, "run form")
        _until(lambda: "Dataset Paths" in body(), 30, "the whole form")
        # every description, all its words (this UI shows them as plain text)
        text = body()
        assert [n for n, f in form.items() if f["description"] not in text] == []
        # the models: the registry's drop-down (the first tab), every registered model in it
        assert driver.find_element(By.XPATH, "//button[@role='tab'][.='registered']")
        click(driver.find_element(By.CSS_SELECTOR, "button[aria-label='Select registered']"))

        def model_options() -> list[str]:
            shown = [o.text for o in driver.find_elements(By.CSS_SELECTOR, "[role=option]")]
            return shown if set(registered) <= set(shown) else []

        assert sorted(_until(model_options, 10, "the registry's models")) == sorted(registered)
        assert "anthropic/claude-sonnet-4-6" in registered
        click(option("openai/sim-0.3"))
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        # the benchmarks' drop-down: drop the subquestions, keep zerobench
        wanted = set(form["benchmarks"]["items"]["enum"])

        def benchmark_options() -> list[str]:  # drawn a moment after the click, under load
            shown = [o.text for o in driver.find_elements(By.CSS_SELECTOR, "[role=option]")]
            return shown if wanted <= set(shown) else []

        for attempt in range(3):  # a click while the page still renders can open nothing
            click(driver.find_element(By.CSS_SELECTOR, "button[aria-label='Select Benchmarks']"))
            try:
                shown = _until(benchmark_options, 15, "benchmark options")
                break
            except AssertionError:
                assert attempt < 2, "the Benchmarks drop-down showed no options after three clicks"
        assert wanted <= set(shown)
        click(option("zerobench_subquestions"))
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        # a dataset-path field per benchmark, each a plain text input
        for name in form["dataset_paths"]["properties"]:
            found = driver.find_element(By.XPATH, f"//label[normalize-space()='{name} (Optional)']")
            field = driver.find_element(By.ID, found.get_attribute("for"))
            assert field.tag_name in ("input", "textarea"), name
        assert set(form["dataset_paths"]["properties"]) == wanted
        driver.execute_script("window.scrollTo(0, 0);")
        driver.save_screenshot(str(SHOTS / "form_models_and_benchmarks.png"))
        for label, value in {
            "zerobench (Optional)": demo_dataset,  # Dataset Paths: a field per benchmark
            "Epochs (Optional)": "1",
            "Run Id (Optional)": "browser",
            "Simulator Url (Optional)": stack.sim_url,
        }.items():
            optional_field(label, value)
        driver.save_screenshot(str(SHOTS / "form_filled.png"))

        def submitted() -> list:
            """The 'View run' toast (one query: reading every button's text takes seconds on
            a loaded machine, longer than the toast stays), else the flow run the form made."""
            view = "//*[self::a or self::button][normalize-space()='View run']"
            return driver.find_elements(By.XPATH, view) or [
                r["id"]
                for r in stack.call("/flow_runs/filter", {})
                if r["parameters"].get("request", {}).get("run_id") == "browser"
            ]

        # On a loaded machine a click may land while the form is still taking the last field
        # in, and nothing is submitted (the form stays, no error shown): submit again then,
        # once no flow run of the form exists.
        for attempt in range(3):
            click(buttons("Submit")[-1])
            try:
                found = _until(submitted, 45, "'View run' or the flow run after submitting")[0]
                break
            except AssertionError:
                driver.save_screenshot(str(SHOTS / f"not-submitted-{attempt}.png"))
                made = submitted()
                if made:
                    found = made[0]
                    break
                assert attempt < 2, "the form made no flow run after three submits"
        if isinstance(found, str):  # the toast came and went: open the run's page directly
            driver.get(f"{stack.ui}/runs/flow-run/{found}")
        else:
            click(found)
        _until(lambda: "/runs/flow-run/" in driver.current_url, 30, "flow run page")
        flow_run_id = driver.current_url.rstrip("/").split("/")[-1]

        def badge():
            badges = driver.find_elements(
                By.XPATH, "//*[normalize-space()='Completed' or normalize-space()='Failed']"
            )
            # A badge being drawn can be displayed with no text yet: not a state to read.
            texts = [b.text for b in badges if b.is_displayed()]
            return [text for text in texts if text.strip()]

        # the state badge (drawn twice on some layouts of the page), and never Failed
        assert set(_until(badge, 240, "a final state in the UI")) == {"Completed"}
        driver.save_screenshot(str(SHOTS / "finished_run.png"))
        # the first UI, at the same address: the same drop-down, the same words (a page
        # that already shows the first UI offers the switch back instead)
        switch = _until(
            lambda: buttons("Switch to V1 UI") or buttons("Switch to V2 UI"), 90, "a UI switch"
        )[0]
        if switch.text == "Switch to V1 UI":
            click(switch)
        driver.get(f"{stack.ui}/deployments/deployment/{deployment['id']}/run")
        _until(lambda: "Dataset Paths" in body(), 60, "the first UI's form")
        text = body()
        assert [n for n, f in form.items() if _shown(f["description"]) not in text] == []
        assert all(model in text for model in registered)
        assert "Property is type" not in text and "/v2/" not in driver.current_url
        driver.save_screenshot(str(SHOTS / "form_v1.png"))
    except BaseException:
        driver.save_screenshot(str(SHOTS / "failure.png"))  # what the page showed
        raise
    finally:
        close(driver)
    run = stack.call(f"/flow_runs/{flow_run_id}")
    assert run["state"]["name"] == "Completed"
    sent = run["parameters"]["request"]
    assert (sent["models"], sent["benchmarks"], sent["run_id"]) == (
        ["openai/sim-0.3"],
        ["zerobench"],
        "browser",
    )
    assert sent["dataset_paths"] == {"zerobench": demo_dataset}
    summary = pd.read_csv(results_dir(stack.store, "browser") / "summary_zerobench.csv")
    assert set(summary["model"]) == {"openai/sim-0.3"}


def _gone(pid: int) -> bool:
    """The process has ended (a zombie not yet reaped counts: it runs nothing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _completions(store: Path, run_id: str) -> list[Path]:
    folder = store / run_id / "completions"
    return [p for p in folder.rglob("*.json") if "failed" not in p.name]


def test_a_killed_flow_run_is_crashed_then_a_retry_resumes_it(stack, demo_dataset, answer_key):
    slow = {"latency": {"ms": 400}}
    with start_simulator(answer_key, slow, stack.root / "crash.jsonl") as sim:
        request = zerobench_request(
            stack, demo_dataset, "crash", epochs=6, max_in_flight=2, workers=1
        )
        request["simulator_url"] = sim.url
        flow_run_id = stack.start_run("evaluate-and-aggregate/evaluate", request)
        manifest = stack.store / "crash" / "manifest.json"
        _until(
            lambda: manifest.exists() and len(_completions(stack.store, "crash")) >= 4,
            180,
            "4 stored completions",
        )
        beat = json.loads(manifest.read_text())["heartbeat"]
        assert beat["state"] == "running" and beat["flow_run_id"] == flow_run_id
        os.kill(beat["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        _until(lambda: _gone(beat["pid"]), 30, "the killed flow run's process gone")
        runs = _until(
            lambda: (
                "crashed" in (out := stack.cli("runs", "--store", str(stack.store))).stdout
                and out.stdout
            ),
            60,
            "`evalfleet runs` showing the run crashed",
        )
        assert time.monotonic() - killed_at < 30
        line = next(x for x in runs.splitlines() if x.startswith("| crash "))
        assert "| crashed" in line
        crashed = stack.wait(flow_run_id, {"Crashed"}, timeout=60)
        assert crashed["state"]["type"] == "CRASHED"

        stored = [json.loads(p.read_text()) for p in _completions(stack.store, "crash")]
        assert 4 <= len(stored) < 28
        bought = {(r["sample_id"], r["request"]["seed"]) for r in stored}
        retried_at = time.time()
        retry = subprocess.run(
            [str(Path(sys.executable).with_name("prefect")), "flow-run", "retry", flow_run_id],
            env={**stack.env, "PREFECT_API_URL": stack.api},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert retry.returncode == 0, retry.stdout + retry.stderr
        # `retry` returns once the run is Scheduled again: no wait can see the old Crashed
        again = stack.wait(flow_run_id)
        assert again["state"]["name"] == "Completed", again["state"]["message"]
    log = [json.loads(x) for x in (stack.root / "crash.jsonl").read_text().splitlines()]
    after = [e for e in log if e["t"] >= retried_at]
    assert after, "the retry sent nothing"
    files = _completions(stack.store, "crash")
    items = Counter(
        (n.sample_id, n.epoch)
        for n in (parse("crash", str(p.relative_to(stack.store))) for p in files)
    )
    assert len(items) == 28 and set(items.values()) == {1}  # 4 questions x (1 + 6) epochs
    # the retry asked only for what was not stored: at most the 2 in flight at the kill again
    assert len(after) <= 28 - len(bought) + 2
    assert len(log) <= 28 + 2
    assert json.loads(manifest.read_text())["heartbeat"]["state"] == "finished"


def test_a_scheduled_reevaluation_evaluates_only_the_new_model(stack, demo_dataset, answer_key):
    port = free_port()
    request = {
        "include": {"openai": ["sim-0.[79]"]},
        "benchmarks": ["zerobench"],
        "dataset_path": demo_dataset,
        "epochs": 1,
        "store": str(stack.store),
        "simulator_url": f"http://127.0.0.1:{port}",
    }
    request_file = stack.root / "reevaluate.yaml"
    request_file.write_text(json.dumps(request))
    seen_key = stack.store / "_reevaluate" / "seen.json"
    before = {"models": ["sim-0.5", "sim-0.7"], "latency": {"ms": 1}}
    with start_simulator(answer_key, before, stack.root / "before.jsonl", port=port):
        up = stack.cli("up", "--reevaluate-every", "6", "--reevaluate-request", str(request_file))
        assert up.returncode == 0, up.stderr
        assert "restarted with the new settings" in up.stdout
        schedules = stack.deployment("reevaluate/reevaluate")["schedules"]
        assert [s["schedule"]["interval"] for s in schedules] == [6.0]
        _until(seen_key.exists, 120, "the first scheduled reevaluation (the baseline)")
    assert json.loads(seen_key.read_text()) == {"openai": ["sim-0.7"]}

    after = {"models": ["sim-0.5", "sim-0.7", "sim-0.9"], "latency": {"ms": 1}}
    latest = stack.store / "leaderboard" / "latest.json"
    with start_simulator(answer_key, after, stack.root / "after.jsonl", port=port):
        _until(
            lambda: json.loads(seen_key.read_text()) == {"openai": ["sim-0.7", "sim-0.9"]},
            180,
            "a scheduled reevaluation of the new model",
        )
    log = [json.loads(x) for x in (stack.root / "after.jsonl").read_text().splitlines()]
    generated = [e for e in log if not e["route"].endswith(".models")]
    assert Counter(e["model"] for e in generated) == {"sim-0.9": 8}  # 4 questions x 2 epochs
    assert len({(e["prompt_sha256"], e["seed"]) for e in generated}) == 8  # none bought twice

    def rebuilt_with_the_new_model():
        return latest.exists() and "openai/sim-0.9" in json.loads(latest.read_text())["models"]

    _until(rebuilt_with_the_new_model, 180, "the leaderboard rebuilt with openai/sim-0.9")
    board = pd.read_parquet(stack.store / "leaderboard" / "leaderboard.parquet")
    rows = board[board["benchmark"] == "zerobench"]
    newest = rows[rows["new"].astype(bool)]
    assert sorted(set(newest["model"])) == ["openai/sim-0.9"]
    assert "openai/sim-0.9" in json.loads(latest.read_text())["models"]
    scheduled = stack.call(
        "/flow_runs/filter",
        {"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}, "sort": "START_TIME_ASC"},
    )
    assert any(r["auto_scheduled"] for r in scheduled)


def test_a_run_links_to_its_flow_run_in_the_stack_ui(stack, demo_dataset):
    """With `evalfleet up` standing, the "View at" link a run prints is the stack's UI (not a
    temporary server's), and it opens on that flow run, Completed."""
    from selenium.webdriver.common.by import By

    result = stack.cli(
        "run", "-m", "openai/sim-0.3", "-b", "zerobench", "--dataset-path", demo_dataset,
        "--epochs", "1", "--limit", "1", "--run-id", "linked",
        "--store", str(stack.store), "--simulator-url", stack.sim_url,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (run,) = [
        r
        for r in stack.call("/flow_runs/filter", {})
        if (r["parameters"].get("request") or {}).get("run_id") == "linked"
    ]
    links = re.findall(r"View at (\S+)", result.stdout + result.stderr)
    assert links == [f"{stack.ui}/runs/flow-run/{run['id']}"]
    driver = headless_chromium(1400, 1000)
    try:
        driver.get(links[0])

        def shown() -> bool:
            text = driver.find_element(By.TAG_NAME, "body").text
            return run["name"] in text and "Completed" in text

        _until(shown, 60, "the flow run's page, Completed")
        assert driver.current_url.startswith(stack.ui)
    finally:
        close(driver)
    _until(lambda: leaderboard_with(stack, "linked"), 180, "run linked's rows")  # done before down


def test_down_stops_everything_it_started(stack):
    assert tagged_processes(stack.tag), "the stack's processes carry the test tag"
    down = stack.cli("down")
    assert down.returncode == 0, down.stderr
    for service in ("deployments (serve)", "Ray head", "Prefect server"):
        assert f"{service}" in down.stdout and "stopped (pid" in down.stdout
    assert wait_for_no_processes(stack.tag, timeout_s=30) == []
    assert not (stack.root / "state" / "stack.json").exists()
    assert not (stack.root / "state" / "runners").exists()  # Prefect's runner storage with it
    again = stack.cli("down")
    assert "nothing to stop" in again.stdout
