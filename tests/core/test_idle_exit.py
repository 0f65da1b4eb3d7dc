"""A long-idle core starts its next work ``idle_exit`` late (ovssim/cpu/pool.py); a busy one never does.

Measured on this machine (veth pings, all in the sender's softirq): 4 us every 0.1-0.3 ms, 55-57 us every
10-30 ms.  So: a ping every 10 ms pays the exit once per round trip; back-to-back work, and work on a core
idle for less than ``idle_exit_after``, pays nothing; the exit is latency, not CPU time.
"""
from __future__ import annotations

import numpy as np
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.cpu.pool import CpuPool
from ovssim.distributions import Sampler
from ovssim.profile import Profile
from ovssim.scenario import from_dict
from ovssim.runner import run_scenario

EXIT = 40e-6
AFTER = 4e-3


def _pool(cores=1, idle_exit=EXIT):
    return CpuPool(simpy.Environment(), cores, "h", idle_exit=Sampler(idle_exit, np.random.default_rng(1)),
                   idle_exit_after=AFTER)


def test_work_after_a_long_idle_waits_for_the_exit_and_back_to_back_work_does_not():
    p = _pool()
    assert p.serve(0.010, 5e-6, key=0) == 0.010 + EXIT + 5e-6      # idle since boot: 10 ms
    done = p.serve(0.010 + EXIT + 5e-6, 5e-6, key=0)                   # right behind it: hot
    assert done == 0.010 + EXIT + 10e-6
    t = done + AFTER * 0.5                                             # idle half the threshold
    assert p.serve(t, 5e-6, key=0) == t + 5e-6
    t2 = t + 5e-6 + AFTER                                              # idle exactly the threshold
    assert p.serve(t2, 5e-6, key=0) == t2 + EXIT + 5e-6
    assert p.idle_exits == 2
    assert abs(sum(p.busy) - 4 * 5e-6) < 1e-15                        # the exits are not CPU work


def test_each_core_has_its_own_idle_state():
    p = _pool(cores=2)
    p.serve(0.010, 5e-6, key=0)
    # core 1 never worked: it pays its own exit; core 0 is hot
    assert p.serve(0.010 + 50e-6, 5e-6, key=1) == 0.010 + 50e-6 + EXIT + 5e-6
    assert p.serve(0.010 + 50e-6, 5e-6, key=0) == 0.010 + 50e-6 + 5e-6


def test_off_by_default_or_at_zero_and_a_bad_threshold_refused():
    for p in (CpuPool(simpy.Environment(), 1, "h"), _pool(idle_exit=0.0)):
        assert p.serve(1.0, 5e-6, key=0) == 1.0 + 5e-6 and p.idle_exits == 0
    try:
        CpuPool(simpy.Environment(), 1, "h", idle_exit_after=0.0)
    except ValueError as e:
        assert "idle_exit_after" in str(e)
    else:
        raise AssertionError("idle_exit_after = 0 accepted")


def test_each_exit_draws_its_own_value():
    """A lognormal exit (the spaced pings' spread): successive exits differ, their mean is the law's."""
    draws = Sampler({"dist": "lognorm", "s": 0.25, "scale": "40us"}, np.random.default_rng(7))
    p = CpuPool(simpy.Environment(), 1, "h", idle_exit=draws, idle_exit_after=AFTER)
    t, waits = 0.0, []
    for _ in range(400):
        t += 0.010
        waits.append(p.serve(t, 1e-6, key=0) - 1e-6 - t)
    assert len(set(np.round(waits, 12))) > 300
    assert np.mean(waits) == __import__("pytest").approx(40e-6 * np.exp(0.25 ** 2 / 2), rel=0.05)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-7, 0.02), st.floats(1e-7, 50e-6)), min_size=1, max_size=30))
def test_completion_is_start_plus_work_plus_an_exit_exactly_when_the_core_idled_long(jobs):
    """Kiefer-Wolfowitz on one core with the exit: done = max(arrival, free [+ exit if idle >= after]) + work."""
    p = _pool()
    t = free = 0.0
    for gap, work in jobs:
        t += gap
        start = t if t >= free else free
        if t >= free and t - free >= AFTER:
            start += EXIT
        free = start + work
        assert abs(p.serve(t, work, key=0) - free) < 1e-12


def _ping_scenario(interval: str) -> dict:
    return {
        "scenario": {"name": "idle-exit", "duration": "0.5s", "reps": 1, "seed": 3},
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
        "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
               {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
        "workload": [{"name": "ping", "tool": "ping", "from": "a", "to": "b", "c": 40, "i": interval}],
    }


def _ping_rtt(interval: str, idle_exit: str) -> float:
    prof = Profile.load("default").with_overrides({"host.idle_exit": idle_exit, "host.stack_delay": "1us"})
    res = run_scenario(from_dict(_ping_scenario(interval), file="<test>"), profile=prof)
    df = res.per_rep
    return float(df[(df["workload"] == "ping") & (df["metric"] == "rtt_mean")]["value"].iloc[0]) * 1e-3


def test_spaced_pings_pay_the_exit_and_close_ones_do_not():
    """Through a Linux bridge between two containers: pings every 10 ms pay the exit once per round trip
    or more (each core the round trip touches woke from a long idle), pings every 1 ms only the first one's
    (the cores idle since the start): at most two exits over the 40 pings."""
    base10, base1 = _ping_rtt("10ms", "0us"), _ping_rtt("1ms", "0us")
    with10, with1 = _ping_rtt("10ms", "40us"), _ping_rtt("1ms", "40us")
    assert with10 - base10 >= 40e-6 - 1e-9
    assert 0.0 < with1 - base1 <= 2 * 40e-6 / 40 + 1e-12


def test_a_profile_refuses_a_zero_idle_threshold_with_one_clear_error():
    from ovssim.errors import ConfigError
    try:
        Profile.load("default").with_overrides({"host.idle_exit_after": "0us"}, source="--set")
    except ConfigError as e:
        assert "host.idle_exit_after" in str(e) and "above 0" in str(e)
    else:
        raise AssertionError("host.idle_exit_after = 0 accepted")
