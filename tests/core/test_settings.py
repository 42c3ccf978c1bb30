"""Every EVALFLEET_* setting is defined once (`core.settings`), read through it, and refused in
one line when its value is not one it takes; the docs' tables are the module's."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from evalfleet.core import settings
from evalfleet.core.settings import SettingError, check_all, flag_type

REPO = Path(__file__).resolve().parents[2]
CODE_ROOMS = ("cli", "flows", "stack", "reports", "engine", "tasks", "providers", "simulator")
CODE_ROOMS += ("benchmarks", "storage", "metrics", "core", "deployments")


def refusal(environ: dict[str, str]) -> str:
    with pytest.raises(SettingError) as caught:
        check_all(environ)
    return str(caught.value)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "EVALFLEET_HEARTBEAT_S",
            "abc",
            "EVALFLEET_HEARTBEAT_S=abc is not a number of seconds from 1 to 600; set it to one, "
            "such as 10, or unset it",
        ),
        (
            "EVALFLEET_HEARTBEAT_S",
            "0",
            "EVALFLEET_HEARTBEAT_S=0 is not a number of seconds from 1 to 600; set it to one, "
            "such as 10, or unset it",
        ),
        (
            "EVALFLEET_WORKER_PLACEMENT",
            "BOGUS",
            "EVALFLEET_WORKER_PLACEMENT=BOGUS is not one of SPREAD, DEFAULT; set it to one, such "
            "as SPREAD, or unset it",
        ),
        (
            "EVALFLEET_HOME",
            "/proc/nope",
            "EVALFLEET_HOME=/proc/nope is not a folder evalfleet can write or make (/proc/nope: "
            "No such file or directory); set it to one, such as ~/.evalfleet, or unset it",
        ),
        (
            "EVALFLEET_FSYNC",
            "maybe",
            "EVALFLEET_FSYNC=maybe is not one of 1, true, yes, 0, false, no (any case); set it "
            "to one, such as 1, or unset it",
        ),
        (
            "EVALFLEET_SIMULATOR_URL",
            "notaurl",
            "EVALFLEET_SIMULATOR_URL=notaurl is not an http:// or https:// URL with a host; set "
            "it to one, such as http://127.0.0.1:8765, or unset it",
        ),
        (
            "EVALFLEET_KEEP_FLOW_RUNS",
            "1e20",
            "EVALFLEET_KEEP_FLOW_RUNS=1e20 is not a whole number from 1 to 1000000; set it to "
            "one, such as 10, or unset it",
        ),
        (
            "EVALFLEET_CRASH_AFTER_S",
            "nan",
            "EVALFLEET_CRASH_AFTER_S=nan is not a whole number of seconds from 35 to 86400; set "
            "it to one, such as 90, or unset it",
        ),
        (
            "EVALFLEET_REEVALUATE_CRON",
            "every night",
            "EVALFLEET_REEVALUATE_CRON='every night' is not a cron schedule of five fields; set "
            "it to one, such as '0 3 * * *', or unset it",
        ),
        (  # a key is never repeated in a message
            "EVALFLEET_SIMULATOR_API_KEY",
            "sk secret",
            "EVALFLEET_SIMULATOR_API_KEY=(not shown) is not 1-200 characters without spaces; set "
            "it to one, such as simulator-key, or unset it",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting_and_the_fix(name, value, message):
    assert refusal({name: value}) == message


def test_a_folder_under_a_file_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("x")
    where = tmp_path / "file" / "home"
    assert refusal({"EVALFLEET_STACK": str(where)}) == (
        f"EVALFLEET_STACK={where} is not a folder evalfleet can write or make ({tmp_path}/file "
        "is a file); set it to one, such as ~/.evalfleet/stack, or unset it"
    )
    assert not where.exists()


def test_a_folder_that_can_be_made_is_taken_and_not_made(tmp_path):
    where = tmp_path / "a" / "b"
    check_all({"EVALFLEET_HOME": str(where)})
    assert settings.HOME.get({"EVALFLEET_HOME": str(where)}) == where
    assert list(tmp_path.iterdir()) == []  # the probe is gone, nothing made


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", True), ("TRUE", True), ("Yes", True), ("0", False), ("false", False), ("NO", False)],
)
def test_a_switch_takes_six_words_in_any_case(text, value):
    assert settings.FSYNC.get({"EVALFLEET_FSYNC": text}) is value
    assert settings.NO_LAUNCHER.get({"EVALFLEET_NO_LAUNCHER": text}) is value


def test_unset_or_empty_is_the_default_and_values_are_read_as_their_kind():
    assert settings.HEARTBEAT_S.get({}) == 10.0
    assert settings.HEARTBEAT_S.get({"EVALFLEET_HEARTBEAT_S": "  "}) == 10.0
    assert settings.HEARTBEAT_S.get({"EVALFLEET_HEARTBEAT_S": "2.5"}) == 2.5
    assert settings.CRASH_AFTER_S.get({"EVALFLEET_CRASH_AFTER_S": "35"}) == 35
    assert settings.WORKER_PLACEMENT.get({"EVALFLEET_WORKER_PLACEMENT": "default"}) == "DEFAULT"
    assert settings.SIMULATOR_URL.get({}) is None
    check_all({})  # every default is one it takes


def test_every_setting_refuses_what_no_setting_takes():
    """abc, -1, nan and 1e23 for each setting: refused, or (a text such as a key or a store)
    taken as it is."""
    texts = {"EVALFLEET_STORE", "EVALFLEET_SIMULATOR_API_KEY", "EVALFLEET_CODE_VERSION"}
    texts |= {"EVALFLEET_HOME", "EVALFLEET_STACK"}  # a folder may be named abc (made here)
    for setting in settings.ALL:
        for value in ("abc", "-1", "nan", "1e23"):
            if setting.name in texts:
                continue
            with pytest.raises(SettingError, match=rf"^{setting.name}="):
                setting.check({setting.name: value})


def test_the_crash_window_stays_above_the_flow_runs_heartbeat():
    from evalfleet.engine.store.heartbeat import FLOW_RUN_BEAT_S

    assert settings.CRASH_AFTER_S.kind.read(str(FLOW_RUN_BEAT_S + 5)) == FLOW_RUN_BEAT_S + 5
    with pytest.raises(ValueError):
        settings.CRASH_AFTER_S.kind.read(str(FLOW_RUN_BEAT_S + 4))


def test_a_flag_read_as_a_setting_names_its_range():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=flag_type(settings.number(int, 1, 65_536)))
    assert parser.parse_args(["--n", "7"]).n == 7
    with pytest.raises(
        argparse.ArgumentTypeError, match=r"^takes a whole number from 1 to 65536, not '1e23'$"
    ):
        flag_type(settings.number(int, 1, 65_536))("1e23")
    above = settings.number(float, 0, 86_400, above=True)
    assert above.expect == "a number above 0, at most 86400"
    assert settings.number(float, 0, None, above=True).expect == "a number above 0"


def test_the_docs_tables_are_the_modules():
    page = (REPO / "docs" / "reference" / "environment.md").read_text()
    for section in ("where", "how", "tests"):
        assert settings.markdown(section) in page, section
    documented = set(re.findall(r"^\| `(EVALFLEET_[A-Z_]+)`", page, re.MULTILINE))
    assert documented == {s.name for s in settings.ALL}


def test_no_code_reads_a_setting_but_through_the_module():
    """`os.environ` next to an EVALFLEET_ name is a second definition of a setting."""
    readers = []
    for room in CODE_ROOMS:
        for path in (REPO / room).rglob("*.py"):
            if path == REPO / "core" / "settings.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if "EVALFLEET_" in line and re.search(r"environ(\.get|\[)|getenv", line):
                    readers.append(f"{path.relative_to(REPO)}:{number}")
    assert readers == []
