"""A sparse flow (a ping) through FQ-CoDel as the leaf of an HTB class, behind backlogged bulk flows: the UML
campaign's bottleneck (data/campaigns/uml-schedulers.toml: HTB 20 Mbit/s, fq_codel leaf, on a veth).

What the kernel allows ahead of it (Linux 6.1, net/sched/sch_fq_codel.c and sch_htb.c):

* ``fq_codel_enqueue``: a packet whose flow is on neither list (``list_empty(&flow->flowchain)``) puts the flow at
  the tail of ``new_flows`` with ``deficit = quantum`` (1514, the device's psched_mtu); ``fq_codel_dequeue``
  serves ``new_flows`` before ``old_flows``, so the ping is the next skb the leaf hands out;
* ``fq_codel_dequeue`` finding the ping's flow empty on ``new_flows`` moves it to the tail of ``old_flows`` ("force
  a pass through old_flows to prevent starvation") and, found empty there, unlinks it (``list_del_init``): after
  one round of the bulk flows (one quantum, one frame each) the flow is forgotten, and a ping every 20 ms is a new
  flow every time;
* ``htb_dequeue_tree`` asks the leaf for one skb whenever the class may send (tokens >= 0, ``htb_class_mode``)
  and ``htb_charge_class`` charges it ``qdisc_pkt_len(skb)`` -- for a GSO skb the length of all its segments
  (``qdisc_pkt_len_init``, net/core/dev.c) -- so the class's next dequeue is at most that skb's token time
  away: one 1514-byte frame (605.6 us at 20 Mbit/s) when the bulk flows' skbs are single frames, as in UML
  (TSO off on the veths: tc counts 1514-byte packets at vif2), a whole GSO skb's when they are not.

So a ping waits for the class's next dequeue and for nothing else: at most one bulk skb's token time, and no
bulk packet leaves between its arrival and its departure.
"""
import numpy as np
import pytest
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.path.port import EgressPort
from ovssim.qdisc import make_qdisc

from qdisc_testlib import Recorder, pkt

RATE = 20e6
FRAME = 1514 * 8 / RATE               # one 1514-byte frame's tokens at 20 Mbit/s: 605.6 us
PING = FlowKey("10.0.0.9", "10.0.1.1", 77, 77, "icmp")
EPS = 1e-9


def _spec() -> dict:
    return {"kind": "htb", "default": "1", "classes": [
        {"classid": "1:1", "parent": "1:", "rate": "20mbit", "ceil": "20mbit", "qdisc": {"kind": "fq_codel"}}]}


def _bulk_skb(fid: int, t: float, segs: int, seq: int) -> Packet:
    """One bulk skb: a single 1514-byte frame, or a GSO skb of ``segs`` of them (qdisc_pkt_len: every frame)."""
    p = pkt(fid, 1514 * segs, t, seq=seq)
    if segs > 1:
        p.gso_segs, p.gso_size, p.payload = segs, 1448, 1448 * segs
    return p


def _run(lookahead: bool, segs: int = 1, pings: int = 60, spacing: float = 0.0193):
    """Four bulk flows offering twice the class's rate for 1.5 s (a standing backlog: CoDel drops but never
    empties them) and a ping every ``spacing`` from 0.2 s, its phase against the dequeues drifting.  Returns
    each ping's (arrival, departure), the deliveries in order, and whether the ping's flow was still listed
    5 ms after each ping (it should not be: one round of the bulk flows retires it)."""
    env = simpy.Environment()
    rec = Recorder(env)
    q = make_qdisc(_spec())
    port = EgressPort(env, rate_bps=None, qdisc=q, out=rec, lookahead=lookahead)
    gap = 1514 * segs * 8 / (RATE / 2)        # each bulk flow: half the rate, so 2x overload together
    for fid in range(4):
        for k in range(int(1.5 / gap)):
            port.put(_bulk_skb(fid, k * gap + fid * 1e-5, segs, k))
    arrivals = []
    for k in range(pings):
        t = 0.2 + k * spacing + 1.7e-6 * k
        p = Packet(PING, 98, t, seq=k, kind="echo-request")
        port.put(p)
        arrivals.append(t)
    fq = next(cl.leaf.q for cl in q.classes.values() if cl.leaf is not None)
    assert fq.kind == "fq_codel"
    listed_after = []
    for t in arrivals:
        env.run(until=t + 0.005)
        flow = fq.flows.get(fq.hasher.bucket(PING))
        listed_after.append(bool(flow is not None and flow.listed))
    env.run(until=arrivals[-1] + 0.05)
    dep = {p.seq: t for t, p in rec.got if p.flow == PING}
    assert len(dep) == pings                   # never dropped
    return np.array(arrivals), np.array([dep[k] for k in range(pings)]), rec.got, listed_after


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_ping_waits_for_the_class_next_dequeue_at_most_one_frame_and_nothing_leaves_before_it(lookahead):
    arr, dep, got, _ = _run(lookahead)
    wait = dep - arr
    assert wait.min() >= -EPS
    assert wait.max() <= FRAME + 1e-6          # one frame's tokens, never a second frame
    # the ping's phase against a punctual class's dequeues drifts: its wait is spread over the frame time
    assert 0.35 * FRAME < wait.mean() < 0.65 * FRAME
    assert wait.max() > 0.8 * FRAME and wait.min() < 0.2 * FRAME
    # no bulk frame leaves between a ping's arrival and its own departure
    for a, d in zip(arr, dep):
        between = [p for t, p in got if a < t < d - EPS and p.flow != PING]
        assert not between


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_sparse_flow_is_retired_after_one_round_and_comes_back_as_a_new_flow(lookahead):
    *_, listed_after = _run(lookahead, pings=20)
    assert not any(listed_after)               # 5 ms later (a round is 4 frames, 2.4 ms): unlinked


@pytest.mark.parametrize("lookahead", [False, True])
def test_behind_gso_skbs_the_class_is_charged_the_whole_skb_and_the_ping_waits_up_to_its_token_time(lookahead):
    segs = 8
    arr, dep, got, _ = _run(lookahead, segs=segs, pings=40)
    wait = dep - arr
    assert wait.max() <= segs * FRAME + 1e-6   # one GSO skb's tokens at most (qdisc_pkt_len: all its frames)
    assert wait.max() > 0.8 * segs * FRAME     # and it is the whole skb's, not one frame's
    assert 0.35 * segs * FRAME < wait.mean() < 0.65 * segs * FRAME
    for a, d in zip(arr, dep):
        assert not [p for t, p in got if a < t < d - EPS and p.flow != PING]
