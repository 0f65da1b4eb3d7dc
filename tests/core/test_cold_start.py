"""After an idle exit a core's first ``cold_work`` of work runs ``cold_factor`` times slower (ovssim/cpu/pool.py).

Measured on this machine (validation/chain_ping/probe.sh): a bridge + veth hop costs a ping 1.2 us per
direction when pings are 0.2 ms apart and 3.8 us when they are 10 ms apart.  So: work on a warm core is
unchanged, the slow part is CPU time (``busy`` counts it), it ends after ``cold_work`` of warm work, and a
chain of hops after one exit costs the factor per hop -- the slope the probe measures.
"""
from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.cpu.pool import CpuPool
from ovssim.distributions import Sampler
from ovssim.errors import ConfigError
from ovssim.profile import Profile
from ovssim.validate.cold import WARM, COLD, cold_start, hop_us, probe_rtts, warm_exit

EXIT, AFTER = 40e-6, 4e-3


def _pool(factor=3.0, work=20e-6, exit_=EXIT):
    return CpuPool(simpy.Environment(), 1, "h", idle_exit=Sampler(exit_, np.random.default_rng(1)),
                   idle_exit_after=AFTER, cold_factor=factor, cold_work=work)


def test_the_first_work_after_an_exit_runs_slow_then_the_core_is_warm():
    p = _pool()
    done = p.serve(0.010, 5e-6, key=0)
    assert done == pytest.approx(0.010 + EXIT + 15e-6)          # 5 us of work x 3
    done2 = p.serve(done, 20e-6, key=0)                          # 15 us of the budget left: 15 x 3 + 5
    assert done2 - done == pytest.approx(50e-6)
    done3 = p.serve(done2, 5e-6, key=0)                          # warm
    assert done3 - done2 == pytest.approx(5e-6)
    assert sum(p.busy) == pytest.approx(15e-6 + 50e-6 + 5e-6)    # the slowdown is CPU time


def test_a_warm_core_and_the_default_pay_nothing():
    p = _pool()
    t = p.serve(0.010, 30e-6, key=0)                             # spends the budget
    t2 = t + AFTER / 2                                            # idle less than the threshold: still warm
    assert p.serve(t2, 5e-6, key=0) == pytest.approx(t2 + 5e-6)
    plain = CpuPool(simpy.Environment(), 1, "h")
    assert plain.serve(1.0, 5e-6, key=0) == 1.0 + 5e-6
    d = Profile.default()
    assert d.factor("host.cold_factor") == 1.0                   # off unless a profile measures it


@settings(max_examples=60, deadline=None)
@given(hops=st.integers(1, 8), hop=st.floats(0.2e-6, 3e-6), factor=st.floats(1.0, 5.0))
def test_a_chain_after_one_exit_pays_the_factor_on_every_hop(hops, hop, factor):
    """The probe's slope: within the budget, n hops after an exit cost exit + factor x n x hop."""
    p = _pool(factor=factor, work=hops * hop)
    t = 0.010
    for _ in range(hops):
        t = p.serve(t, hop, key=0)
    assert t - 0.010 == pytest.approx(EXIT + factor * hops * hop, rel=1e-9)


def test_bad_values_are_refused_with_one_line():
    with pytest.raises(ValueError, match="cold_factor"):
        CpuPool(simpy.Environment(), 1, "h", cold_factor=0.5)
    with pytest.raises(ConfigError, match="slow-down factor"):
        Profile({"profile": {"name": "x"}, "params": {"host.cold_factor": 0.2}}, source="x.toml")


def test_the_probe_gives_the_factor_as_the_ratio_of_per_hop_slopes(tmp_path):
    f = tmp_path / "ping.txt"
    lines = []
    for n in (1, 2, 4):                  # 2 us per bridge round trip warm, 6 cold; 60 us idle exit
        lines.append(f"N={n} interval={WARM} rtt min/avg/max/mdev = 0.001/{(6 + 2 * n) / 1e3:.3f}/0.1/0.001 ms")
        lines.append(f"N={n} interval={COLD} rtt min/avg/max/mdev = 0.001/{(60 + 6 * n) / 1e3:.3f}/0.1/0.001 ms")
    f.write_text("\n".join(lines) + "\n")
    rtts = probe_rtts(f)
    assert hop_us(rtts, WARM) == pytest.approx(1.0) and hop_us(rtts, COLD) == pytest.approx(3.0)
    assert cold_start.__wrapped__(f).factor == pytest.approx(3.0)


def test_the_measured_exit_loses_the_spaced_pings_own_cold_work():
    """spaced RTT = exit + factor x warm work, step = spaced RTT - exchange: the exit comes back exactly."""
    from ovssim.validate.cold import ColdStart
    cold = ColdStart(factor=3.0, warm_hop_us=1.0, veth_rtt_us=5.0, cold_hop_us=3.0, runs=1)
    exit_, exchange = 30e-6, 8e-6
    step = exit_ + 3.0 * 5e-6 - exchange
    assert warm_exit(step, exchange, cold) == pytest.approx(exit_)
    assert warm_exit(step, None, cold) == pytest.approx(step - 2.0 * 5e-6)    # exchange taken as the warm work
    assert warm_exit(1e-6, 1e-6, cold) == 0.0
    real = cold_start()
    assert real.factor > 1.0 and 0 < real.veth_rtt_us < 8.0      # this machine: slower after a halt; 8 us at 1 bridge


def test_work_queued_behind_the_first_pays_the_rest_of_the_budget():
    p = _pool(work=10e-6)
    first = p.serve(0.010, 4e-6, key=0)                         # 4 us of the 10 us budget, x3
    second = p.serve(0.010, 10e-6, key=0)                        # arrives at once: queued behind it
    assert second - first == pytest.approx(6e-6 * 3 + 4e-6)      # the 6 us left run slow, the rest warm


def test_refused_work_leaves_the_budget_to_the_next_accepted_work():
    p = CpuPool(simpy.Environment(), 1, "h", backlog_limit=1, idle_exit_after=AFTER, cold_factor=3.0,
                cold_work=20e-6)
    p._count_at = 0                                              # count the backlog on every call
    a = p.serve(0.010, 10e-6, key=0)                             # 10 of the 20 us budget: 30 us
    b = p.serve(0.010, 2e-6, key=0)                              # queued behind it: 2 more, 6 us
    assert (a, b) == (pytest.approx(0.010 + 30e-6), pytest.approx(0.010 + 36e-6))
    assert p.serve(0.010, 5e-6, key=0) is None                   # one already waits: refused
    c = p.serve(b, 5e-6, key=0)                                   # the 8 us left are still there
    assert c == pytest.approx(b + 15e-6)


def test_a_thread_waits_only_for_the_exit_and_runs_the_slowdown():
    from ovssim.cpu.thread import Thread
    p = _pool()
    th = p.add_thread(Thread("reader", "app"))
    done = p.run(th, 0.010, 5e-6)
    assert done == pytest.approx(0.010 + EXIT + 15e-6)
    assert th.waited == pytest.approx(EXIT) and th.ran == pytest.approx(15e-6)
