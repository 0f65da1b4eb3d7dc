"""A busy-polling PMD sharing its core with other CPU-bound threads (ovssim/path/core_turns.py)."""
import pytest
import simpy

from ovssim.cpu.defaults import TICK, base_slice
from ovssim.packet import FlowKey, Packet
from ovssim.path.afxdp import AfxdpPort, PmdThread
from ovssim.path.core_turns import CoreTurns


def test_a_turn_is_the_base_slice_rounded_up_to_whole_ticks():
    # 2 CPUs: a 1.5 ms request runs to the first tick after it (no HRTICK): one 4 ms tick at HZ=250
    assert base_slice(2) == pytest.approx(1.5e-3)
    assert CoreTurns.of_scheduler(2, base_slice(2)).turn == pytest.approx(TICK)
    assert CoreTurns.of_scheduler(1, 5e-3).turn == pytest.approx(2 * TICK)
    assert CoreTurns.of_scheduler(1, TICK).turn == pytest.approx(TICK)


def test_alone_on_its_core_nothing_waits():
    t = CoreTurns(0, TICK, phase=1e-3)
    assert t.on_at(0.0123) == 0.0123
    assert t.run(0.0123, 1.0) == pytest.approx(1.0123)


def test_off_its_core_it_waits_for_its_next_turn():
    t = CoreTurns(2, TICK)                       # its turns: [0, 4), [12, 16), ... ms
    assert t.on_at(0.001) == pytest.approx(0.001)
    assert t.on_at(0.004) == pytest.approx(0.012)
    assert t.on_at(0.0119) == pytest.approx(0.012)
    # work reaching the end of a turn resumes at the next: 1 ms at 3.5 ms -> 0.5 ms now, 0.5 ms from 12 ms
    assert t.run(0.0035, 0.001) == pytest.approx(0.0125)
    assert t.run(0.005, 0.001) == pytest.approx(0.013)


@pytest.mark.parametrize("others", [1, 2, 3])
def test_cpu_time_is_conserved_at_its_share_of_the_core(others):
    # work W started at the start of a turn takes W / share of wall time, give or take the last turn
    t = CoreTurns(others, TICK, phase=0.0)
    work = 40 * TICK
    done = t.run(0.0, work)
    assert done == pytest.approx(work * (others + 1) - others * TICK)
    # split into pieces, the same total
    s = 0.0
    for _ in range(400):
        s = t.run(s, work / 400)
    assert s == pytest.approx(done)


def test_a_frame_arriving_off_turn_is_forwarded_at_the_pmd_s_next_turn():
    env = simpy.Environment()
    got = []

    class Sink:
        def put(self, p):
            got.append(max(p.t, env.now))

    a, b = AfxdpPort(env, "p0"), AfxdpPort(env, "p1", out=Sink())
    pmd = PmdThread(env, forward=lambda pkt: b, per_batch=1e-6, per_packet=1e-6, empty_poll=0.1e-6)
    pmd.add_rxq(a)
    pmd.add_rxq(b)
    pmd.turns = CoreTurns(2, TICK)              # on [0, 4) ms, off [4, 12) ms, ...

    def send(at):
        yield env.timeout(at)
        a.put(Packet(FlowKey("x", "y", 1, 2), 64, at))
    env.process(send(0.001))                      # in its turn: forwarded within microseconds
    env.process(send(0.005))                      # in another thread's: waits for 12 ms
    env.run(until=0.05)
    assert got[0] == pytest.approx(0.001, abs=10e-6)
    assert 0.012 <= got[1] <= 0.012 + 10e-6
    # OVS counts the time descheduled as the PMD's cycles (TSC), not as work it did
    perf = pmd.perf_show(0.05)
    assert perf["rx_packets"] == 2
    assert perf["used_tsc_cycles"] == pytest.approx(0.05 * pmd.tsc_hz, rel=0.01)


def test_sharing_its_core_divides_the_pmd_s_capacity():
    def forwarded(others):
        env = simpy.Environment()
        n = []

        class Sink:
            def put(self, p):
                n.append(1)

        a, b = AfxdpPort(env, "p0"), AfxdpPort(env, "p1", out=Sink())
        pmd = PmdThread(env, forward=lambda pkt: b, per_batch=2e-6, per_packet=1e-6, empty_poll=0.1e-6)
        pmd.add_rxq(a)
        pmd.add_rxq(b)
        if others:
            pmd.turns = CoreTurns(others, TICK)

        def offer():                              # a frame every 0.5 us: more than the PMD can take
            for k in range(200_000):
                if len(a.rx) < 2000:
                    a.put(Packet(FlowKey("x", "y", 1, 2), 64, env.now, seq=k))
                yield env.timeout(0.5e-6)
        env.process(offer())
        env.run(until=0.096)                      # 24 ticks: whole rounds for 1, 2 and 3 sharers
        return len(n)

    alone = forwarded(0)
    for others in (1, 2, 3):
        assert forwarded(others) == pytest.approx(alone / (others + 1), rel=0.03)


def test_an_idle_pmd_iterates_at_its_share_of_the_core():
    """pmd-perf-show's iterations per second of an idle PMD fall as 1 / (1 + others): measured 15.4, 7.6 and
    4.9 M/s with 0, 1 and 2 other PMDs on its core (data/local/2026-11-25-quiet/local-afxdp, ping runs)."""
    def iterations(others):
        env = simpy.Environment()
        a, b = AfxdpPort(env, "p0"), AfxdpPort(env, "p1")
        pmd = PmdThread(env, forward=lambda pkt: b, per_batch=1e-6, per_packet=1e-6, empty_poll=0.1e-6)
        pmd.add_rxq(a)
        pmd.add_rxq(b)
        if others:
            pmd.turns = CoreTurns(others, TICK)
        env.run(until=0.12)
        return pmd.perf_show(0.12)["iterations"]

    alone = iterations(0)
    for others in (1, 2):
        assert iterations(others) == pytest.approx(alone / (others + 1), rel=0.01)
