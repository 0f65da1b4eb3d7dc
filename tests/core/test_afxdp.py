"""OVS AF_XDP ports and their PMD thread (ovssim/path/afxdp.py): batches, rings, cycle accounting."""
import pytest
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.path.afxdp import AfxdpPort, PmdThread


class Sink:
    def __init__(self, env):
        self.env, self.got = env, []

    def put(self, p):
        self.got.append((max(p.t, self.env.now), p))


def setup(**kw):
    env = simpy.Environment()
    sink = Sink(env)
    a = AfxdpPort(env, "p0")
    b = AfxdpPort(env, "p1", out=sink)
    costs = dict(per_batch=2e-6, per_packet=0.1e-6, empty_poll=0.05e-6, tsc_hz=2e9)
    costs.update(kw)
    pmd = PmdThread(env, forward=lambda pkt: b, **costs)
    pmd.add_rxq(a)
    pmd.add_rxq(b)
    return env, a, b, pmd, sink


def offer(env, port, n, at=0.0, gap=0.0):
    for k in range(n):
        p = Packet(FlowKey("x", "y", 1, 2), 64, at + k * gap, seq=k)
        env.process(_at(env, port, p, at + k * gap))


def _at(env, port, p, t):
    yield env.timeout(t - env.now)
    port.put(p)


def test_a_burst_is_taken_32_packets_at_a_time():
    env, a, b, pmd, sink = setup()
    offer(env, a, 1000)
    env.run(until=0.01)
    perf = pmd.perf_show()
    assert perf["rx_packets"] == 1000 == len(sink.got)
    assert perf["rx_batches"] == -(-1000 // 32)
    assert perf["packets_per_rx_batch"] == pytest.approx(1000 / 32, rel=0.01)
    # in order, and the last one leaves after every batch's processing
    assert [p.seq for _, p in sink.got] == list(range(1000))
    work = 32 * 2e-6 + 1000 * 0.1e-6
    assert sink.got[-1][0] >= work


def test_a_full_rx_ring_drops():
    env, a, b, pmd, sink = setup()
    offer(env, a, 3000)
    env.run(until=0.01)
    # all 3000 arrive at the same instant: the ring takes 2048 before the PMD polls
    assert a.rx_dropped == 3000 - 2048 and len(sink.got) == 2048


def test_overload_forwards_at_the_pmd_capacity():
    env, a, b, pmd, sink = setup()
    offer(env, a, 20000, gap=0.05e-6)          # 20 Mpps offered, far above capacity
    env.run(until=0.002)
    t = [x[0] for x in sink.got]
    rate = (len(t) - 1) / (t[-1] - t[0])
    # full batches, each per_batch + 32 per_packet, plus an empty visit of the other queue
    capacity = 32 / (2e-6 + 32 * 0.1e-6 + 0.05e-6)
    assert rate == pytest.approx(capacity, rel=0.02)


def test_the_core_is_always_busy_and_cycles_add_up():
    env, a, b, pmd, sink = setup()
    offer(env, a, 10, at=0.001, gap=0.0001)
    env.run(until=0.01)
    perf = pmd.perf_show(0.01)
    assert pmd.utilisation() == 100.0
    # every TSC cycle of the run is either idle or busy polling (up to one iteration's rounding)
    assert perf["used_tsc_cycles"] == pytest.approx(0.01 * 2e9, abs=2 * 0.1e-6 * 2e9)
    assert perf["idle_iterations_pct"] > 99.0
    assert perf["rx_packets"] == 10 and perf["rx_batches"] == 10


def test_an_idle_pmd_notices_a_packet_within_one_iteration():
    env, a, b, pmd, sink = setup()
    offer(env, a, 1, at=0.0012345)
    env.run(until=0.01)
    t = sink.got[0][0]
    iteration = 2 * 0.05e-6
    assert 0.0012345 + 2e-6 + 0.1e-6 <= t <= 0.0012345 + iteration + 2e-6 + 0.1e-6 + 1e-12
