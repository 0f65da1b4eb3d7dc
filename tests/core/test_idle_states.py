"""Idle states (ovssim/cpu/pool.py): a core idle from ``shallow_after`` reaches a shallow state, from
``idle_exit_after`` the deep one; each has its exit latency and cold start, as cpuidle's states have a target
residency and an exit latency (drivers/cpuidle).  Measured on this machine (validation/chain_ping/probe.sh at
13 spacings): the 1-bridge ping's RTT is a staircase over the spacing, 7-13 us up to 3 ms, 17-24 us at 4-8 ms,
64-68 us from 10 ms (data/local/2026-11-28-chainping/ping_gaps.txt).
"""
from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.cpu.pool import CpuPool
from ovssim.distributions import Sampler
from ovssim.fit.idle_states import three_levels
from ovssim.validate.cold import GAPS, idle_states, probe_rtts

SHALLOW, DEEP = 12e-6, 50e-6
SHALLOW_AFTER, DEEP_AFTER = 3.5e-3, 9e-3
WORK = 5e-6


def _pool(shallow_cold=1.0, deep_cold=1.0, shallow=SHALLOW):
    rng = np.random.default_rng(1)
    return CpuPool(simpy.Environment(), 1, "h", idle_exit=Sampler(DEEP, rng), idle_exit_after=DEEP_AFTER,
                   shallow_exit=Sampler(shallow, rng), shallow_after=SHALLOW_AFTER,
                   shallow_cold_factor=shallow_cold, cold_factor=deep_cold, cold_work=30e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 20e-3), min_size=1, max_size=12))
def test_each_idle_pays_the_exit_of_the_state_its_length_reaches(gaps):
    p = _pool()
    t = 0.0
    shallow = deep = 0
    for g in [DEEP_AFTER + 1e-3, *gaps]:          # the first work finds the core idle since boot
        start = t + g
        if g >= DEEP_AFTER:
            expect, deep = start + DEEP + WORK, deep + 1
        elif g >= SHALLOW_AFTER:
            expect, shallow = start + SHALLOW + WORK, shallow + 1
        else:
            expect = start + WORK
        t = p.serve(start, WORK, key=0)
        assert t == pytest.approx(expect, abs=1e-12)
    assert (p.shallow_exits, p.idle_exits) == (shallow, deep)
    assert sum(p.busy) == pytest.approx(WORK * (len(gaps) + 1))   # exits are latency, not CPU work


def test_each_state_has_its_own_cold_start():
    p = _pool(shallow_cold=1.5, deep_cold=3.0)
    done = p.serve(0.020, WORK, key=0)                       # deep: 5 us of work runs 3x slower
    assert done == pytest.approx(0.020 + DEEP + 3 * WORK)
    t = done + 5e-3                                          # shallow: 1.5x, a fresh budget
    done = p.serve(t, WORK, key=0)
    assert done == pytest.approx(t + SHALLOW + 1.5 * WORK)
    done2 = p.serve(done, WORK, key=0)                       # right behind: the same cold start goes on
    assert done2 == pytest.approx(done + 1.5 * WORK)
    t = done2 + 1e-3                                         # a short idle: no exit, the budget runs on
    assert p.serve(t, 30e-6, key=0) == pytest.approx(t + 30e-6 + 0.5 * 20e-6)
    assert sum(p.busy) == pytest.approx(3 * WORK + 1.5 * WORK * 2 + 40e-6)   # slowdowns are CPU work


def test_no_shallow_state_by_default_and_bad_thresholds_refused():
    p = CpuPool(simpy.Environment(), 1, "h", idle_exit=Sampler(DEEP, np.random.default_rng(1)),
                idle_exit_after=DEEP_AFTER)
    p.serve(0.0, WORK, key=0)
    assert p.serve(0.006, WORK, key=0) == pytest.approx(0.006 + WORK) and p.shallow_exits == 0
    for bad in (0.0, DEEP_AFTER, 2 * DEEP_AFTER):
        with pytest.raises(ValueError, match="shallow_after"):
            CpuPool(simpy.Environment(), 1, "h", idle_exit_after=DEEP_AFTER, shallow_after=bad)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 100.0), min_size=3, max_size=6),
       st.lists(st.floats(0.0, 100.0), min_size=1, max_size=6),
       st.lists(st.floats(0.0, 100.0), min_size=1, max_size=6))
def test_three_levels_finds_the_steps_of_a_staircase(a, b, c):
    """Runs well apart (each within 1, 50 between levels) split exactly where the levels change."""
    y = np.array([x / 100 for x in a] + [50 + x / 100 for x in b] + [100 + x / 100 for x in c])
    assert three_levels(y) == (len(a), len(a) + len(b))


def test_the_measured_staircase_has_its_steps_where_the_rtt_jumps():
    """On the probe's data the steps fall between the spacings where the 1-bridge RTT jumps by more than half
    the next level's height, and the shallow exit is what the shallow spacings add to the hot ping."""
    s = idle_states()
    one = {sp: np.mean(v) for (n, sp), v in probe_rtts(GAPS).items() if n == 1}
    below = [sp for sp in one if sp < s.shallow_after]
    middle = [sp for sp in one if s.shallow_after <= sp < s.deep_after]
    above = [sp for sp in one if sp >= s.deep_after]
    assert below and middle and above
    assert max(one[sp] for sp in below) < min(one[sp] for sp in above) / 2
    assert np.mean([one[sp] for sp in middle]) == pytest.approx(one[min(one)] + s.shallow_exit * 1e6)
    assert min(one[sp] for sp in above) > 2 * max(one[sp] for sp in middle)


def test_seed001_datapath_pass_falls_with_the_rate_by_the_cold_factor_where_the_gap_leaves_the_deep_state():
    """E001-03's trend from the idle states: a pass after a deep idle runs host.cold_factor x slower (it is
    shorter than host.cold_work), one after a shallow idle (shallow_cold_factor 1) at the warm cost; with the
    default profile (no idle states) the pass is the same at every rate."""
    from ovssim.profile import Profile
    from ovssim.validate.seed001 import RATES, pass_times, this_machine, trend

    prof = this_machine()
    deep_after, factor = prof.time("host.idle_exit_after"), prof.factor("host.cold_factor")
    meds = {label: us for label, _, us in trend(prof)}
    warm = [meds[l] for l, r, s in RATES if s * 8 / r < deep_after]
    cold = [meds[l] for l, r, s in RATES if s * 8 / r >= deep_after]
    assert warm and cold
    assert np.allclose(cold, factor * np.mean(warm), rtol=0.01)   # (the first packet finds a cold core anyway)
    flat = [float(np.median(pass_times(Profile.default(), r, s))) for _, r, s in RATES]
    assert np.allclose(flat, flat[0], rtol=1e-9)


def test_bad_idle_states_get_one_error_line():
    """A shallow state entered at or after the deep one, a [state] ladder figure that is no positive number, and
    a ladder whose shallow level is not above its hottest spacing are refused, each with a clear message."""
    from ovssim.errors import ConfigError
    from ovssim.fit.idle_states import idle_levels
    from ovssim.profile import Profile

    for bad in ("4ms", "10ms"):
        with pytest.raises(ConfigError, match="not below host.idle_exit_after"):
            Profile.default().with_overrides({"host.shallow_after": bad})
    Profile.default().with_overrides({"host.shallow_after": "3ms"})          # below the default 4 ms: fine
    with pytest.raises(ConfigError, match="not a positive number"):
        Profile({"profile": {"name": "t"}, "state": {"shallow_after_ms": "3"}}, base=Profile.default())
    with pytest.raises(ValueError, match="does not rise in steps"):
        idle_levels([(0.0005, 30.0, 20), (0.001, 5.0, 20), (0.002, 20.0, 20), (0.01, 60.0, 20)])
