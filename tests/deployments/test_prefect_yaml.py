"""`deployments/prefect.yaml` declares, for a work pool, exactly the deployments that
`deployments/serve.py` serves: the same flows, names, schedules, parameters, limits and tags,
so that `up --pool` and `up` offer the same UI."""

from __future__ import annotations

import importlib
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def declared() -> dict[tuple[str, str], dict]:
    config = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    out = {}
    for entry in config["deployments"]:
        path, name = entry["entrypoint"].rsplit(".", 1)  # a module path
        module = importlib.import_module(path)
        out[(getattr(module, name).name, entry["name"])] = entry
    return out


@pytest.fixture(scope="module")
def served(monkeypatch_module) -> dict[tuple[str, str], object]:
    from evalfleet.deployments.serve import build_deployments

    return {(d.flow_name, d.name): d for d in build_deployments()}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        for name in (
            "EVALFLEET_REEVALUATE_REQUEST",
            "EVALFLEET_REEVALUATE_EVERY_S",
            "EVALFLEET_REEVALUATE_CRON",
            "EVALFLEET_BATCH_POLL_EVERY_S",
        ):
            mp.delenv(name, raising=False)
        yield mp


def test_the_same_deployments_with_the_same_entrypoints(declared, served):
    from evalfleet.stack.up import DEPLOYMENT_NAMES

    assert set(declared) == set(served)
    assert {f"{flow}/{name}" for flow, name in declared} == set(DEPLOYMENT_NAMES)
    for key, entry in declared.items():
        assert entry["entrypoint"] == served[key].entrypoint
        assert entry["tags"] == served[key].tags
        assert entry["description"] == served[key].description
        assert entry["work_pool"]["name"] == "evalfleet"


def test_schedules_limits_and_parameters_agree(declared, served):
    from evalfleet.engine.reevaluate import ReevaluateRequest

    for key, entry in declared.items():
        deployment = served[key]
        schedules = [s.schedule for s in deployment.schedules or []]
        mine = entry.get("schedules") or []
        assert len(mine) == len(schedules), key
        actives = [s.active for s in deployment.schedules or []]
        assert [wanted.get("active", True) for wanted in mine] == actives, key
        for wanted, schedule in zip(mine, schedules, strict=True):
            if "cron" in wanted:
                assert wanted["cron"] == schedule.cron
            else:
                assert timedelta(seconds=wanted["interval"]) == schedule.interval
        limit = entry.get("concurrency_limit")
        assert (limit or {}).get("limit") == deployment.concurrency_limit, key
        if limit:
            strategy = deployment.concurrency_options.collision_strategy
            assert limit["collision_strategy"] == strategy.value
    for name in ("reevaluate", "rerun-ranked"):
        asked = declared[("reevaluate", name)]["parameters"]["request"]
        assert (
            ReevaluateRequest(**asked).model_dump(mode="json", exclude_none=True)
            == (served[("reevaluate", name)].parameters["request"])
        )
    weekly = served[("reevaluate", "rerun-ranked")]
    assert weekly.parameters["request"]["mode"] == "ranked"
    assert [(s.schedule.cron, s.active) for s in weekly.schedules] == [("0 4 * * 1", False)]


def test_flow_runs_beat_as_the_crash_automation_expects():
    from evalfleet.engine.store.heartbeat import FLOW_RUN_BEAT_S

    config = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    env = config["definitions"]["work_pool"]["job_variables"]["env"]
    assert env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == str(FLOW_RUN_BEAT_S)
    pull = config["pull"][0]["prefect.deployments.steps.set_working_directory"]
    assert pull["directory"] == "{{ $EVALFLEET_CODE_DIR }}"
