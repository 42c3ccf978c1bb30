"""Hostile settings and numbers for the matrix (`tests/support/hostile.py`): every EVALFLEET_*
setting given what nobody should give it (abc, 0, -1, nan, 1e23, a folder that cannot be made),
every numeric flag given 1e23, and `judge` against a dead endpoint.

A value a setting refuses is tried under a real `run` of the base store: were it not refused
before anything runs, the run would write run `s1` (a change the matrix reports) and pay the
simulator. `EXPECTED` gives the start of the one line each refused case must print.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalfleet.core import settings
from evalfleet.core.settings import SettingError
from tests.support.hostile import BASE_RUN, JUDGE, MODELS, RUN, Case

HOSTILE_VALUES = ("abc", "0", "-1", "nan", "1e23")
UNMAKEABLE = ("/proc/nope", "{store}/" + BASE_RUN + "/manifest.json/home")  # under a file
DEAD = "http://127.0.0.1:9"  # the discard port: nothing listens there
HUGE = "1e23"
HUGE_INT = "1" + "0" * 23
REFUSED_RUN = (*RUN, "-m", MODELS[0], "--run-id", "s1")
JUDGE_ARGS = ("judge", BASE_RUN, "--judge", JUDGE, "--store", "{store}")
NOT_A_DATASET = "/nonexistent/dataset"  # a simulate flag not refused still ends at once

EXPECTED: dict[str, str] = {}  # case name -> the start of its one line on stderr


def _values(setting: settings.Setting) -> list[str]:
    if setting.kind is settings.FOLDER:  # any name is a folder that can be made
        return list(UNMAKEABLE)
    if setting is settings.SIMULATOR_API_KEY:  # any word is a key
        return ["two words"]
    if setting is settings.STORE:  # any word is a directory
        return ["two\nlines"]
    return list(HOSTILE_VALUES)


def _refused(setting: settings.Setting, value: str) -> bool:
    try:
        setting.get({setting.name: value.replace("{store}", "/tmp")})
    except SettingError:
        return True
    return setting.kind.check is not None  # a file or folder that is not there


def setting_cases() -> list[Case]:
    cases = []
    for setting in settings.ALL:
        for value in _values(setting):
            name = f"setting {setting.name}={value!r}"
            if not _refused(setting, value):  # taken: a command that reads the store runs
                cases.append(
                    Case(
                        name,
                        ("status", BASE_RUN, "--store", "{store}"),
                        must_show=("results",),
                        exit_codes=(0,),
                        env=((setting.name, value),),
                    )
                )
                continue
            EXPECTED[name] = f"error: {setting.name}="
            cases.append(Case(name, REFUSED_RUN, exit_codes=(2,), env=((setting.name, value),)))
    return cases


def _numeric_run_flags() -> list[str]:
    """Every run flag of a number: the request's numeric fields, as `cli.options` makes them."""
    from evalfleet.cli.field_flags import _base
    from evalfleet.cli.options import _flag, flag_names
    from evalfleet.engine.run.request import EvalRequest

    flags = []
    for name, info in EvalRequest.model_fields.items():
        if _base(info.annotation) in (int, float) and not _flag(info).composite:
            flags.append(flag_names(name, info)[0])
    return [*flags, "--keep-flow-runs"]


def flag_cases() -> list[Case]:
    """Each numeric flag of each command given 1e23 (and its digits): refused in one line
    with its range, before anything runs; a cost cap of 1e23 USD is a cap."""
    cases = []
    for flag in _numeric_run_flags():
        for value in (HUGE, HUGE_INT):
            name = f"run {flag} {value}"
            if flag == "--max-cost-usd":
                argv = (*RUN, "-m", MODELS[0], "--run-id", "n1", "--estimate", flag, value)
                cases.append(Case(name, argv, must_show=("total",), exit_codes=(0,)))
                continue
            EXPECTED[name] = f"error: {flag} takes "
            cases.append(Case(name, (*REFUSED_RUN, flag, value), exit_codes=(2,)))
    for option in ("--rpm", "--tpm"):
        name = f"run {option} MODEL={HUGE_INT}"
        EXPECTED[name] = f"error: {option} {MODELS[0]}=N takes N a whole number from 1 to "
        argv = (*REFUSED_RUN, option, f"{MODELS[0]}={HUGE_INT}")
        cases.append(Case(name, argv, exit_codes=(2,)))
    others = [
        (JUDGE_ARGS + ("--simulator-url", "{sim}"), "--keep-flow-runs"),
        (("up", "--state-dir", "{store}/stack"), "--port"),
        (("up", "--state-dir", "{store}/stack"), "--ray-nodes"),
        (("up", "--state-dir", "{store}/stack"), "--workers"),
        (("up", "--state-dir", "{store}/stack"), "--reevaluate-every"),
    ]
    others += [
        (("simulate", "--answers-for", NOT_A_DATASET), flag)
        for flag in ("--port", "--latency-ms", "--latency-jitter-ms", "--rpm", "--tpm")
        + ("--fail-first-n", "--hang-s", "--seed", "--reasoning-tokens", "--unformatted-rate")
        + ("--batch-completion-s", "--batch-line-failure-rate")
    ]
    for argv, flag in others:
        name = f"{argv[0]} {flag} {HUGE}"
        EXPECTED[name] = f"error: {flag} takes "
        cases.append(Case(name, (*argv, flag, HUGE), exit_codes=(2,)))
    return cases


def _recorded_simulator(url: str):
    def damage(store: Path) -> None:
        path = store / BASE_RUN / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["request"]["simulator_url"] = url
        path.write_text(json.dumps(manifest))

    return damage


def judge_cases() -> list[Case]:
    """`judge` against a dead endpoint, however it is named: one line, nothing written."""
    line = "error: judge anthropic/sim-0.9 at http://127.0.0.1:9 does not answer"
    cases = [
        Case("judge dead --simulator-url", (*JUDGE_ARGS, "--simulator-url", DEAD), exit_codes=(2,)),
        Case(
            "judge dead $EVALFLEET_SIMULATOR_URL",
            JUDGE_ARGS,
            exit_codes=(2,),
            env=(("EVALFLEET_SIMULATOR_URL", DEAD),),
        ),
        # the URL the run recorded (a demo's temporary simulator, gone with it)
        Case(
            "judge dead recorded simulator", JUDGE_ARGS, _recorded_simulator(DEAD), exit_codes=(2,)
        ),
    ]
    for case in cases:
        EXPECTED[case.name] = line
    return cases


def settings_cases() -> list[Case]:
    return [*setting_cases(), *flag_cases(), *judge_cases()]
