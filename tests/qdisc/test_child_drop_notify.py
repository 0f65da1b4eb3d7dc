"""A leaf's child qdisc that drops inside its dequeue: the parent's ``qlen_notify`` (HFSC, HTB).

Linux: a child that drops at dequeue (CoDel, FQ-CoDel) reports it with
``qdisc_tree_reduce_backlog`` (``net/sched/sch_api.c``), which takes the
drops off every ancestor's qlen/backlog, counts them as the ancestors' drops
and, when the child is left empty, calls the parent's ``qlen_notify`` for the
class: ``hfsc_qlen_notify`` (``update_vf(cl, 0, 0)`` if the class is still
active, and ``eltree_remove``) or ``htb_qlen_notify`` (``htb_deactivate``).
This happens inside the child's dequeue, so HFSC makes the class passive
before it charges the packet the child hands out (if any), and that charge
does not make the class passive a second time (upstream "sch_hfsc: Don't
make class passive twice").

CoDel never drops the last packet it holds (no drop while the rest of the
queue is at most one MTU, ``codel_should_drop``), so it empties itself by
dropping only when the packet it keeps is larger than the MTU: a GSO
super-packet, as in the field reports of this path.  A test-only child that
drops every packet older than a bound at dequeue exercises the other case:
a child that drops everything and hands out nothing.
"""
from __future__ import annotations

import random
from collections import deque

import pytest

from ovssim.qdisc import classful
from ovssim.qdisc.base import Device, Qdisc
from ovssim.qdisc.hfsc import Hfsc
from ovssim.qdisc.htb import Htb

from qdisc_testlib import conserved, pkt

LINK = 10e6
A, B = 0x10010, 0x10020
GSO = 3 * 1514                       # a GSO super-packet: larger than the device's psched_mtu (1514)
CODEL = {"kind": "codel", "target": "1ms", "interval": "5ms"}
FQ_CODEL = {"kind": "fq_codel", "flows": 4, "target": "1ms", "interval": "5ms"}


class _Expiring(Qdisc):
    """Test-only child: a FIFO whose dequeue drops every packet older than ``max_age``
    (counted as drops, as a CoDel drop is) and hands out the first younger one."""

    kind = "expiring"

    def __init__(self, max_age: float):
        super().__init__()
        self.max_age = max_age
        self._q: deque = deque()

    def enqueue(self, p, now):
        self.stats.arrivals += 1
        self._q.append(p)
        self._accounted_in(p, now)
        return True

    def dequeue(self, now):
        while self._q:
            p = self._q.popleft()
            if now - p.enqueued_at > self.max_age:
                self.drop(p, now, "expired", queued=True)
                continue
            return self._accounted_out(p)
        return None


def _dev():
    return Device(name="d", mtu=1500, rate_bps=LINK, txqueuelen=1000)


def _swap_child(q, cl, child):
    """Give leaf class ``cl`` another child qdisc, keeping the parent's notify hook."""
    cl.leaf = classful.Leaf(q, child, notify=cl.leaf.notify)
    child.attach(q.dev)


def _hfsc(qa=None, nested=False):
    """A and B share the link by equal ls curves; ``nested``: both under an inner class 1:1."""
    par = {"parent": "1:1"} if nested else {}
    classes = ([{"classid": "1:1", "ls": "10mbit"}] if nested else []) + [
        {"classid": "1:10", **par, "ls": "5mbit", **({"qdisc": qa} if qa else {})},
        {"classid": "1:20", **par, "ls": "5mbit"}]
    q = Hfsc(classes=classes, default="20")
    q.attach(_dev())
    return q


def _hfsc_consistent(q):
    """Active exactly when backlogged, each inner class counting its active children once;
    the root's counters are the leaves' sums; in = out + dropped + queued."""
    for cl in q.classes.values():
        if cl.leaf is not None:
            busy = cl.leaf.qlen > 0
            if cl.fsc is not None:
                assert cl.nactive == int(busy), (hex(cl.classid), cl.nactive, cl.leaf.qlen)
                assert (cl in cl.parent.act) == busy
            if cl.rsc is not None:
                assert (cl in q.eltree) == busy
        else:
            assert cl.nactive == len(cl.act)
            assert (cl in cl.parent.act) == (cl.nactive > 0)
    assert q.root.nactive == 0 and len(q.root.act) == sum(1 for c in q.root.children if c.nactive)
    assert q.stats.qlen == sum(c.leaf.qlen for c in q.leaves)
    assert conserved(q)


# -- HFSC -------------------------------------------------------------------------------------
@pytest.mark.parametrize("nested", [False, True])
def test_hfsc_codel_dropping_its_last_packets_makes_the_class_passive_before_the_charge(nested):
    q = _hfsc(CODEL, nested)
    a, b = q.classes[A], q.classes[B]
    for i in range(6):
        q.enqueue(pkt(1, GSO, 0.0, priority=A, seq=i), 0.0)
    for i in range(50):
        q.enqueue(pkt(2, 1514, 0.0, priority=B, seq=100 + i), 0.0)
    t, notified = 0.0, None
    while notified is None:
        t += 0.004
        vt_a, drops = a.vt, q.stats.drops
        p = q.dequeue(t)
        _hfsc_consistent(q)
        if q.stats.drops > drops and not a.leaf.qlen:
            notified = p
    # CoDel dropped its head packets and handed out its last (GSO) one, leaving A empty
    assert notified is not None and notified.priority == A and q.stats.drops >= 2
    parent = a.parent
    # hfsc_qlen_notify ran before the charge: A went passive at the virtual time it had
    # (update_vf(cl, 0, 0)), not one GSO packet later; the parent keeps that as cvtoff
    assert a.vt == vt_a and parent.cvtoff == vt_a
    # passive once: B (still backlogged) stays active and is served
    assert list(parent.act) == [b]
    if nested:
        assert parent.nactive == 1 and parent in q.root.act
    for _ in range(10):
        t += 0.004
        assert q.dequeue(t).priority == B
        _hfsc_consistent(q)


class _Port:
    """Dequeue back to back at the link rate (no port needed: the qdiscs are work-conserving here)."""

    def __init__(self, q):
        self.q, self.t, self.sent = q, 0.0, []

    def run(self, until, arrivals=()):
        arrivals = deque(sorted(arrivals, key=lambda x: x[0]))
        q = self.q
        while self.t < until:
            while arrivals and arrivals[0][0] <= self.t:
                t0, p = arrivals.popleft()
                q.enqueue(p, t0)
            p = q.dequeue(self.t)
            check(q)
            if p is None:
                w = q.next_wakeup(self.t)
                nxt = [x for x in (w, arrivals[0][0] if arrivals else None) if x is not None]
                if not nxt:
                    break
                self.t = max(self.t + 1e-9, min(nxt))
                continue
            self.sent.append((self.t, p))
            self.t += p.size * 8 / LINK


def check(q):
    if isinstance(q, Hfsc):
        _hfsc_consistent(q)
    else:
        _htb_consistent(q)


def _resume_split(q, make_child):
    """A's child drops everything it holds (at dequeue, leaving nothing to send); B keeps the
    link; then both are backlogged again: the link is split evenly, conservation holds."""
    _swap_child(q, q.classes[A], make_child())
    arrivals = [(0.0, pkt(1, 1514, 0.0, priority=A, seq=i)) for i in range(20)]
    arrivals += [(0.0, pkt(2, 1514, 0.0, priority=B, seq=1000 + i)) for i in range(2000)]
    port = _Port(q)
    # A's packets expire before A's turn comes again: its child drops them all at one dequeue
    port.run(0.5, arrivals)
    a_sent = [p for _, p in port.sent if p.priority == A]
    assert q.classes[A].leaf.qlen == 0 and q.stats.drops > 0 and len(a_sent) < 20
    # A resumes: a burst that fits in the expiry bound, for half a second
    later = [(0.5 + k * 0.0006, pkt(1, 1514, 0.5 + k * 0.0006, priority=A, seq=5000 + k)) for k in range(900)]
    port.run(1.0, later)
    window = [(t, p) for t, p in port.sent if 0.6 <= t < 1.0]
    bytes_a = sum(p.size for _, p in window if p.priority == A)
    bytes_b = sum(p.size for _, p in window if p.priority == B)
    assert bytes_a + bytes_b > 0.95 * LINK / 8 * 0.4
    assert bytes_a == pytest.approx(bytes_b, rel=0.05)
    s = q.stats
    assert s.arrivals == s.packets + s.drops + s.qlen


def test_hfsc_child_dropping_everything_at_dequeue_leaves_link_sharing_and_is_counted_once_on_return():
    q = _hfsc(nested=True)
    _resume_split(q, lambda: _Expiring(max_age=0.002))
    assert q.classes[A].nactive == 1 and q.classes[0x10001].nactive == 2


def test_hfsc_real_time_class_leaves_the_eligible_list_when_its_child_drops_everything():
    q = Hfsc(classes=[{"classid": "1:10", "rt": "5mbit"}, {"classid": "1:20", "ls": "10mbit"}], default="20")
    q.attach(_dev())
    a = q.classes[A]
    _swap_child(q, a, _Expiring(max_age=0.001))
    q.enqueue(pkt(1, 1514, 0.0, priority=A, seq=0), 0.0)
    assert a in q.eltree
    assert q.dequeue(0.01) is None and a not in q.eltree and q.stats.qlen == 0
    assert q.next_wakeup(0.01) is None
    q.enqueue(pkt(1, 1514, 0.02, priority=A, seq=1), 0.02)
    assert a in q.eltree and q.dequeue(0.02).seq == 1
    _hfsc_consistent(q)


# -- HTB --------------------------------------------------------------------------------------
def _htb(qa=None):
    q = Htb(classes=[{"classid": "1:1", "rate": "10mbit"},
                     {"classid": "1:10", "parent": "1:1", "rate": "2mbit", "ceil": "10mbit",
                      **({"qdisc": qa} if qa else {})},
                     {"classid": "1:20", "parent": "1:1", "rate": "2mbit", "ceil": "10mbit"}], default="20")
    q.attach(_dev())
    return q


def _htb_consistent(q):
    for cl in q._leaves_sorted:
        assert (cl in q.active) == (cl.leaf.qlen > 0), hex(cl.classid)
    assert q.stats.qlen == sum(c.leaf.qlen for c in q._leaves_sorted) + len(q.direct)
    assert conserved(q)


def test_htb_codel_dropping_its_last_packets_deactivates_the_class():
    q = _htb(CODEL)
    a = q.classes[A]
    for i in range(6):
        q.enqueue(pkt(1, GSO, 0.0, priority=A, seq=i), 0.0)
    for i in range(200):
        q.enqueue(pkt(2, 1514, 0.0, priority=B, seq=100 + i), 0.0)
    t = 0.0
    while a.leaf.qlen:
        t += 0.004
        q.dequeue(t)
        _htb_consistent(q)
    assert q.stats.drops >= 2 and a not in q.active
    b, borrowed = q.classes[B], q.classes[B].borrows
    t += 0.015                                       # the root's bucket refills after the GSO packet
    for _ in range(40):                              # B alone, at 8 Mbit/s: over its rate, it borrows
        t += 0.0015
        p = q.dequeue(t)
        assert p is not None and p.priority == B
        _htb_consistent(q)
    assert b.borrows > borrowed


def test_htb_child_dropping_everything_at_dequeue_is_deactivated_and_borrowing_resumes_evenly():
    _resume_split(_htb(), lambda: _Expiring(max_age=0.002))


# -- random operations: the invariants after every call --------------------------------------------
@pytest.mark.parametrize("kind", ["hfsc", "htb"])
@pytest.mark.parametrize("seed", range(6))
def test_random_calls_keep_classes_active_exactly_while_backlogged(kind, seed):
    rng = random.Random(seed)
    children = [None, CODEL, FQ_CODEL]
    if kind == "hfsc":
        q = Hfsc(classes=[{"classid": "1:1", "ls": "10mbit"},
                          {"classid": "1:10", "parent": "1:1", "sc": "3mbit", "qdisc": rng.choice(children[1:])},
                          {"classid": "1:20", "parent": "1:1", "ls": "4mbit", "qdisc": rng.choice(children)},
                          {"classid": "1:30", "rt": "2mbit", "ls": "2mbit", "qdisc": rng.choice(children)}],
                 default="20")
    else:
        q = Htb(classes=[{"classid": "1:1", "rate": "10mbit"},
                         {"classid": "1:10", "parent": "1:1", "rate": "3mbit", "ceil": "10mbit",
                          "qdisc": rng.choice(children[1:])},
                         {"classid": "1:20", "parent": "1:1", "rate": "4mbit", "ceil": "8mbit",
                          "qdisc": rng.choice(children)},
                         {"classid": "1:30", "rate": "2mbit", "qdisc": rng.choice(children)}], default="20")
    q.attach(_dev())
    leaves = [0x10010, 0x10020, 0x10030]
    _swap_child(q, q.classes[0x10030], _Expiring(max_age=rng.choice([0.002, 0.01])))
    now, seq = 0.0, 0
    for _ in range(3000):
        r = rng.random()
        if r < 0.5:
            size = rng.choice([64, 576, 1514, GSO, 2 * GSO])
            q.enqueue(pkt(rng.randrange(6), size, now, priority=rng.choice(leaves), seq=seq), now)
            seq += 1
        elif r < 0.85:
            q.dequeue(now)
        else:
            now += rng.expovariate(1 / 0.003)
        check(q)
    notified = sum(1 for c in leaves if q.classes[c].leaf.q.stats.drops)
    assert notified >= 1


@pytest.mark.parametrize("seed", range(4))
def test_hfsc_matches_the_reference_model_when_children_notify(seed):
    """The frozen reference HFSC carries the same qlen_notify change: both agree call for call
    on a tree whose CoDel / FQ-CoDel leaves empty themselves by dropping (GSO packets)."""
    import hfsc_reference                    # noqa: PLC0415
    rng = random.Random(seed)
    classes = [{"classid": "1:1", "ls": "10mbit"},
               {"classid": "1:10", "parent": "1:1", "sc": "3mbit", "qdisc": CODEL},
               {"classid": "1:20", "parent": "1:1", "ls": {"m1": "8mbit", "d": "5ms", "m2": "4mbit"},
                "qdisc": FQ_CODEL},
               {"classid": "1:30", "rt": "2mbit", "ls": "2mbit", "qdisc": CODEL}]
    ops = [(rng.random(), rng.choice([0x10010, 0x10020, 0x10030]), rng.choice([1514, GSO, 2 * GSO]),
            rng.randrange(6), rng.expovariate(1 / 0.003)) for _ in range(3000)]
    traces, notified = [], []
    for impl in (Hfsc, hfsc_reference.Hfsc):
        q = impl(classes=classes, default="20")
        q.attach(_dev())
        calls = [0]
        for c in q.leaves:
            hook = c.leaf.notify
            c.leaf.notify = lambda hook=hook: (calls.__setitem__(0, calls[0] + 1), hook())
        tr, now = [], 0.0
        for i, (r, cid, size, fid, gap) in enumerate(ops):
            if r < 0.5:
                tr.append(q.enqueue(pkt(fid, size, now, priority=cid, seq=i), now))
            elif r < 0.85:
                p = q.dequeue(now)
                tr.append((None if p is None else p.seq, q.next_wakeup(now)))
            else:
                now += gap
        tr.append(q.stats.as_dict())
        tr.append(q.class_stats())
        traces.append(tr)
        notified.append(calls[0])
        if impl is Hfsc:
            _hfsc_consistent(q)
    assert traces[0] == traces[1]
    assert notified[0] == notified[1] > 0
