"""A core's busy time per idle gap that delays no work (host.idle_busy; ovssim/cpu/pool.py).

A user-mode-Linux instance accounts 0.2-0.4 ms of CPU per wake-up from idle (data/uml/2026-11-28/uml-cpucost),
but a packet's softirq work does not wait for it (a blocking form would put FQ-CoDel's new-flow ping at
0.73-0.97 ms, measured 0.54).  Behaviour checked: the first ``idle_busy`` of every idle gap, and no more
than the gap, is added to ``busy``; completion times are exactly those without it; a periodic wake-up's CPU
share rises by rate x idle_busy in a whole simulation, and a probe's RTT does not move.
"""
import copy
from pathlib import Path

import numpy as np
import pytest
import simpy

from ovssim.path.cpu import CpuPool
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario
from ovssim.topology import ARP_SETTLE

W = 250e-6


def serve_all(arrivals, work, idle_busy):
    env = simpy.Environment()
    pool = CpuPool(env, 1, "uml", idle_busy=idle_busy)
    done = []
    for t in arrivals:
        env.run(until=t)
        done.append(pool.serve(t, work))
    return pool, done


def test_each_idle_gap_adds_at_most_idle_busy_and_delays_nothing():
    # gaps before each arrival (the core free again 10 us after each): 1 ms, 0.99 ms, 0.1 ms, none (queued)
    arrivals = [1e-3, 2e-3, 2.11e-3, 2.115e-3]
    work = 10e-6
    plain, d0 = serve_all(arrivals, work, 0.0)
    uml, d1 = serve_all(arrivals, work, W)
    assert d1 == d0                                   # nothing waits for it
    assert d1[2] == pytest.approx(2.11e-3 + work)      # work inside the previous gap's W starts at once
    gaps = [1e-3, 1e-3 - work, 2.11e-3 - (2e-3 + work)]   # the 4th arrives while the 3rd runs: no gap
    extra = sum(min(W, g) for g in gaps)
    assert uml.busy[0] - plain.busy[0] == pytest.approx(extra)
    assert uml.idle_busy_time == pytest.approx(extra)
    assert plain.busy[0] == pytest.approx(4 * work)


def test_a_negative_idle_busy_is_refused():
    with pytest.raises(ValueError, match="idle_busy"):
        CpuPool(simpy.Environment(), 1, "uml", idle_busy=-1e-6)


SCENARIO = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"


def run_ping(idle_busy: float):
    """A ping every 2 ms across a Linux bridge on a one-core host: each probe wakes the idle core."""
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = "1.1s"
    d["bridge"][0]["kind"] = "linux"
    d["host"][0]["cores"] = 1
    # no receive-stack latency: a probe's request and reply work then run back to back, one idle gap a probe
    d.setdefault("params", {}).update({"host.idle_busy": f"{idle_busy * 1e6}us", "host.stack_delay": "0us"})
    d["workload"] = [{"name": "ping", "tool": "ping", "from": "ns1", "to": "ns2", "i": "2ms", "c": 500}]
    res = run_scenario(d, reps=1, seed=7)
    cpu = float(res.per_rep.query("metric == 'cpu_util.local'")["value"].iloc[0])
    return cpu, np.asarray(res.samples["ping:rtt"])


def test_a_periodic_wake_up_costs_rate_times_idle_busy_and_no_latency():
    cpu0, rtt0 = run_ping(0.0)
    cpu1, rtt1 = run_ping(W)
    assert len(rtt0) == len(rtt1) == 500
    np.testing.assert_allclose(rtt1, rtt0)             # the probes wait for none of it
    # 500 probes, each idle gap (~2 ms) far above W, one gap a probe: the CPU share over the run (the ARP
    # settling time and the 1.1 s) rises by 500 x W / 1.105 s = 11.3 points
    assert cpu1 - cpu0 == pytest.approx(100 * 500 * W / (ARP_SETTLE + 1.1), rel=0.02)
