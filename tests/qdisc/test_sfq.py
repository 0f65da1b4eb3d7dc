"""SFQ: per-flow fairness by DRR in bytes, the 127-packet limit, drops from the longest flow."""
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc
from ovssim.qdisc.sfq import Sfq

from qdisc_testlib import conserved, greedy, pkt, run_port


def _distinct_buckets(q, ids):
    return len({q.hasher.bucket(pkt(i).flow) for i in ids}) == len(ids)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_equal_greedy_flows_get_equal_shares(n):
    q = Sfq()
    ids = list(range(n))
    assert _distinct_buckets(q, ids)          # no hash collision among these flows
    maxq = [0]
    enq = q.enqueue

    def watch(p, now):
        ok = enq(p, now)
        maxq[0] = max(maxq[0], q.stats.qlen)
        return ok
    q.enqueue = watch
    rate = 100e6
    packets = greedy(ids, 2 * rate / n, 1.0)          # 2x overload in total
    port, rec, _ = run_port(q, packets, rate, until=1.0)
    share = rec.bytes_by(lambda p: p.flow, 0.2, 1.0)
    total = sum(share.values())
    assert len(share) == n
    for b in share.values():
        assert abs(b / total - 1 / n) < 0.05 / n
    assert maxq[0] <= 127
    assert conserved(q)


def test_drr_is_in_bytes_not_packets():
    # flow 0 sends 1514-byte packets, flow 1 300-byte packets: equal bytes, not equal packets
    q = Sfq()
    assert _distinct_buckets(q, [0, 1])
    packets = greedy([0], 100e6, 0.5, size=1514) + greedy([1], 100e6, 0.5, size=300)
    packets.sort(key=lambda p: p.t)
    _, rec, _ = run_port(q, packets, 100e6, until=0.5)
    b = rec.bytes_by(lambda p: p.flow, 0.1, 0.5)
    ratio = b[pkt(0).flow] / b[pkt(1).flow]
    assert 0.95 < ratio < 1.05


def test_overflow_drops_from_the_longest_flow():
    q = Sfq(limit=20)
    for i in range(15):
        q.enqueue(pkt(0, 1000, seq=i), 0.0)          # fat flow
    for i in range(5):
        q.enqueue(pkt(1, 1000, seq=100 + i), 0.0)    # thin flow
    dropped = []
    q.on_drop = lambda p, now, why: dropped.append(p)
    assert q.enqueue(pkt(1, 1000, seq=200), 0.0)     # the thin flow's packet is kept ...
    assert [p.flow for p in dropped] == [pkt(0).flow]  # ... the fat flow's tail pays
    assert dropped[0].seq == 14
    assert q.stats.qlen == 20 and conserved(q)


def test_per_flow_depth_and_headdrop():
    q = Sfq(depth=5)
    for i in range(7):
        q.enqueue(pkt(0, 100, seq=i), 0.0)
    assert q.stats.qlen == 5 and q.stats.drops == 2
    assert [q.dequeue(0.0).seq for _ in range(5)] == [0, 1, 2, 3, 4]     # tail drop kept the oldest
    h = Sfq(depth=5, headdrop=True)
    for i in range(7):
        h.enqueue(pkt(0, 100, seq=i), 0.0)
    assert [h.dequeue(0.0).seq for _ in range(5)] == [2, 3, 4, 5, 6]     # head drop kept the newest


def test_perturbation_rehashes_and_keeps_packets():
    q = Sfq(perturb=1.0, seed=7)
    for i in range(40):
        q.enqueue(pkt(i % 8, 500, seq=i), 0.1)
    before = q.hasher.perturbation
    out = [q.dequeue(1.5)]                   # the perturb timer has fired by t = 1.5
    assert q.hasher.perturbation != before
    while (p := q.dequeue(1.5)) is not None:
        out.append(p)
    assert len(out) == 40 and conserved(q)
    # order inside each flow survives the re-hash
    for f in range(8):
        seqs = [p.seq for p in out if p.flow == pkt(f).flow]
        assert seqs == sorted(seqs)


def test_defaults_and_errors():
    q = make_qdisc("sfq")
    assert (q.limit, q.depth, q.divisor, q.maxflows, q.quantum, q.perturb_period) == (127, 127, 1024, 128, 1514, 0.0)
    with pytest.raises(ConfigError, match="power of two"):
        make_qdisc({"kind": "sfq", "divisor": 1000})
    with pytest.raises(ConfigError, match="depth"):
        make_qdisc({"kind": "sfq", "depth": 500})
    with pytest.raises(ConfigError, match="unknown sfq parameter"):
        make_qdisc({"kind": "sfq", "perturbation": 10})
