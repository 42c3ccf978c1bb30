"""What each script of `perf/` promises: the figures of its last line (the names its docstring
gives), and the values those figures must take at `--smoke` size where the size or the script's
own target fixes them. Shared by the fast check (every script imports, takes `--smoke`, and
names these figures) and the slow one (every script runs at `--smoke` and prints them)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
PERF = REPO / "perf"

# Imported or run by the benchmarks, not benchmarks themselves: no figures line, no --smoke.
HELPERS = {
    "work": "the work folder every script makes and removes",
    "synthetic": "a synthetic run for plan_scale, resume and aggregate_scale",
    "bare_client": "the bare asyncio client throughput and million run as a child process",
}

FIGURES: dict[str, tuple[str, ...]] = {
    "aggregate_scale": (
        "records",
        "aggregate_s",
        "report_s",
        "command_s",
        "aggregate_peak_mb",
        "with_workers_peak_mb",
    ),
    "chaos": ("lost", "repeated", "unfinished", "secrets", "errors_apart"),
    "coverage": (
        "coverage_wilson",
        "coverage_wald",
        "coverage_cluster_small",
        "coverage_wilson_p0_n500",
        "type1_clustered_paired",
        "fwer_ranks",
    ),
    "estimate_error": ("demo_estimate_error_pct", "batch_estimate_error_pct", "in_range"),
    "first_result": ("cold_s", "warm_s"),
    "hostile": (
        "cases",
        "tracebacks",
        "paid_unstored",
        "lost",
        "silent",
        "billed_unrecorded_usd",
    ),
    "million": (
        "items",
        "lost",
        "repeated",
        "resent",
        "unfinished",
        "items_per_s",
        "ratio_vs_bare",
        "driver_peak_mb",
        "worker_peak_mb",
        "aggregate_s",
        "aggregate_peak_mb",
        "report_open_s",
        "resume_first_request_s",
        "leaderboard_s",
        "runs_s",
    ),
    "plan_scale": ("plan_s", "driver_peak_mb", "bytes_per_item"),
    "prefect_db": ("runs", "keep", "flow_runs", "peak_mb", "full_mb", "db_mb"),
    "ratelimit": (
        "rpm_share",
        "tpm_share",
        "limiter_429s",
        "headers_rpm_share",
        "headers_429_share",
        "retune_s",
    ),
    "small_run": ("small_wall_s", "inspect_wall_s", "ratio"),
    "report_open": (
        "items",
        "report_open_s",
        "warm_open_s",
        "filter_s",
        "sort_s",
        "search_s",
        "heap_mb",
        "page_mb",
        "files_mb",
        "index_mb",
        "build_s",
        "build_peak_mb",
    ),
    "resume": (
        "plan_s_local",
        "read_back_s_local",
        "plan_s_s3",
        "list_floor_s3",
        "objects",
        "planned",
    ),
    "team": ("lost", "repeated", "crashed_marked_s", "resumed", "leftover_processes"),
    "throughput": (
        "items_per_s",
        "bare_items_per_s",
        "ratio_vs_bare",
        "overhead_ms_per_item",
        "cpu_ms_per_item",
    ),
}

# At --smoke: figures fixed by the size (counts), by a seed, or by the script's own target
# (nothing lost or paid twice, no traceback, nothing left running).
AT_SMOKE: dict[str, dict[str, float]] = {
    "aggregate_scale": {"records": 40},  # 2 models x 10 questions x 2 epochs
    "chaos": {"lost": 0, "repeated": 0, "unfinished": 0, "secrets": 0},
    "coverage": {"coverage_wilson": 0.955, "coverage_wald": 0.82},  # seed 0, 200 runs
    "estimate_error": {"in_range": 2},
    "hostile": {
        "cases": 4,
        "tracebacks": 0,
        "paid_unstored": 0,
        "lost": 0,
        "silent": 0,
        "billed_unrecorded_usd": 0,
    },
    "million": {"items": 108, "lost": 0, "repeated": 0, "unfinished": 0},  # 2 x 9 x 6
    "prefect_db": {"runs": 2, "keep": 1, "flow_runs": 1},
    "report_open": {"items": 80},  # 2 models x 20 questions x 2 epochs
    "resume": {"objects": 50, "planned": 100},
    "team": {"lost": 0, "repeated": 0, "resumed": 1, "leftover_processes": 0},
}

NEEDS_CHROMIUM = {"report_open", "million"}


def scripts() -> list[Path]:
    return sorted(PERF.glob("*.py"))


def benchmarks() -> list[str]:
    return [p.stem for p in scripts() if p.stem not in HELPERS]


def load(path: Path) -> ModuleType:
    """A perf script imported from its path as a module of its own, `main` not run. The
    script's own sys.path additions are undone (perf/ on the path would shadow packages:
    `coverage`)."""
    name = f"_perf_script_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path[:] = saved
    return module


def unresolved_imports(path: Path) -> list[str]:
    """Every import statement of a script, those inside functions too (most of them are:
    they run only when the script does), that names a module or a name that is not there.
    A bare module named like a perf script (`from synthetic import ...`) is that script."""
    missing = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            wanted = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            wanted = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module_name, name in wanted:
            where = f"{path.name}:{node.lineno}"
            try:
                module = _module(module_name)
            except Exception as exc:
                missing.append(f"{where}: import {module_name} ({type(exc).__name__}: {exc})")
                continue
            if name is not None and name != "*" and not _has(module, module_name, name):
                missing.append(f"{where}: from {module_name} import {name} (no such name)")
    return missing


def _module(name: str) -> ModuleType:
    if "." not in name and (PERF / f"{name}.py").exists():
        return load(PERF / f"{name}.py")
    return importlib.import_module(name)


def _has(module: ModuleType, module_name: str, name: str) -> bool:
    if hasattr(module, name):
        return True
    try:  # a submodule: `from evalfleet.storage import layout`
        importlib.import_module(f"{module_name}.{name}")
    except ImportError:
        return False
    return True
