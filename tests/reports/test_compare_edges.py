"""Issue 48 at compare, on identities and units built here: a greedy epoch-0 run and a
sampled one are not paired, with a one-line reason (case 8), the pool is the dataset the run
used (case 7), and the test compare prints is the one the leaderboard ranks by (case 2)."""

from __future__ import annotations

from types import SimpleNamespace

from evalfleet.core.types import Decoding
from evalfleet.engine.run.identity import BenchmarkIdentity, DataIdentity
from evalfleet.engine.store.manifest_types import DatasetInfo
from evalfleet.metrics.intervals import UnitValues
from evalfleet.metrics.paired import MCNEMAR, paired_test
from evalfleet.metrics.ranking import significance_ranks
from evalfleet.reports.compare import measure_mismatch, pool_of

DATA = DataIdentity("rev", 120, "f" * 64)
IDS = [f"q{i:03d}" for i in range(120)]


def asked(protocol: str, epochs: int) -> BenchmarkIdentity:
    return BenchmarkIdentity(DATA, protocol, tuple(Decoding() for _ in range(epochs)))


def units(epochs: int) -> UnitValues:
    return UnitValues.of(IDS, [0.5] * 120, [epochs] * 120)


def test_case_8_a_greedy_run_against_a_sampled_one_is_refused():
    why = measure_mismatch(
        "zerobench", asked("zerobench-paper", 5), asked("sampled-k", 5), units(1), units(5)
    )
    assert why == (
        "A was run under protocol zerobench-paper, B under sampled-k: they measure different "
        "things; compare runs of one protocol"
    )


def test_case_8_different_headline_epochs_are_refused():
    why = measure_mismatch("rome", asked("sampled-k", 4), asked("sampled-k", 2), units(4), units(2))
    assert why == (
        "A's headline is a mean over 4 epoch(s) a unit, B's over 2: they measure different "
        "things; compare runs with the same --epochs"
    )
    # epoch 0 alone under zerobench-paper: 5 epochs asked or 1, the headline reads one
    same = measure_mismatch(
        "zerobench", asked("zerobench-paper", 5), asked("zerobench-paper", 1), units(1), units(1)
    )
    assert same is None


def side(source: str, limit: int | None = None):
    manifest = SimpleNamespace(datasets={"zerobench": DatasetInfo(source=source)}, limit=limit)
    identity = SimpleNamespace(benchmarks={"zerobench": asked("zerobench-paper", 5)})
    return SimpleNamespace(manifest=manifest, identity=identity)


def test_case_7_the_pool_is_the_dataset_the_run_used():
    assert pool_of(side("dataset path /data/zb.jsonl"), "zerobench", 120) == 120
    assert pool_of(side("dataset path /data/zb.jsonl", limit=50), "zerobench", 50) is None
    assert pool_of(side("huggingface jonathan-roberts1/zerobench"), "zerobench", 40) == 100
    assert pool_of(side("huggingface jonathan-roberts1/zerobench"), "zerobench", 120) == 120


def test_case_2_compare_and_ranks_read_one_test():
    """Binary items where McNemar gives p = 0.0534 (issue 48's pair): compare prints it, and
    the rank does not call the pair apart, where the bootstrap interval [+0.008, +0.242]
    did."""
    a = [1.0] * 14 + [0.0] * 5 + [1.0] * 40 + [0.0] * 61
    b = [0.0] * 14 + [1.0] * 5 + [1.0] * 40 + [0.0] * 61
    ua, ub = UnitValues.of(IDS, a, binary=True), UnitValues.of(IDS, b, binary=True)
    test = paired_test(ua, ub)
    assert (test.name, test.only_a, test.only_b, round(test.p, 4)) == (MCNEMAR, 14, 5, 0.0636)
    assert [r.rank for r in significance_ranks([ua, ub])] == [1, 1]
    a2 = [1.0] * 15 + [0.0] * 4 + [1.0] * 40 + [0.0] * 61
    ua2 = UnitValues.of(IDS, a2, binary=True)
    assert paired_test(ua2, ub).p == 2 * (1 + 18 + 153 + 816 + 3060) / 2**18  # 14 vs 4
    assert [r.rank for r in significance_ranks([ua2, ub])] == [1, 2]
