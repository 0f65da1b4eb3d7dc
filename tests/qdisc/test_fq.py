"""fq (ovssim/qdisc/fq.py) against net/sched/sch_fq.c: EDT pacing, DRR fairness, limits, maxrate."""
import numpy as np
import pytest

from ovssim.qdisc import make_qdisc
from ovssim.qdisc.fq import Fq

from qdisc_testlib import conserved, greedy, pkt, run_port


def test_registered_and_defaults_follow_the_device():
    q = make_qdisc({"kind": "fq", "flow_limit": 50})
    assert isinstance(q, Fq) and q.flow_limit == 50 and q.limit == 10000
    assert q.quantum == 2 * 1514 and q.initial_quantum == 10 * 1514


def test_packets_leave_at_their_earliest_departure_time():
    # a paced sender's timestamps (EDT): 1 ms apart, all handed over at t = 0
    packets = []
    for k in range(20):
        p = pkt(0, 1514, 0.0, seq=k)
        p.tstamp = 0.001 * k
        packets.append(p)
    q = Fq()
    _, rec, drops = run_port(q, packets, 1e9, until=1.0)
    t = np.asarray([tt for tt, _ in rec.got])
    # each leaves at its tstamp (plus its own 12 us at 1 Gbit/s), never before
    assert np.all(t >= np.asarray([0.001 * k for k in range(20)]))
    assert np.allclose(np.diff(t), 0.001, atol=1e-9)
    assert q.throttled_count >= 19 and not drops and conserved(q)


def test_a_timestamp_beyond_the_horizon_is_dropped():
    p = pkt(0)
    p.tstamp = 11.0
    q = Fq()
    _, rec, drops = run_port(q, [p], 1e9, until=1.0)
    assert not rec.got and q.horizon_drops == 1 and drops[0][2] == "horizon"


@pytest.mark.parametrize("n", [2, 5])
def test_greedy_flows_share_equally(n):
    q = Fq()
    rate = 100e6
    _, rec, _ = run_port(q, greedy(list(range(n)), 2 * rate / n, 1.0), rate, until=1.0)
    share = rec.bytes_by(lambda p: p.flow, 0.2, 1.0)
    total = sum(share.values())
    assert len(share) == n
    for b in share.values():
        assert b / total == pytest.approx(1 / n, abs=0.02 / n)
    assert conserved(q)


def test_a_flow_holds_at_most_flow_limit_packets():
    q = Fq(flow_limit=100)
    packets = [pkt(0, 1514, 0.0, seq=k) for k in range(150)] + [pkt(1, 1514, 0.0, seq=k) for k in range(10)]
    _, rec, drops = run_port(q, packets, 10e6, until=0.0001)
    # the first packet goes straight to the idle device; 100 more fill the flow, 49 are dropped
    assert q.flows_plimit == 49 and len(drops) == 49
    assert all(p.flow == pkt(0).flow for _, p, _ in drops)


def test_a_new_flow_is_served_before_the_old_ones():
    # a bulk flow has been queued for a while; a single packet of a new flow does not wait behind it
    packets = [pkt(0, 1514, 0.0, seq=k) for k in range(100)] + [pkt(1, 100, 0.05)]
    _, rec, _ = run_port(Fq(), packets, 10e6, until=1.0)
    t_new = next(t for t, p in rec.got if p.flow == pkt(1).flow)
    assert t_new < 0.05 + 2 * 1514 * 8 / 10e6


def test_maxrate_paces_each_flow():
    q = Fq(maxrate=8e6)        # 1 MB/s per flow
    _, rec, _ = run_port(q, greedy([0, 1], 50e6, 1.0), 1e9, until=1.0)
    share = rec.bytes_by(lambda p: p.flow, 0.2, 1.0)
    for b in share.values():
        assert b / 0.8 == pytest.approx(1e6, rel=0.03)
