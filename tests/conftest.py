"""Session-wide real components: one local Ray, one Prefect server, one demo dataset.

Ray and the Prefect server each take 10-30 s to start on a 2-core machine and cost CPU while
they idle, so every test of every xdist worker shares one of each (tests/support/
shared_services.py); subprocesses join them through RAY_ADDRESS and PREFECT_API_URL.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import prefect.main  # noqa: F401  (see below)
import pytest

from tests.support import shared_services
from tests.support.leftovers import left_behind, remove_left_behind

pytest_plugins = ["tests.support.cpu_by_file"]  # CPU-seconds by file at the end of a run

# Importing prefect.main configures Prefect's console logging on the sys.stderr of that
# moment. Here, that is pytest's own stream for the whole session; done first inside a test
# that uses capsys, it would be that test's stream, closed once the test ends.

os.environ.setdefault("RAY_ACCEPT_CLUSTER_AUTH_TOKEN", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # as evalfleet's drivers (ray_session)
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault(
    "PREFECT_SERVER_ANALYTICS_ENABLED", "false"
)  # no telemetry from the test server
# never attach to a stack `evalfleet up` started on this machine (removed after the session)
os.environ["EVALFLEET_STACK"] = tempfile.mkdtemp(prefix="evalfleet-test-stack-")
shared_services.make_shared_folder()  # before xdist starts the workers, who inherit it
for _var in (
    "RAY_ADDRESS",
    "PREFECT_API_URL",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "EVALFLEET_SIMULATOR_URL",
):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session")
def ray_address():
    import ray

    address = shared_services.ray_address()
    ray.init(address=address)  # this worker is a driver of the session's Ray
    # Warm workers, as `evalfleet up --ray` keeps them (`tasks.pool`): a run of the session
    # borrows them instead of starting worker processes of its own, at ~2 CPU-s each.
    from evalfleet.engine.run.request import EvalRequest
    from evalfleet.tasks.pool import start_warm

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))  # each may run a run
    per_run = EvalRequest.model_fields["workers"].default
    shared_services.once("warm-workers", lambda: start_warm(workers * per_run))
    yield address
    ray.shutdown()


@pytest.fixture(scope="session")
def prefect_api_url():
    import prefect.context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tests.support.prefect_server import send_what_is_queued

    url = shared_services.prefect_api_url()
    # As a test harness points a process at its server: the settings, and the global settings
    # context that code in a context copied earlier reads.
    with (
        temporary_settings(updates={PREFECT_API_URL: url}),
        prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()),
    ):
        yield url
        send_what_is_queued()


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory) -> str:
    from evalfleet.benchmarks.zerobench.demo import write_demo_dataset

    return str(write_demo_dataset(tmp_path_factory.mktemp("data") / "zerobench"))


@pytest.fixture(scope="session")
def answer_key(demo_dataset, tmp_path_factory) -> Path:
    from evalfleet.benchmarks.answer_key import write_answer_key

    DEMO_BENCHMARKS = ["zerobench", "zerobench_subquestions"]

    path = tmp_path_factory.mktemp("answers") / "answers.jsonl"
    return write_answer_key(demo_dataset, DEMO_BENCHMARKS, path)


# The files that take longest, longest first (their worker time in a whole run of the suite,
# `--durations=0`, 2026-11-29 at e89e0a8's parent). xdist's `loadfile` hands out the files with
# the most tests first, so under `make test` these (most hold one or two tests) still run last;
# this order only decides among them, longest first so that the run does not end on one long
# file while the other workers wait (unlisted files come after every listed one: a long one
# left off ran last). Starting them first instead (`--no-loadscope-reorder`) was tried and was
# slower: with all of them side by side at the start, a 2-core host ran at a load of 12 to 20
# and `make test` took 2,725 s where it had taken about 900.
SLOW_FILES = (
    "test_stack.py",
    "test_docs_run.py",
    "test_smoke_team.py",
    "test_pool.py",
    "test_smoke_runs.py",
    "test_smoke_million.py",
    "test_smoke_commands.py",
    "test_smoke_chaos.py",
    "test_runner_storage.py",
    "test_interrupts.py",
    "test_damaged_store.py",
    "test_million.py",
    "test_wheel.py",
    "test_smoke_first_result.py",
    "test_names_and_numbers.py",
    "test_batch.py",
    "test_report_browser.py",
    "test_prefect_history.py",
    "test_money.py",
    "test_small_run.py",
    "test_damaged_state.py",
    "test_settings.py",
    "test_s3_resume.py",
    "test_interrupt_counts.py",
    "test_control_plane.py",
    "test_damaged_places.py",
    "test_write_failures.py",
    "test_extending_tutorial.py",
    "test_head_loss.py",
    "test_fleet_ratelimit.py",
    "test_services_environment.py",
    "test_launcher.py",
    "test_store.py",
    "test_failed_calls.py",
    "test_resume.py",
    "test_entry_point_benchmark.py",
    "test_node_loss.py",
    "test_judge.py",
    "test_s3_end_to_end.py",
    "test_leaderboard.py",
    "test_budget.py",
    "test_compare.py",
    "test_estimate_range.py",
    "test_billing.py",
    "test_reuse.py",
    "test_weekly_drift.py",
    "test_intervals.py",
    "test_run_identity.py",
    "test_export.py",
    "test_adhoc_endpoint.py",
    "test_datbench_end_to_end.py",
)


SLOW_FIXTURES = {"ray_address", "prefect_api_url"}


def pytest_collection_modifyitems(items):
    unmarked = [
        item.nodeid
        for item in items
        if SLOW_FIXTURES & set(item.fixturenames) and item.get_closest_marker("slow") is None
    ]
    if unmarked:  # `make test-fast` must not start Ray or a Prefect server
        raise pytest.UsageError(f"mark these tests slow (they start Ray or Prefect): {unmarked}")

    def rank(item) -> int:
        name = item.path.name
        return SLOW_FILES.index(name) if name in SLOW_FILES else len(SLOW_FILES)

    items.sort(key=rank)  # stable: the order within a file is kept


_BEFORE = left_behind()  # what the session must not remove (see tests/support/leftovers.py)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(os.environ["EVALFLEET_STACK"], ignore_errors=True)
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller clears up once every worker has ended
    spent = shared_services.stop_shared_services()
    if spent is not None:
        from tests.support.cpu_by_file import count_shared_services  # a plugin: imported late

        count_shared_services(spent)
    remove_left_behind(_BEFORE)


@pytest.fixture(scope="session")
def hostile_store(ray_address, prefect_api_url, demo_dataset, answer_key, tmp_path_factory):
    """The hostile matrix's base store (`tests/support/hostile.py`) and a simulator that stays
    up for the session: (store, the simulator's handle, its request log)."""
    from evalfleet.simulator.process import start_simulator
    from tests.support.hostile import SIMULATOR_CONFIG, build_base

    work = tmp_path_factory.mktemp("hostile")
    log = work / "requests.jsonl"
    with start_simulator(answer_key, SIMULATOR_CONFIG, log) as sim:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RAY_ADDRESS", ray_address)
            patch.setenv("PREFECT_API_URL", prefect_api_url)
            build_base(work / "base", demo_dataset, sim.url)
        yield work / "base", sim, log


@pytest.fixture
def session_services(ray_address, prefect_api_url, monkeypatch) -> None:
    """This test's commands join the session's Ray and Prefect server."""
    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    monkeypatch.setenv("PREFECT_API_URL", prefect_api_url)


@pytest.fixture(scope="module")
def moto_server():
    """A local S3 server (moto's, on 127.0.0.1) for a test module, with fake AWS credentials
    in the environment while it runs."""
    from tests.support.s3_server import MotoS3Server, apply_fake_aws_env

    with pytest.MonkeyPatch.context() as mp:
        apply_fake_aws_env(mp)
        server = MotoS3Server()
        server.start()
        try:
            yield server
        finally:
            server.stop()
