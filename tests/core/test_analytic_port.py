"""With lookahead (analytic FIFO, or completions without events) a port gives exactly the
departures, drops and counters of the plain event-driven port, for every qdisc."""
import simpy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ovssim.packet import FlowKey, Packet
from ovssim.path.port import EgressPort


class Record:
    def __init__(self, env):
        self.env, self.seen = env, []

    def put(self, pkt):
        self.seen.append((pkt.seq, pkt.t if pkt.t > self.env.now else self.env.now))


def _run(items, lookahead, kind, limit):
    env = simpy.Environment()
    rec = Record(env)
    port = EgressPort(env, 10e6, {"kind": kind, "limit": limit}, rec, prop_delay=1e-6, lookahead=lookahead)
    dropped = []
    port.on_drop = lambda p, now, why: dropped.append(p.seq)
    for i, (t, size) in enumerate(sorted(items)):
        pkt = Packet(FlowKey("a", "b"), size, t, seq=i)
        port.put(pkt)          # handed early: pkt.t is in the future (lookahead)
    env.run()
    port.sync(float("inf"))     # all of the analytic port's packets have started by the end
    return sorted(rec.seen), sorted(dropped), port.qdisc.stats


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.02), st.integers(60, 1514)), min_size=1, max_size=200),
       st.sampled_from([("pfifo", 1), ("pfifo", 5), ("pfifo", 1000), ("bfifo", 3000), ("bfifo", 100000)]))
def test_analytic_equals_event_driven(items, q):
    kind, limit = q
    a = _run(items, True, kind, limit)
    b = _run(items, False, kind, limit)
    assert [s for s, _ in a[0]] == [s for s, _ in b[0]]
    for (_, ta), (_, tb) in zip(a[0], b[0]):
        assert abs(ta - tb) < 1e-12
    assert a[1] == b[1]
    assert (a[2].packets, a[2].bytes, a[2].drops, a[2].qlen, a[2].backlog) == \
           (b[2].packets, b[2].bytes, b[2].drops, b[2].qlen, b[2].backlog)


QDISCS = [{"kind": "pfifo_fast"}, {"kind": "sfq", "limit": 20}, {"kind": "codel", "target": "1ms", "interval": "5ms"},
          {"kind": "fq_codel", "limit": 50}, {"kind": "tbf", "rate": "4mbit", "burst": "5kb", "latency": "20ms"},
          {"type": "linux-htb", "other-config": {"max-rate": "5000000"}},
          {"type": "linux-hfsc", "other-config": {"max-rate": "5000000"}}]


def _run_any(items, lookahead, spec, rate):
    env = simpy.Environment()
    rec = Record(env)
    port = EgressPort(env, rate, dict(spec), rec, prop_delay=1e-6, lookahead=lookahead)
    dropped = []
    port.on_drop = lambda p, now, why: dropped.append(p.seq)
    for i, (t, size, flow, prio) in enumerate(sorted(items)):
        pkt = Packet(FlowKey("a", "b", flow, 1), size, t, seq=i, priority=prio)
        if t > env.now:
            env.run(until=t)  # hand each packet at its own time: both modes see the same arrivals
        port.put(pkt)
    env.run()
    st = port.qdisc.stats
    return sorted(rec.seen), sorted(dropped), (st.packets, st.bytes, st.drops, st.qlen, st.backlog)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.05), st.integers(60, 1514), st.integers(0, 3), st.integers(0, 15)),
                min_size=1, max_size=150),
       st.sampled_from(QDISCS), st.sampled_from([10e6, None]))
# found by hypothesis: after a burst of flow 0 the link goes idle; the completion's dequeue on the
# empty FQ-CoDel retires flow 0, so at the next burst flow 0 is a *new* flow again beside flow 1
@example(items=[(0.0, 60, 0, 0)] * 10 + [(0.0, 854, 0, 0), (0.03125, 60, 0, 0), (0.03125, 60, 0, 0),
                                         (0.03125, 60, 1, 0)],
         spec={"kind": "fq_codel", "limit": 50}, rate=10e6)
def test_lookahead_completions_equal_event_driven(items, spec, rate):
    a = _run_any(items, True, spec, rate)
    b = _run_any(items, False, spec, rate)
    assert [s for s, _ in a[0]] == [s for s, _ in b[0]]
    for (_, ta), (_, tb) in zip(a[0], b[0]):
        assert abs(ta - tb) < 1e-12
    assert a[1] == b[1]
    assert a[2] == b[2]
