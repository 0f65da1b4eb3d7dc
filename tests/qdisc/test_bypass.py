"""TCQ_F_CAN_BYPASS: a packet that finds a FIFO qdisc empty and the device idle goes straight to the
device (``EgressPort`` with lookahead, ``_arrive_la``), without enqueue/dequeue -- and everything ends
exactly as through the queue: the same departures (bit for bit), drops, qdisc counters and
``enqueued_at``, whatever feeds the port (two independent sources, out of step, packets handed early).
"""
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.packet import FlowKey, Packet
from ovssim.path.port import EgressPort
from ovssim.qdisc import make_qdisc


class Record:
    def __init__(self, env):
        self.env, self.seen = env, []

    def put(self, pkt):
        self.seen.append((pkt.seq, pkt.t, pkt.enqueued_at))


def _source(env, port, items, base):
    """Hands each packet to the port at ``at``, for ``at + lead`` (early, as a lookahead element does)."""
    for i, (at, lead, size, prio) in enumerate(sorted(items)):
        if at > env.now:
            yield env.timeout(at - env.now)
        port.put(Packet(FlowKey("a", "b", base, 1), size, at + lead, seq=base + i, priority=prio))


def _run(a, b, spec, rate, service, bypass, prop_delay=1e-6):
    env = simpy.Environment()
    rec = Record(env)
    svc = (lambda pkt, now: now + 2e-6 + pkt.size * 1e-9) if service else None
    port = EgressPort(env, rate, dict(spec), rec, prop_delay=prop_delay, lookahead=True, service=svc)
    assert not port.analytic                      # the lookahead path, where the bypass is
    calls = []
    if bypass:
        real = port.qdisc.bypass
        port.qdisc.bypass = lambda pkt, now: calls.append(pkt.seq) or real(pkt, now)
    else:
        port.qdisc.can_bypass = False
    dropped = []
    port.on_drop = lambda p, now, why: dropped.append((p.seq, now, why))
    env.process(_source(env, port, a, 0))
    env.process(_source(env, port, b, 10_000))
    env.run()
    return rec.seen, dropped, port.qdisc.stats.as_dict(), (port.tx_packets, port.tx_bytes, port.busy_time), calls


ITEMS = st.lists(st.tuples(st.floats(0, 0.01), st.sampled_from([0.0, 1e-5, 3e-4]), st.integers(60, 1514),
                           st.integers(0, 15)), max_size=80)


@settings(max_examples=80, deadline=None)
@given(ITEMS, ITEMS, st.sampled_from([{"kind": "pfifo_fast"}, {"kind": "pfifo_fast", "limit": 3}]),
       st.sampled_from([(10e6, False), (1e9, False), (None, True)]))
def test_bypass_equals_queue(a, b, spec, dev):
    rate, service = dev
    on = _run(a, b, spec, rate, service, True)
    off = _run(a, b, spec, rate, service, False)
    assert on[:4] == off[:4]                      # exact: same order, float-equal times and counters
    assert not off[4]


# exact binary times: a 256-byte frame (232 + 24 of framing) takes 2**-12 s at 2**23 bit/s, packets
# arrive on a 2**-12 s grid, so arrivals tie with the end of a transmission (the wake-up and the
# arrival at the same time, in either order on the heap)
GRID = st.lists(st.tuples(st.integers(0, 40).map(lambda k: k * 2.0 ** -12), st.sampled_from([0.0, 2.0 ** -12]),
                          st.sampled_from([232, 488]), st.sampled_from([0, 6])), max_size=60)


@settings(max_examples=80, deadline=None)
@given(GRID, GRID, st.sampled_from([{"kind": "pfifo_fast"}, {"kind": "pfifo_fast", "limit": 2}]))
def test_bypass_equals_queue_at_ties(a, b, spec):
    on = _run(a, b, spec, 2.0 ** 23, False, True, 0.0)
    off = _run(a, b, spec, 2.0 ** 23, False, False, 0.0)
    assert on[:4] == off[:4]


def test_bypass_is_taken_on_an_idle_port():
    """Packets spaced wider than a frame time all bypass; a burst queues behind the first."""
    spaced = [(i * 1e-3, 0.0, 1000, 0) for i in range(10)]
    assert len(_run(spaced, [], {"kind": "pfifo_fast"}, 10e6, False, True)[4]) == 10
    burst = [(0.0, 0.0, 1000, 0)] * 5
    assert len(_run(burst, [], {"kind": "pfifo_fast"}, 10e6, False, True)[4]) == 1


def _pkt(size, seq=0):
    return Packet(FlowKey("a", "b"), size, 0.0, seq=seq)


def test_bypass_counts_as_enqueue_then_dequeue():
    for spec in ({"kind": "pfifo_fast"}, {"kind": "pfifo", "limit": 1}, {"kind": "bfifo", "limit": 1514}):
        q1, q2 = make_qdisc(dict(spec)), make_qdisc(dict(spec))
        assert q1.can_bypass
        p1, p2 = _pkt(1514), _pkt(1514)
        assert q1.bypass(p1, 0.5)
        assert q2.enqueue(p2, 0.5) and q2.dequeue(0.5) is p2
        assert q1.stats.as_dict() == q2.stats.as_dict()
        assert p1.enqueued_at == p2.enqueued_at == 0.5


def test_bfifo_too_small_for_the_packet_is_not_bypassed():
    q = make_qdisc({"kind": "bfifo", "limit": 1000})
    assert not q.bypass(_pkt(1514), 0.0)
    assert q.stats.arrivals == 0 and q.stats.packets == 0


def test_shaping_and_fair_qdiscs_are_not_bypassed():
    for spec in ({"kind": "sfq"}, {"kind": "fq_codel"}, {"kind": "codel"},
                 {"kind": "tbf", "rate": "4mbit", "burst": "5kb", "latency": "20ms"}):
        assert not make_qdisc(spec).can_bypass
