"""perf/million.py at 1/100 scale: a run of 10,008 answers survives a lost node and an outage.

One `evalfleet run` (a child process with its own temporary Prefect server) of 2 simulated
models x 834 ZeroBench-shaped questions x 6 epochs, on a Ray cluster of a head and two worker
nodes (`ray start`, as `evalfleet up --ray --ray-nodes 2`), at 200 ms latency and 1,024 in
flight. At 30 % of the answers one worker node is SIGKILLed with its raylet and workers; at
60 % the simulator is stopped and started again on its port. Then the simulator's request
log is checked against the store, exactly: no answer lost, none paid twice beyond the lost
node's in-flight calls (`resent`, apart), no item unfinished or ended as an error, one record
per item, and no process of the run left. The same code as the script (`first_run`).

The outage lasts 25 s, not the script's 60. What it tests is that calls wait and retry
through it within their limits: the default budget (6 attempts, at most 15.5 s of back-off)
ends the calls in flight as errors 8 to 16 s into an outage, so 25 s is already past it, and
the run is given the --max-attempts the script derives from the outage (9 for 25 s, 11 for
60 s). The other 35 s would only be more waiting.

On 2 cores: 148 s at a load of 2 to 4 from other work, 243 s at 8 to 11 (where the cluster's
start alone took about 45 s).
"""

from __future__ import annotations

import pytest

from perf.million import Options, World, attempts_to_outlast, first_run

pytestmark = pytest.mark.slow  # a Ray cluster of three nodes, a Prefect server, 10,008 calls


def test_a_run_of_ten_thousand_answers_loses_nothing_to_a_node_kill_and_an_outage(tmp_path):
    options = Options(scale=0.01, outage_s=25.0)
    with World(options, tmp_path) as world:
        run = first_run(world)
    counted = run.tally
    assert counted.items == options.items == 10_008
    assert (counted.lost, counted.repeated, counted.unfinished, counted.failed) == (0, 0, 0, 0)
    assert counted.stored == counted.items
    assert run.actors_on_lost_node >= 1 and run.worker_lost_lines >= 1  # the kill hit the run
    assert counted.answers == counted.items + counted.resent
    assert run.leftovers == []
    assert attempts_to_outlast(options.outage_s) > 6  # the outage outlasts the default budget
