"""A handler asleep in poll() is woken late (ovs.upcall_wakeup); upcalls of a burst find it awake."""
import numpy as np
import pytest
import simpy

from ovssim.distributions import Sampler
from ovssim.packet import FlowKey, Packet
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.datapath import OvsDatapath


def _const(v):
    return Sampler(v, np.random.default_rng(0))


def _dp(env, wakeup):
    cpu = CpuPool(env, 2, backlog_limit=None)
    dp = OvsDatapath(env, "br0", cpu, stats=_const("2us"), lookup=_const("1us"), actions=_const("1us"),
                     upcall=_const("300us"), upcall_wakeup=_const(wakeup))
    b = Sink(env, keep=True)
    pa, pb = dp.add_port("a", Sink(env)), dp.add_port("b", b)
    dp.fdb[(None, "m2")] = (pb, 0.0)
    return dp, pa, b


def test_only_an_upcall_that_finds_every_handler_asleep_pays_the_wakeup():
    env = simpy.Environment()
    dp, pa, b = _dp(env, "4ms")
    # a burst of 3 new flows at t = 1 s: the first wakes the handler, the others queue behind it
    for i in range(3):
        pa.put(Packet(FlowKey("m1", "m2", i, 1, "udp"), 100, 1.0, src_mac="m1", dst_mac="m2"))
    env.run()
    t = sorted(b.arrival_times)
    fast = 2e-6 + 1e-6           # stats + lookup before the miss
    assert t[0] - 1.0 == pytest.approx(fast + 4e-3 + 300e-6 + 1e-6, rel=1e-9)
    assert t[1] - t[0] == pytest.approx(300e-6, rel=1e-6)      # served back to back: no second wake-up
    assert t[2] - t[1] == pytest.approx(300e-6, rel=1e-6)


def test_zero_wakeup_is_the_old_slow_path():
    env = simpy.Environment()
    dp, pa, b = _dp(env, "0us")
    assert dp.upcall_wakeup_s is None
    pa.put(Packet(FlowKey("m1", "m2", 1, 1, "udp"), 100, 1.0, src_mac="m1", dst_mac="m2"))
    env.run()
    assert b.arrival_times[0] - 1.0 == pytest.approx(3e-6 + 300e-6 + 1e-6, rel=1e-9)
