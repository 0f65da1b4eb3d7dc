"""Every qdisc: conservation (in = sent + dropped + queued) at every step, determinism, drains."""
import pytest
from hypothesis import given, settings, strategies as st

from ovssim.qdisc import make_qdisc

from qdisc_testlib import conserved, pkt

SPECS = {
    "pfifo_fast": {"kind": "pfifo_fast", "limit": 20},
    "sfq": {"kind": "sfq", "limit": 20, "depth": 8, "perturb": "50ms"},
    "codel": {"kind": "codel", "limit": 25, "target": "1ms", "interval": "5ms", "ecn": True},
    "fq_codel": {"kind": "fq_codel", "limit": 25, "flows": 8, "target": "1ms", "interval": "5ms"},
    "tbf": {"kind": "tbf", "rate": "20mbit", "burst": 4000, "limit": 30000},
    "htb": {"kind": "htb", "default": 2, "classes": [
        {"classid": "1:1", "rate": "20mbit"},
        {"classid": "1:2", "parent": "1:1", "rate": "5mbit", "ceil": "20mbit", "prio": 1},
        {"classid": "1:3", "parent": "1:1", "rate": "5mbit", "ceil": "10mbit",
         "qdisc": {"kind": "fq_codel", "limit": 10}}]},
    "hfsc": {"kind": "hfsc", "default": 2, "classes": [
        {"classid": "1:1", "ls": "20mbit", "ul": "20mbit"},
        {"classid": "1:2", "parent": "1:1", "rt": {"m1": "10mbit", "d": "2ms", "m2": "2mbit"}, "ls": "5mbit"},
        {"classid": "1:3", "parent": "1:1", "ls": "10mbit", "ul": "8mbit", "qdisc": {"kind": "sfq", "limit": 10}}]},
    "ovs-htb": {"type": "linux-htb", "other-config": {"max-rate": "20000000"},
                "queues": {0: {"min-rate": "5000000"}, 2: {"min-rate": "1000000", "max-rate": "4000000"}}},
    "ovs-hfsc": {"type": "linux-hfsc", "other-config": {"max-rate": "20000000"},
                 "queues": {0: {"min-rate": "5000000"}, 2: {"min-rate": "1000000", "max-rate": "4000000"}}},
    "noop": "noop",
}

op = st.one_of(
    st.tuples(st.just("enq"), st.integers(0, 5), st.integers(60, 1514), st.sampled_from([None, 0, 1, 2]),
              st.integers(0, 15), st.sampled_from([0, 1])),
    st.tuples(st.just("deq")),
    st.tuples(st.just("adv"), st.floats(1e-6, 0.02)),
)


def _run(spec, ops):
    q = make_qdisc(spec)
    trace = []
    q.on_drop = lambda p, now, why: trace.append(("drop", p.seq, why))
    now, seq = 0.0, 0
    for o in ops:
        if o[0] == "enq":
            _, f, size, qid, prio, ecn = o
            p = pkt(f, size, now, queue_id=qid, priority=prio, ecn=ecn, seq=seq)
            seq += 1
            trace.append(("enq", q.enqueue(p, now)))
        elif o[0] == "deq":
            p = q.dequeue(now)
            trace.append(("deq", None if p is None else (p.seq, p.ecn)))
        else:
            now += o[1]
        assert conserved(q), (q.kind, q.stats)
    # drain: a throttled qdisc must release everything once time passes
    for _ in range(100000):
        if not q.stats.qlen:
            break
        p = q.dequeue(now)
        if p is None:
            w = q.next_wakeup(now)
            assert w is not None, "holds packets but gives no wake-up time"
            now = max(now + 1e-9, w)
        assert conserved(q)
    assert q.stats.qlen == 0 and q.stats.backlog == 0
    return trace, q.stats.as_dict()


@pytest.mark.parametrize("name", list(SPECS))
@settings(max_examples=80, deadline=None)
@given(ops=st.lists(op, max_size=120))
def test_conservation_determinism_and_drain(name, ops):
    first = _run(SPECS[name], ops)
    second = _run(SPECS[name], ops)
    assert first == second
