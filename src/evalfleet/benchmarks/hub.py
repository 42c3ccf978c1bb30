"""One loader for every benchmark's data: the Hugging Face Hub at a pinned revision, or a
local copy in any layout the Hub or `datasets` writes.

Rows come back as an Arrow table (`load_table`), or as dicts for a benchmark that declares
its `DatasetSource`, with media left undecoded (`{"bytes", "path"}` structs of the `Image` /
`Audio` features), so nothing here needs an image or audio codec. A local copy
is identified by a content fingerprint, a Hub load by the commit sha its revision resolved to
when read (`resolve_revision`; never a branch name): that is what the run identity records.

Local layouts, for a split (and, for multi-config datasets, a config):

- a single Parquet file (the path itself);
- `Dataset.save_to_disk` / `DatasetDict.save_to_disk` output, at the path or `<path>/<split>`;
- Parquet files at `<path>/<split>.parquet`, `<path>/<split>/*.parquet`,
  `<path>/data/<split>-*.parquet` or `<path>/<split>-*.parquet` (the Hub's own layouts);
- for a config, any of these under `<path>/<config>/`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalfleet.core.types import DatasetError

if TYPE_CHECKING:
    import pyarrow as pa

LAYOUTS = "a Parquet file, a directory of Parquet files, or save_to_disk output"


@dataclass(frozen=True)
class DatasetSource:
    """Where a benchmark's rows come from: a Hub dataset at a pinned revision (or a local copy
    of it), the columns every split must have, and what to tell a user whose copy cannot be
    read."""

    hf_path: str
    revision: str
    required: tuple[str, ...] = ()
    fix: str = ""

    def rows(
        self, split: str, dataset_path: str | Path | None = None, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """The first `limit` rows of one split (all of them for None) as dicts, in dataset
        order, media undecoded (`{bytes, path}`), and where they came from."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        table, source = load_table(
            self.hf_path,
            revision=self.revision,
            split=split,
            dataset_path=dataset_path,
            required=self.required,
            fix=self.fix,
        )
        if limit is not None:
            table = table.slice(0, limit)
        return table.to_pylist(), source


def load_table(
    hf_path: str,
    *,
    revision: str,
    split: str,
    dataset_path: str | Path | None = None,
    config: str | None = None,
    required: tuple[str, ...] = (),
    fix: str = "",
) -> tuple[pa.Table, str]:
    """The rows of one split (of one config) and a description of where they came from.

    Raises a one-line DatasetError naming the path, the problem and `fix` when the data
    cannot be read or lacks a `required` column.
    """
    fix = fix or f"pass {LAYOUTS} in the upstream schema"
    if dataset_path is None:
        revision = resolve_revision(hf_path, revision)  # read at the commit the run records
        table = _hub_table(hf_path, revision, split, config)
        source = f"{hf_path}@{revision}" + (f" config {config}" if config else "")
    else:
        path = Path(dataset_path)
        if config is not None and (path / config).exists():
            path = path / config
        table = _local_table(path, split, fix)
        source = f"dataset path {path}"
    missing = [c for c in required if c not in table.column_names]
    if missing:
        where = f"{source} split {split!r}"
        raise DatasetError(
            f"{where} lacks column(s) {', '.join(repr(c) for c in missing)} "
            f"(found: {', '.join(table.column_names)}): {fix}"
        )
    if table.num_rows == 0:
        raise DatasetError(f"{source} split {split!r} has no rows: {fix}")
    return table, source


def required_text(row: Mapping[str, Any], column: str, sample: str, fix: str) -> str:
    """A row's `column` as text, where the benchmark cannot do without it; a null there is
    refused naming `sample` ("question 'q1'"): `str(None)` would send "None" as a question,
    or grade answers against it."""
    value = row.get(column)
    if value is None:
        raise DatasetError(f"{sample} has no {column} (null): {fix}")
    return str(value)


def _hub_table(hf_path: str, revision: str, split: str, config: str | None) -> pa.Table:
    import datasets  # deferred: importing datasets is slow and local loads do not need it

    try:
        ds = datasets.load_dataset(hf_path, config, split=split, revision=revision)
    except Exception as exc:  # network, auth, unknown split: all mean "cannot load"
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatasetError(
            f"cannot load {hf_path}@{revision} split {split!r} from the Hugging Face Hub "
            f"({first}): check the network and HF_TOKEN, or pass a local copy with "
            "--dataset-path"
        ) from exc
    return ds.with_format("arrow")[:]


def _local_table(path: Path, split: str, fix: str) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.exists():
        raise DatasetError(f"dataset path {path} does not exist: {fix}")
    try:
        if path.is_file():
            if path.suffix != ".parquet":
                raise DatasetError(f"dataset path {path} is a file but not Parquet: {fix}")
            return pq.read_table(path)
        if (path / "dataset_dict.json").is_file():
            found = json.loads((path / "dataset_dict.json").read_text())["splits"]
            if split not in found:
                raise _no_split(path, split, found, fix)
            return _saved_table(path / split, None, fix)
        if (path / "state.json").is_file():
            return _saved_table(path, split, fix)
        if (path / split / "state.json").is_file():
            return _saved_table(path / split, None, fix)
        files = parquet_files(path, split)
        if not files:
            raise _no_split(path, split, _local_split_names(path), fix)
        return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
    except DatasetError:
        raise
    except (OSError, ValueError, TypeError, KeyError, pa.ArrowException) as exc:
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatasetError(
            f"dataset path {path} split {split!r} cannot be read ({first_line}): {fix}"
        ) from exc


def _saved_table(directory: Path, expected_split: str | None, fix: str) -> pa.Table:
    """A `Dataset.save_to_disk` folder: its `state.json` names the Arrow stream files that
    hold the rows, which pyarrow reads as they are (`datasets` itself costs a process
    100 MB and most of a second to import). A dataset saved with an indices mapping (rows
    selected but not copied) is read through `datasets`, which applies it."""
    import pyarrow as pa

    state = json.loads((directory / "state.json").read_text())
    split = state.get("_split")
    if expected_split is not None and split is not None and str(split) != expected_split:
        raise DatasetError(
            f"dataset path {directory} holds split {str(split)!r}, not {expected_split!r}: {fix}"
        )
    if state.get("_indices_data_files"):
        from datasets import Dataset

        return Dataset.load_from_disk(str(directory)).with_format("arrow")[:]
    if not state.get("_data_files"):  # what save_to_disk writes for a dataset of no rows
        raise DatasetError(f"dataset path {directory} has no rows (no data files): {fix}")
    tables = [  # memory-mapped: left open, as the table's buffers point into the maps
        pa.ipc.open_stream(pa.memory_map(str(directory / entry["filename"]))).read_all()
        for entry in state["_data_files"]
    ]
    return pa.concat_tables(tables) if len(tables) != 1 else tables[0]


def parquet_files(path: Path, split: str) -> list[Path]:
    """The Parquet files of `split` under a directory, in the layouts the module names."""
    single = path / f"{split}.parquet"
    if single.is_file():
        return [single]
    if (path / split).is_dir():
        return sorted((path / split).glob("*.parquet"))
    for folder in (path / "data", path):  # the Hub's shards: [data/]<split>-00000-of-00001
        shards = sorted(
            f
            for f in folder.glob(f"{split}-*.parquet")
            if f.name[len(split) + 1 : -len(".parquet")].replace("-of-", "").isdigit()
        )
        if shards:
            return shards
    return []


def _local_split_names(path: Path) -> list[str]:
    names = {f.stem for f in path.glob("*.parquet")}
    names |= {
        d.name
        for d in path.iterdir()
        if d.is_dir() and d.name != "data" and any(d.glob("*.parquet"))
    }
    names |= {f.name.split("-", 1)[0] for f in (path / "data").glob("*-*.parquet")}
    return sorted(names)


def _no_split(path: Path, split: str, found: list[str], fix: str) -> DatasetError:
    listed = ", ".join(found) if found else "none"
    return DatasetError(f"dataset path {path} has no split {split!r} (found: {listed}): {fix}")


def snapshot(hf_path: str, revision: str, dataset_path: str | Path | None) -> Path:
    """A directory holding the dataset's raw files (for datasets stored as JSON + images):
    the local copy as given, or a Hub snapshot at `revision`."""
    if dataset_path is not None:
        path = Path(dataset_path)
        if not path.is_dir():
            raise DatasetError(
                f"dataset path {path} is not a directory: pass a copy of {hf_path} "
                "with the same layout"
            )
        return path
    try:
        from huggingface_hub import snapshot_download

        revision = resolve_revision(hf_path, revision)  # the commit the run records
        return Path(snapshot_download(hf_path, repo_type="dataset", revision=revision))
    except Exception as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatasetError(
            f"cannot download {hf_path}@{revision} from the Hugging Face Hub ({first}): check "
            "the network and HF_TOKEN, or pass a local copy with --dataset-path"
        ) from exc


def replace_saved(path: str | Path) -> Path:
    """`path` made ready for `DatasetDict.save_to_disk`: a DatasetDict saved there before is
    removed; any other non-empty directory is left alone and raises FileExistsError."""
    target = Path(path)
    if target.exists() and any(target.iterdir()):
        if not (target / "dataset_dict.json").is_file():
            raise FileExistsError(
                f"{target} exists and is not a saved dataset: choose an empty or new directory"
            )
        shutil.rmtree(target)
    return target


def fingerprint(dataset_path: str | Path) -> str:
    """ "sha256:<hex>" over a local copy: every data file's relative path, size and content,
    in sorted path order (a single file: its name and content)."""
    root = Path(dataset_path)
    if not root.exists():
        raise DatasetError(
            f"dataset path {root} does not exist: check --dataset-path (a local copy's folder "
            "or Parquet file)"
        )
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if _is_data(p))
    digest = hashlib.sha256()
    for file in files:
        name = file.name if file == root else file.relative_to(root).as_posix()
        digest.update(f"{name}\0{file.stat().st_size}\0".encode())
        with file.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _is_data(path: Path) -> bool:
    """Files that hold the data (not `datasets`' cache files and locks written beside it)."""
    name = path.name
    return path.is_file() and not (name.startswith("cache-") or name.endswith(".lock"))


_SHA = re.compile(r"[0-9a-f]{40}")


@functools.lru_cache(maxsize=64)
def resolve_revision(hf_path: str, revision: str) -> str:
    """The commit sha `revision` of the Hub dataset `hf_path` names now (a sha is itself):
    what a run records, never a branch name, so two weekly runs on a moving `main` are seen
    to read different data. Asked once per process (`HfApi().dataset_info(...).sha`), so the
    load and the record agree; unreachable, one DatasetError line."""
    if _SHA.fullmatch(revision):
        return revision
    try:
        from huggingface_hub import HfApi

        sha = HfApi().dataset_info(hf_path, revision=revision).sha
    except Exception as exc:  # network, auth, unknown repo or revision
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DatasetError(
            f"cannot resolve {hf_path}@{revision} to a commit on the Hugging Face Hub "
            f"({first}): check the network and HF_TOKEN, or pass a local copy with "
            "--dataset-path"
        ) from None
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise DatasetError(
            f"the Hugging Face Hub named no commit for {hf_path}@{revision} (got {sha!r}): "
            "pin a commit sha, or pass a local copy with --dataset-path"
        )
    return sha


def revision_of(revision: str, dataset_path: str | Path | None, hf_path: str = "") -> str:
    """What a run records as its data's revision: for a Hub load the commit sha `revision`
    resolves to (`resolve_revision`; a branch name only where no `hf_path` is given), for a
    local copy its content fingerprint ("sha256:<hex>")."""
    if dataset_path is not None:
        return fingerprint(dataset_path)
    return resolve_revision(hf_path, revision) if hf_path else revision
