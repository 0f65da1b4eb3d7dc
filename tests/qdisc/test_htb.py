"""HTB: guaranteed rates, borrowing up to ceil, the parent's ceil, priorities, accuracy, classification."""
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc

from qdisc_testlib import conserved, greedy, pkt, run_port

LINK = 1e9
A, B = 0x10010, 0x10020                 # skb->priority naming classes 1:10 and 1:20


def tree(a=None, b=None, parent_rate="100mbit"):
    a = {"classid": "1:10", "parent": "1:1", "rate": "20mbit", "ceil": "100mbit", **(a or {})}
    b = {"classid": "1:20", "parent": "1:1", "rate": "30mbit", "ceil": "100mbit", **(b or {})}
    return {"kind": "htb", "default": "20", "classes": [
        {"classid": "1:1", "parent": "1:", "rate": parent_rate}, a, b]}


def mbit(rec, prio, t0, t1):
    return rec.bytes_by(lambda p: p.priority, t0, t1)[prio] * 8 / (t1 - t0) / 1e6


def test_each_class_gets_its_rate_and_excess_goes_by_quantum():
    spec = tree(a={"rate": "2mbit", "ceil": "10mbit"}, b={"rate": "3mbit", "ceil": "10mbit"},
                parent_rate="10mbit")
    packets = greedy([(0, {"priority": A}), (1, {"priority": B})], 20e6, 4.0)
    port, rec, _ = run_port(spec, packets, LINK, until=4.0)
    a, b = mbit(rec, A, 0.5, 4.0), mbit(rec, B, 0.5, 4.0)
    assert a >= 2 and b >= 3
    assert abs((a + b) - 10) < 0.1                  # the parent's rate = ceil is the total
    # excess (5 Mbit/s) splits in proportion to quantum = rate / r2q (25000 : 37500) -> 4 / 6
    assert abs(a - 4) < 0.2 and abs(b - 6) < 0.2
    assert conserved(port.qdisc)


def test_idle_sibling_bandwidth_is_borrowed_up_to_ceil():
    small = {"parent_rate": "10mbit", "b": {"rate": "3mbit", "ceil": "10mbit"}}
    packets = greedy([(0, {"priority": A})], 20e6, 3.0)
    _, rec, _ = run_port(tree(a={"rate": "2mbit", "ceil": "8mbit"}, **small), packets, LINK, until=3.0)
    assert abs(mbit(rec, A, 0.5, 3.0) - 8) < 0.08
    _, rec2, _ = run_port(tree(a={"rate": "2mbit", "ceil": "2mbit"}, **small), packets, LINK, until=3.0)
    assert abs(mbit(rec2, A, 0.5, 3.0) - 2) < 0.02     # ceil = rate: no borrowing


def test_total_never_exceeds_the_parents_ceil():
    spec = tree(a={"rate": "2mbit"}, b={"rate": "3mbit"}, parent_rate="6mbit")
    packets = greedy([(0, {"priority": A}), (1, {"priority": B})], 30e6, 1.5)
    _, rec, _ = run_port(spec, packets, LINK, until=1.5)
    # what the buckets on the path may hold at once (two leaves' and the parent's
    # 1600-byte bursts) plus the packet that takes a bucket below zero
    burst = (3 * 1600 + 1514) * 8
    for k in range(15):
        t0 = k * 0.1
        got = sum(rec.bytes_by(lambda p: 0, t0, t0 + 0.1).values()) * 8
        assert got <= 60e6 * 0.1 + burst


def test_shaped_rate_within_1_percent_over_10_seconds():
    spec = {"kind": "htb", "default": 1, "classes": [{"classid": "1:1", "rate": "10mbit"}]}
    packets = greedy([0], 20e6, 10.0)
    _, rec, _ = run_port(spec, packets, 100e6, until=10.0)
    got = sum(rec.bytes_by(lambda p: 0, 0.0, 10.0).values()) * 8 / 10.0
    assert abs(got / 10e6 - 1) < 0.01


def test_lower_prio_number_borrows_first():
    spec = tree(a={"rate": "1mbit", "ceil": "10mbit", "prio": 0}, b={"rate": "1mbit", "ceil": "10mbit", "prio": 1},
                parent_rate="10mbit")
    packets = greedy([(0, {"priority": A}), (1, {"priority": B})], 20e6, 3.0)
    _, rec, _ = run_port(spec, packets, LINK, until=3.0)
    assert abs(mbit(rec, A, 0.5, 3.0) - 9) < 0.15
    assert abs(mbit(rec, B, 0.5, 3.0) - 1) < 0.05


def test_classification_default_and_direct_queue():
    q = make_qdisc(tree())
    cls = q.classify
    assert cls(pkt(priority=A)).classid == 0x10010
    assert cls(pkt(queue_id=0x1f)).classid == 0x10020          # set_queue:31 -> class 1:20 (0x20)
    assert cls(pkt(priority=0)).classid == 0x10020              # default 20 (hex, as tc)
    assert cls(pkt(priority=0x10001)).classid == 0x10020        # inner class 1:1 -> default
    q2 = make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "rate": "1mbit"}]})
    assert q2.classify(pkt()) is None                           # no default class: direct queue
    # direct packets are not shaped
    port, rec, _ = run_port(q2, [pkt(0, 1514, k * 1e-4) for k in range(100)], 100e6, until=0.1)
    assert len(rec.got) == 100 and q2.direct_packets == 100


def test_htb_errors_are_tc_like():
    with pytest.raises(ConfigError, match="ceil .* is below rate"):
        make_qdisc(tree(a={"ceil": "1mbit"}))
    with pytest.raises(ConfigError, match="parent 1:5 does not exist"):
        make_qdisc({"kind": "htb", "classes": [{"classid": "1:10", "parent": "1:5", "rate": "1mbit"}]})
    with pytest.raises(ConfigError, match='"rate" is required'):
        make_qdisc({"kind": "htb", "classes": [{"classid": "1:10"}]})
    with pytest.raises(ConfigError, match="prio 9"):
        make_qdisc(tree(a={"prio": 9}))
    with pytest.raises(ConfigError, match="defined twice"):
        make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "rate": "1mbit"}] * 2})
    with pytest.raises(ConfigError, match="unknown parameter"):
        make_qdisc(tree(a={"cieling": "1mbit"}))


def test_quantum_defaults_follow_r2q():
    q = make_qdisc(tree())
    c = q.classes
    assert c[0x10010].quantum == 200000                           # 20mbit / 8 / 10 = 250000, clamped
    r = make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "rate": "2mbit"}]})
    assert r.classes[0x10001].quantum == 2e6 / 8 / 10
    small = make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "rate": "10kbit"}]})
    assert small.classes[0x10001].quantum == 1000                 # clamped to 1000..200000
    big = make_qdisc({"kind": "htb", "classes": [{"classid": "1:1", "rate": "10gbit"}]})
    assert big.classes[0x10001].quantum == 200000


def _paced(spec, frames: int, asks: int = 1, late: float = 0.0):
    """Dequeue ``frames`` full frames from a backlogged HTB at the times its watchdog names
    (``late`` seconds after them), asking ``asks`` times at each (an arrival's qdisc_run asks too)."""
    q = make_qdisc(spec)
    for i in range(frames):
        q.enqueue(pkt(i, 1514), 0.0)
    now, sent = 0.0, 0
    while sent < frames:
        got = None
        for _ in range(asks):
            got = q.dequeue(now)
            if got is not None:
                break
        if got is None:
            now = q.next_wakeup(now) + late
            continue
        sent += 1
    return q


def test_overlimits_count_changes_to_cant_send_not_empty_dequeues():
    """Linux >= 5.2 (sch_htb.c, "sch_htb: redefine htb qdisc overlimits"): the qdisc's overlimits is
    q->overlimits, raised with cl->overlimits in htb_change_class_mode when a class becomes
    HTB_CANT_SEND -- not once per dequeue that found nothing to send.  A class at 20 Mbit/s with
    tc's default one-frame bucket (rate / 1e9 + 1600 B) changes to CANT_SEND after every frame but
    the first (sent on the full bucket), however often it was asked in between; token times that
    are not exact in binary floating point must not lose any of them."""
    spec = {"kind": "htb", "default": 1, "classes": [{"classid": "1:1", "rate": "20mbit"}]}
    for asks in (1, 3):
        q = _paced(spec, 200, asks)
        assert q.stats.overlimits == 199
        assert q.class_stats()["1:1"]["overlimits"] == 199
    # a dequeue 0.62 ms late (more than a frame time, 0.6056 ms, less than the 1600-byte bucket) finds a
    # whole frame of tokens: that frame leaves the class CAN_SEND, the next takes it to CANT_SEND
    q = _paced(spec, 200, late=0.62e-3)
    assert q.stats.overlimits == 100
