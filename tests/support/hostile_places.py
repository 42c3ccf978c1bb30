"""Damaged places and local state for the hostile matrix (`tests/support/hostile.py`): a path
of the wrong type where a run keeps a record or a folder, a folder that takes no new file, a
record that is a looping link, the temporary Prefect server's damaged history, and datasets
with a null answer or question or no rows.

Each is found before the first request: set aside under quarantine/ and asked once, or refused
in one line naming the path and the fix; a reader names it, or reads around it.

A folder made read-only for root needs `chattr +i` (root writes through modes): what a case
makes immutable is recorded, and `release(folder)` (also run at exit) makes it writable again
so the copy can be removed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.hostile import BASE_RUN, JUDGE, MODELS, RUN, Case, Damage

_IMMUTABLE: list[Path] = []
ANSWERS = f"{BASE_RUN}/completions"
RESUME = (*RUN, "-m", MODELS[0], "-m", MODELS[1], "--run-id", BASE_RUN)
RESUMED = (f"{BASE_RUN}/", "leaderboard/")  # what a resume of `base` may write


# --- damage --------------------------------------------------------------------------------


def _model_folder(store: Path, model: str = MODELS[0]) -> Path:
    return store / ANSWERS / model.replace("/", "%2F")


def _a_record(store: Path) -> Path:
    return sorted((_model_folder(store) / "zerobench").glob("*/*.json"))[0]


def folder_for_record(store: Path) -> None:
    """An empty folder where a record of `base` was."""
    record = _a_record(store)
    record.unlink()
    record.mkdir()


def looping_record(store: Path) -> None:
    """A record replaced by a link to itself."""
    record = _a_record(store)
    record.unlink()
    record.symlink_to(record.name)


def file_for_folder(relative: str) -> Damage:
    """`base`/`relative` (a folder) replaced by a file."""

    def apply(store: Path) -> None:
        path = store / BASE_RUN / relative
        if path.is_dir():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not a folder\n")

    return apply


def model_folder_a_file(store: Path) -> None:
    folder = _model_folder(store)
    shutil.rmtree(folder)
    folder.write_text("not a folder\n")


def sample_folder_a_file(store: Path) -> None:
    folder = _a_record(store).parent
    shutil.rmtree(folder)
    folder.write_text("not a folder\n")


def model_folder_read_only(store: Path) -> None:
    """One record of the model gone (there is something to ask), and its folder and all below
    it refusing new files."""
    _a_record(store).unlink()
    make_read_only(_model_folder(store))


def leaderboard_a_file(store: Path) -> None:
    folder = store / "leaderboard"
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.write_text("not a folder\n")


def make_read_only(folder: Path) -> None:
    """`folder` and everything below it refuse new files, for root too (`chattr +i`)."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-R", "+i", str(folder)], check=True, capture_output=True)
        _IMMUTABLE.append(folder)


def release(under: Path | None = None) -> None:
    """Make the folders `make_read_only` made (below `under`, or all) writable and removable."""
    for folder in list(_IMMUTABLE):
        if under is not None and not folder.is_relative_to(under):
            continue
        if folder.exists():
            subprocess.run(["chattr", "-R", "-i", str(folder)], capture_output=True)
            for path in [folder, *folder.rglob("*")]:
                if path.is_dir():
                    path.chmod(0o755)
        _IMMUTABLE.remove(folder)


atexit.register(release)


def _home(store: Path) -> Path:
    return Path(f"{store}.home")


def damaged_history(how: str) -> Damage:
    """A Prefect history beside the store (`EVALFLEET_HOME`): truncated or garbage."""

    def apply(store: Path) -> None:
        import sqlite3

        home = _home(store)
        home.mkdir(exist_ok=True)
        database = home / "prefect-runs.db"
        con = sqlite3.connect(database)
        con.execute("CREATE TABLE flow_run (id TEXT PRIMARY KEY, note TEXT)")
        con.executemany(
            "INSERT INTO flow_run VALUES (?, ?)", [(str(i), "x" * 500) for i in range(400)]
        )
        con.commit()
        con.close()
        whole = database.read_bytes()
        if how == "truncated":
            database.write_bytes(whole[: len(whole) // 2])
        else:
            database.write_bytes(bytes(range(256)) * (len(whole) // 256))

    return apply


def dataset_with(change: str) -> Damage:
    """A ZeroBench dataset beside the store (`{store}.data`, one Parquet file per split): the
    demo's questions with one answer null, one question null, or no rows at all."""

    def apply(store: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        from datasets import Dataset

        from evalfleet.benchmarks.zerobench.dataset import upstream_features
        from evalfleet.benchmarks.zerobench.demo import demo_questions

        rows, _ = demo_questions()
        if change == "null answer":
            rows[1]["question_answer"] = None
        elif change == "null question":
            rows[2]["question_text"] = None
        elif change == "no rows":
            rows = []
        folder = Path(f"{store}.data")
        folder.mkdir(exist_ok=True)
        features = upstream_features()
        if rows:
            table = Dataset.from_list(rows, features=features).data.table
        else:
            table = pa.Table.from_pylist([], schema=features.arrow_schema)
        pq.write_table(table, folder / "zerobench.parquet")

    return apply


# --- cases ---------------------------------------------------------------------------------


def places_cases() -> list[Case]:
    """Each damaged place under the commands that write or read it."""
    return [*_record_places(), *_folders(), *_local_state(), *_datasets()]


def _record_places() -> list[Case]:
    """Where a record belongs: a folder, a looping link. The run sets it aside under
    quarantine/ and asks its item once; readers count it undecodable."""
    cases = []
    aggregated = {  # a folder is not listed where aggregation lists: its item is missing
        "folder": "1 items have no record yet: run again with the same run id",
        "looping link": "1 stored records are undecodable",
    }
    for label, damage in (("folder", folder_for_record), ("looping link", looping_record)):
        tag = f"| record a {label}"
        cases += [
            Case(
                f"run resumed {tag}",
                RESUME,
                damage,
                RESUMED,
                ("tokens and cost",),  # and one request: tests/hostile/test_damaged_places.py
                (0,),
            ),
            Case(
                f"status {tag}",
                ("status", BASE_RUN, "--store", "{store}"),
                damage,
                must_show=("1 undecodable records count as missing",),
                exit_codes=(0,),
            ),
            Case(
                f"status --quarantine {tag}",
                ("status", BASE_RUN, "--quarantine", "--store", "{store}"),
                damage,
                (f"{BASE_RUN}/quarantine/", f"{BASE_RUN}/records-changed/")
                + (f"{BASE_RUN}/counts.json",),
                ("1 undecodable records",),
                (0,),
            ),
            Case(
                f"aggregate {tag}",
                ("aggregate", BASE_RUN, "--store", "{store}"),
                damage,
                (f"{BASE_RUN}/results/", f"{BASE_RUN}/counts.json", "leaderboard/"),
                (aggregated[label],),
                (0,),
            ),
            Case(
                f"report {tag}",
                ("report", BASE_RUN, "--store", "{store}"),
                damage,
                (f"{BASE_RUN}/results/",),
                ("report:",),
                (0,),
            ),
        ]
    return cases


def _folders() -> list[Case]:
    """Where a folder belongs: a file, or a folder that takes no new file. A run (or `judge`)
    is refused before its first request; readers name the path (results/, leaderboard/), or
    count the items below it missing and send to the run, which names it."""
    cases = [
        Case(
            "run resumed | completions/<model> a file",
            RESUME,
            model_folder_a_file,
            exit_codes=(2,),
        ),
        Case(
            "run resumed | a sample's folder a file",
            RESUME,
            sample_folder_a_file,
            exit_codes=(2,),
        ),
        Case(
            "run resumed | completions/<model> read-only",
            RESUME,
            model_folder_read_only,
            exit_codes=(2,),
        ),
        Case(
            "run extended | completions a file",
            (*RUN, "-m", MODELS[0], "-m", MODELS[1], "-m", "openai/sim-0.5")
            + ("--run-id", BASE_RUN, "--extend"),
            file_for_folder("completions"),
            exit_codes=(2,),
        ),
        Case(
            "judge | judgements a file",
            ("judge", BASE_RUN, "--judge", JUDGE, "--store", "{store}", "--simulator-url", "{sim}"),
            file_for_folder("judgements"),
            exit_codes=(2,),
        ),
    ]
    for folder in ("results", "quarantine", "plan", "ledger", "batches"):
        cases.append(
            Case(
                f"run resumed | {folder}/ a file", RESUME, file_for_folder(folder), exit_codes=(2,)
            )
        )
    results = file_for_folder("results")
    cases += [
        Case(
            "status | completions/<model> a file",
            ("status", BASE_RUN, "--store", "{store}"),
            model_folder_a_file,
            must_show=("results:",),
            exit_codes=(0,),
        ),
        Case(
            "aggregate | completions/<model> a file",
            ("aggregate", BASE_RUN, "--store", "{store}"),
            model_folder_a_file,
            (f"{BASE_RUN}/results/", f"{BASE_RUN}/counts.json", "leaderboard/"),
            ("items have no record yet: run again with the same run id",),
            (0,),
        ),
        Case(
            "aggregate | results/ a file",
            ("aggregate", BASE_RUN, "--store", "{store}"),
            results,
            exit_codes=(2,),
        ),
        Case(
            "report | results/ a file",
            ("report", BASE_RUN, "--store", "{store}"),
            results,
            (),
            exit_codes=(2,),
        ),  # fmt: skip
        Case(
            "status | results/ a file",
            ("status", BASE_RUN, "--store", "{store}"),
            results,
            (),
            exit_codes=(2,),
        ),  # fmt: skip
        Case(
            "compare | results/ a file",
            ("compare", f"{BASE_RUN}:{MODELS[0]}", f"{BASE_RUN}:{MODELS[1]}", "--store", "{store}"),
            results,
            exit_codes=(2,),
        ),
        Case(
            "leaderboard | results/ a file",
            ("leaderboard", "--store", "{store}"),
            results,
            ("leaderboard/",),
            ("Runs left out, and why", f"{BASE_RUN}/results"),
            (0,),
        ),
        Case(
            "leaderboard | leaderboard/ a file",
            ("leaderboard", "--store", "{store}"),
            leaderboard_a_file,
            exit_codes=(2,),
        ),
        Case(
            "aggregate | leaderboard/ a file",
            ("aggregate", BASE_RUN, "--store", "{store}"),
            leaderboard_a_file,
            (f"{BASE_RUN}/results/", f"{BASE_RUN}/counts.json"),
            ("the leaderboard was not updated", "leaderboard is a file", "results in"),
            (0,),
        ),
    ]
    return cases


def _local_state() -> list[Case]:
    """The temporary Prefect server's history, damaged: moved aside, a new one begins, the
    run goes on (its command starts its own server: PREFECT_API_URL empty)."""
    env = (("PREFECT_API_URL", ""), ("EVALFLEET_HOME", "{store}.home"))
    return [
        Case(
            f"run resumed | prefect-runs.db {how}",
            RESUME,
            damaged_history(how),
            RESUMED,
            ("prefect-runs.db was damaged", "moved to prefect-runs.db.damaged-"),
            (0,),
            env,
        )
        for how in ("truncated", "garbage")
    ]


def _datasets() -> list[Case]:
    """A dataset whose required field is null, or with no rows: refused at load, nothing
    asked."""
    argv = ("run", "-m", MODELS[0], "-b", "zerobench", "--epochs", "1")
    argv += ("--dataset-path", "{store}.data", "--store", "{store}", "--simulator-url", "{sim}")
    return [
        Case(
            f"run | dataset {change}",
            (*argv, "--run-id", "d1"),
            dataset_with(change),
            exit_codes=(2,),
        )  # fmt: skip
        for change in ("null answer", "null question", "no rows")
    ]
