"""FQ-CoDel: sparse flows jump the queue, bulk flows share equally, overflow hits the fattest flow."""
import numpy as np
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc
from ovssim.qdisc.fq_codel import FqCodel

from qdisc_testlib import conserved, greedy, pkt, run_port


def _distinct(q, ids):
    return len({q.hasher.bucket(pkt(i).flow) for i in ids}) == len(ids)


def test_sparse_flow_sees_near_zero_delay_beside_bulk_flows():
    q = FqCodel()
    ids = [0, 1, 2, 3, 9]
    assert _distinct(q, ids)
    rate = 100e6
    bulk = greedy([0, 1, 2, 3], rate / 2, 2.0)                 # 2x overload
    ping = [pkt(9, 98, 0.0123 + k * 0.01, seq=k) for k in range(190)]
    _, rec, _ = run_port(q, sorted(bulk + ping, key=lambda p: p.t), rate, until=2.0)
    ping_delay = np.array([t - p.created for t, p in rec.got if p.flow == pkt(9).flow])
    bulk_delay = np.array([t - p.created for t, p in rec.got if p.flow != pkt(9).flow and p.created > 0.5])
    assert len(ping_delay) == 190                              # never dropped
    # waits at most for the packet on the wire (1538 B at 100 Mbit/s = 123 us) plus its own 0.01 ms
    assert ping_delay.max() < 0.0003
    assert np.median(bulk_delay) > 0.004                        # CoDel holds bulk near its 5 ms target
    b = rec.bytes_by(lambda p: p.flow, 0.5, 2.0)
    shares = np.array([b[pkt(i).flow] for i in range(4)], float)
    shares /= shares.sum()
    assert np.all(np.abs(shares - 0.25) < 0.25 * 0.05)         # bulk flows share equally
    assert conserved(q)


def test_overflow_drops_half_the_fattest_flow_from_its_head():
    q = FqCodel(limit=100)
    assert _distinct(q, [0, 1])
    for i in range(90):
        q.enqueue(pkt(0, 1514, seq=i), 0.0)
    for i in range(10):
        q.enqueue(pkt(1, 1514, seq=1000 + i), 0.0)
    dropped = []
    q.on_drop = lambda p, now, why: dropped.append(p)
    assert q.enqueue(pkt(1, 1514, seq=2000), 0.0)             # thin flow's packet is kept
    # half of flow 0's 90 packets, from the head, and its CoDel count raised by as many
    assert [p.seq for p in dropped] == list(range(45))
    fat = q.flows[q.hasher.bucket(pkt(0).flow)]
    assert fat.cvars.count == 45 and q.drop_overlimit == 45
    assert q.stats.qlen == 56 and conserved(q)


def test_overflow_drop_batch_is_at_most_64():
    q = FqCodel(limit=300)
    for i in range(300):
        q.enqueue(pkt(0, 1514), 0.0)
    q.enqueue(pkt(0, 1514), 0.0)
    assert q.stats.drops == 64


def test_new_flows_are_served_before_old_ones():
    q = FqCodel()
    assert _distinct(q, [0, 1])
    for i in range(20):
        q.enqueue(pkt(0, 1514, seq=i), 0.0)
    first = [q.dequeue(0.0).seq for _ in range(3)]           # flow 0 is now an old flow
    q.enqueue(pkt(1, 200, seq=500), 0.0)                       # a new flow arrives
    assert first == [0, 1, 2] and q.dequeue(0.0).seq == 500


def test_ecn_is_on_by_default_and_marks():
    q = FqCodel()
    t, tx = 0.0, 1514 / 12.5e6
    n = 0
    while t < 2.0:
        for _ in range(2 if n % 4 == 0 else 1):             # 25% overload of ECN-capable packets
            q.enqueue(pkt(0, 1514, ecn=1), t)
        q.dequeue(t)
        n += 1
        t += tx
    assert q.stats.ecn_marks > 0 and q.cstats.drop_count == 0


def test_defaults_and_errors():
    q = make_qdisc("fq_codel")
    assert (q.flows_cnt, q.quantum, q.limit, q.memory_limit, q.drop_batch_size, q.params.ecn) == \
        (1024, 1514, 10240, 32 << 20, 64, True)
    assert make_qdisc({"kind": "fq_codel", "quantum": 100}).quantum == 256
    with pytest.raises(ConfigError, match="flows"):
        make_qdisc({"kind": "fq_codel", "flows": 0})
    with pytest.raises(ConfigError, match="unknown fq_codel parameter"):
        make_qdisc({"kind": "fq_codel", "flow": 10})
