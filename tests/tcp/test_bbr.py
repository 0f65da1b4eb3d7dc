"""BBR v1 (ovssim/tcp/bbr.py) against the behaviour net/ipv4/tcp_bbr.c defines.

Paths: tests/tcp/conftest.py (A -> rate-limited pfifo -> B, the same back), one-way delay ``delay``.
"""
import math

import numpy as np
import pytest

from ovssim.tcp import connect
from ovssim.tcp.congestion import CongestionControl
from ovssim.tcp.bbr import (DRAIN, DRAIN_GAIN, HIGH_GAIN, PACING_GAINS, PROBE_BW, PROBE_RTT, STARTUP,
                             WindowedMax, _us)
from ovssim.tcp.tso import tso_autosize


def bulk_bbr(path, until, flows=1):
    socks = []
    for i in range(flows):
        c, s = connect(path.env, path.a, path.b, 5001 + i, cc="bbr")
        c.bulk(until)
        socks.append((c, s))
    return socks


def test_bandwidth_filter_is_linux_windowed_max():
    """lib/win_minmax.c's minmax_running_max with bbr_bw_rtts = 10: the best sample holds while it is at most
    10 rounds old and goes at the first sample more than 10 rounds after it (dt > win: 11 round starts, as
    Linux's tcp_probe shows for the iperf3 cookie's estimate); the filter keeps three choices, not every
    sample, so one smaller than the best and taken in the first quarter of its window is forgotten, and
    what follows the expired best is the 2nd choice taken after that quarter."""
    f = WindowedMax()
    assert f.running_max(10, 1, 100.0) == 100.0
    assert f.running_max(10, 2, 50.0) == 100.0          # dt 1: not a 2nd choice (win // 4 = 2), forgotten
    assert f.running_max(10, 4, 10.0) == 100.0          # dt 3 > 2: the 2nd and 3rd choice
    assert f.running_max(10, 11, 12.0) == 100.0         # dt 10: still in the window; 12 is the new 2nd choice
    assert f.running_max(10, 12, 11.0) == 12.0          # dt 11: gone, the 2nd choice takes its place
    g = WindowedMax()
    g.running_max(10, 1, 100.0)
    g.running_max(10, 4, 10.0)
    assert g.running_max(10, 12, 9.0) == 10.0           # the 2nd choice, though round 2's 50 would be in an exact window
    assert g.running_max(10, 12, 200.0) == 200.0        # a new best resets the filter
    h = WindowedMax()
    h.running_max(10, 1, 100.0)
    assert h.running_max(10, 30, 5.0) == 5.0            # everything older than the window: reset


def test_startup_reaches_the_bottleneck_in_about_log2_bdp_rounds(make_path):
    p = make_path(rate=100e6, delay=0.010, limit=10000)
    (c, _), = bulk_bbr(p, 3.0)
    p.env.run(until=3.0)
    b = c.sender.cc
    bdp_segs = 100e6 / 8 / 1514 * 0.020                       # ~165 segments
    rounds = [r for r in b.log if r[1] == STARTUP]
    # the round at which the max-bw estimate first reaches 90 % of the bottleneck's goodput
    goodput = 100e6 * 1448 / (1514 + 24)        # payload share of a frame on the wire (+ preamble, FCS, IFG)
    first = next(i for i, r in enumerate(b.log) if r[2] >= 0.9 * goodput)
    # startup grows the delivery rate by ~2.885 (its gain) a round from 10 segments a round
    assert first <= math.ceil(math.log(bdp_segs / 10, 2)) + 2
    assert first >= math.floor(math.log(bdp_segs / 10, HIGH_GAIN))
    assert rounds and any(r[1] == DRAIN for r in b.log) and b.mode == PROBE_BW
    # the estimate settles on the bottleneck (as tcp_info's bbr_bw), within 1 %
    assert b.bw * c.sender.mss * 8 == pytest.approx(goodput, rel=0.01)


def test_two_flows_keep_about_one_bdp_queued_in_a_deep_fifo(make_path):
    # BBR v1 flows are cwnd-limited at cwnd_gain (2) x BDP when they share a bottleneck:
    # in flight ~2 BDP, i.e. one BDP waits in the queue (plus the quantization budget)
    p = make_path(rate=100e6, delay=0.010, limit=10000)
    socks = bulk_bbr(p, 8.0, flows=2)
    qlen = []

    def sample(_=None):
        qlen.append(p.fwd.qdisc.backlog)
        if p.env.now < 7.9:
            p.env.process(tick())

    def tick():
        yield p.env.timeout(0.01)
        sample()
    p.env.process(tick())
    p.env.run(until=8.0)
    bdp = 100e6 / 8 * 0.020
    q = np.asarray(qlen[300:])                                  # after 3 s
    assert 0.5 * bdp < np.median(q) < 1.6 * bdp
    assert sum(c.sender.retransmits for c, _ in socks) == 0       # 10000 packets: no loss


def test_probe_rtt_happens_every_10_seconds(make_path):
    # this host's kernel (data/local/tcp_window/bridge_tbf_20mbit_P1_bbr_long_*): cwnd fell to <= 4 at
    # 10.55, 20.73 and 30.95 s of a 32 s BBR flow through a 20 Mbit/s TBF: every 10.18-10.22 s
    p = make_path(rate=50e6, delay=0.005, limit=1000)
    (c, _), = bulk_bbr(p, 31.0)
    modes = []

    def watch():
        while True:
            modes.append((p.env.now, c.sender.cc.mode, c.sender.cwnd, c.sender.cc.pacing_gain))
            yield p.env.timeout(0.005)
    p.env.process(watch())
    p.env.run(until=31.0)
    entries = [t for (t, m, _, _), (_, m0, _, _) in zip(modes[1:], modes) if m == PROBE_RTT and m0 != PROBE_RTT]
    assert len(entries) == 3
    gaps = np.diff([0.0] + entries)
    # the min-RTT estimate expires 10 s after it was last refreshed (the end of the previous
    # PROBE_RTT, which lasts >= 200 ms); at most one round trip late
    assert all(10.0 <= g <= 10.0 + 0.25 + 0.05 for g in gaps)
    assert all(cw <= 4 and g == 1.0 for _, m, cw, g in modes if m == PROBE_RTT)   # cwnd 4, pacing gain 1


class FixedRate(CongestionControl):
    """A congestion control that only paces: a fixed sk_pacing_rate and a cwnd that never binds."""
    name = "fixed"

    def __init__(self, rate):
        super().__init__()
        self.rate = rate

    def attach(self, sender):
        super().attach(sender)
        sender.pacing_rate = self.rate
        sender.cwnd = 100000

    def ssthresh(self):
        return self.s.ssthresh

    def cong_avoid(self, acked, now):
        return None

    def cong_control(self, acked, delivered, now):
        self.s.cwnd = 100000


@pytest.mark.parametrize("rate_bps", [10e6, 37e6])
def test_a_paced_flow_leaves_at_its_pacing_rate(make_path, rate_bps):
    # a 1 Gbit/s link: departures show the sender's pacing (tcp_update_skb_after_send) and not the link
    p = make_path(rate=1e9, delay=0.010, limit=100000)
    c, _ = connect(p.env, p.a, p.b, 5001, cc=FixedRate(rate_bps / 8), sndbuf=10_000_000, rcvbuf=10_000_000)
    c.bulk(2.0)
    sends = []
    out = p.a.out

    class Tap:
        def put(self, pkt):
            if pkt.payload:
                sends.append((p.env.now, pkt.payload))
            out.put(pkt)
    p.a.out = Tap()
    p.env.run(until=2.0)
    t = np.asarray([x[0] for x in sends])
    n = np.asarray([x[1] for x in sends])
    # the first 10 segments leave unpaced (tp->data_segs_out >= 10), then one mss per mss / rate
    gaps = np.diff(t[10:])
    assert gaps == pytest.approx(n[10:-1] / (rate_bps / 8), rel=1e-6)
    assert np.sum(n) * 8 / t[-1] == pytest.approx(rate_bps, rel=0.01)


def test_tso_goal_is_a_full_gso_skb_on_a_short_path():
    # tcp_tso_autosize with tcp_tso_rtt_log = 9: min RTT under 512 us adds a whole 64 KB
    assert tso_autosize(5e6, 50e-6, 1448, 2) == 45
    assert tso_autosize(5e6, 0.020, 1448, 2) == 3           # 5 MB/s >> 10 = 4.9 kB


def test_bbr_quantization_budget_uses_one_ms_of_its_pacing_rate(make_path):
    # bbr_tso_segs_goal ignores the min-RTT term: 3 x max(2, rate/1024/mss) segments over the BDP
    p = make_path(rate=20e6, delay=0.00002, limit=10000)
    (c, _), = bulk_bbr(p, 4.0)
    p.env.run(until=4.0)
    b = c.sender.cc
    assert b.tso_segs_goal() == max(2, int(c.sender.pacing_rate / 1024 // 1448))
    goal = b.inflight(b.bw, 1.0) - b.bdp(b.bw, 1.0)
    assert goal <= 3 * b.tso_segs_goal() + 1 + (2 if b.cycle_idx == 0 else 0)


@pytest.mark.parametrize("rate_bps", [10e6, 37e6])
def test_with_fq_the_qdisc_paces_by_the_senders_timestamps(rate_bps):
    # fq on the sender's own device (SK_PACING_FQ): TCP stamps each segment's departure time
    # and hands it over at once; fq releases it at that time -- the same spacing as internal pacing
    import simpy
    from ovssim.path.endpoint import Endpoint
    from ovssim.path.port import EgressPort

    env = simpy.Environment()
    a, b = Endpoint(env, "a"), Endpoint(env, "b")
    a.fq_pacing = True
    fwd = EgressPort(env, 1e9, {"kind": "fq"}, out=b, prop_delay=0.010, name="fwd")
    rev = EgressPort(env, 1e9, {"kind": "pfifo", "limit": 1000}, out=a, prop_delay=0.010, name="rev")
    a.out, b.out = fwd, rev
    c, _ = connect(env, a, b, 5001, cc=FixedRate(rate_bps / 8), sndbuf=10_000_000, rcvbuf=10_000_000)
    arrivals = []
    orig = b.put

    def put(pkt):
        if pkt.payload:
            arrivals.append((max(pkt.t, env.now), pkt.payload))
        orig(pkt)
    b.put = put
    c.bulk(2.0)
    env.run(until=2.0)
    assert c.sender.pacing_fq
    assert fwd.qdisc.throttled_count > 100
    t = np.asarray([x[0] for x in arrivals])
    n = np.asarray([x[1] for x in arrivals])
    assert np.diff(t[10:]) == pytest.approx(n[10:-1] / (rate_bps / 8), rel=1e-6)


def test_cubic_behind_fq_is_paced_at_120_percent_of_cwnd_over_srtt(make_path):
    p = make_path(rate=100e6, delay=0.010)
    p.a.fq_pacing = True
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic")
    c.bulk(3.0)
    p.env.run(until=3.0)
    s = c.sender
    ratio = 2.0 if s.cwnd < s.ssthresh / 2 else 1.2
    assert s.pacing_rate == pytest.approx(ratio * max(s.cwnd, s.packets_out) * s.mss / s.rtt.srtt, rel=1e-9)


def test_bbr_keeps_the_link_busy_under_random_loss_where_cubic_does_not(make_path):
    # BBR v1 does not take packet loss as a congestion signal (its model is bandwidth and RTT):
    # 1 % random loss barely dents it, while CUBIC's window collapses
    def goodput(cc):
        p = make_path(rate=100e6, delay=0.010, loss_p=0.01, seed=4)
        c, s = connect(p.env, p.a, p.b, 5001, cc=cc)
        c.bulk(6.0)
        got = []
        s.receiver.on_deliver = lambda n, now: got.append(n) if now > 2.0 else None
        p.env.run(until=6.0)
        return sum(got) * 8 / 4.0 / 1e6, c.sender
    bbr, sb = goodput("bbr")
    cubic, _ = goodput("cubic")
    assert sb.retransmits > 100 and sb.fast_recoveries > 10      # the loss recovery ran
    assert bbr > 0.85 * 100 * 1448 / 1538
    assert cubic < 0.5 * bbr


def test_request_response_tools_run_over_bbr(make_path):
    from ovssim.workloads.registry import make_workload
    for table in ({"tool": "netperf", "test": "TCP_RR", "K": "bbr"},
                  {"tool": "sockperf", "mode": "under-load", "proto": "tcp", "mps": 2000, "C": "bbr"}):
        p = make_path(rate=100e6, delay=0.002)
        w = make_workload(table)
        w.start(p.ctx(1.0))
        p.env.run(until=1.5)
        m = {x.name: x.value for x in w.metrics()}
        assert m["transactions"] > 0


def test_behind_an_htb_each_skb_carries_at_most_half_the_cwnd_and_aggregation_is_one_skb(make_path):
    """tcp_cwnd_test sends at most half the cwnd per skb ("at least 2 GSO packets in flight"), TCP Small
    Queues keeps a third skb from joining the two already in the sender's own qdisc, and
    bbr_update_ack_aggregation restarts its epoch at every ACK that brings no more than BtlBw explains,
    so each ACK acknowledges one whole skb and the aggregation term is about one skb.

    The HTB sits on the sender's own device, so its skbs stay charged to the socket (sk_wmem_alloc) until
    the receiver's ip_rcv_core orphans them: tcp_small_queue_check lets an skb go only while the bytes
    below the socket are at most twice its truesize.  With two 9-segment skbs queued, the 1-2 segments of
    room a grown cwnd opens are held (also when the HTB releases one, before its ACK) and join the next ACK's
    freed skb.  Without TSQ the model settled on three skbs per window (4 + 4 + 8 segments), BtlBw 12 %
    high, aggregation 8, cwnd 16.

    This host's kernel, quiet machine (validation/tcp_window/ack_train.py and probe.py, HTB 20 Mbit/s on
    the sender's veth, one BBR flow, data/local/tcp_window/ack_train and 2026-11-27-quiet/sender_*):
    skbs of 8-10 segments, in a repeating 9, 9, 9, 9, 9, 9, 10, 8 (the 10 in the 5/4 phase), each ACKed
    whole (one ACK per skb); ss: two skbs below the socket (sk_wmem_alloc 2 x 13864), pacing ~20.0 Mbit/s
    at gain 1 (BtlBw 19/18 of the delivery rate, as the model), cwnd 18-22 (median 20) -- two skbs, plus a
    BDP of about one segment (0.05 ms min_rtt) and the quantization budget.  The model keeps 18, 20 in
    the 5/4 phase, as the AF_PACKET run's skb sizes imply, and now and then the ss runs' 22 (11-segment skbs)."""
    from ovssim.path.port import EgressPort
    htb = {"kind": "htb", "default": "10",
           "classes": [{"classid": "1:10", "parent": "1:", "rate": "20mbit", "ceil": "20mbit"}]}
    p = make_path(rate=10e9, delay=25e-6, limit=1000)
    p.a.out = EgressPort(p.env, 10e9, htb, out=p.b, prop_delay=25e-6, name="htb")
    p.a.gso = True
    p.a.tsq = True          # a qdisc on the sender's own device: its skbs stay charged (as egress_qdisc)
    (c, _), = bulk_bbr(p, 4.0)
    s = c.sender
    sent = []
    transmit = s._transmit

    def record(seq, n, now, new, segs=1):
        if new and now > 1.5:
            sent.append((segs, s.cwnd))
        transmit(seq, n, now, new, segs)
    s._transmit = record
    p.env.run(until=4.0)
    b = s.cc
    assert b.full_bw_reached and b.min_rtt < 0.001
    assert sent and all(segs <= max(cwnd >> 1, 1) for segs, cwnd in sent)
    skbs = [segs for segs, _ in sent]
    # the aggregation term: at least the ACKed skbs' typical size, at most the largest of them
    assert np.median(skbs) <= b.aggregation_cwnd() <= max(skbs)
    # 8-10 segments as the AF_PACKET run; an 11 (cwnd 22, as the ss runs show) where lib/win_minmax.c's filter
    # keeps a 2nd-choice BtlBw a little above the exact window maximum
    assert 8 <= min(skbs) and max(skbs) <= 11 and np.mean([k <= 10 for k in skbs]) > 0.9
    assert s.tsq_throttled
    steady = [r[5] for r in b.log if r[0] > 1.5]
    assert 18 <= np.median(steady) <= 22


def test_rate_sample_interval_starts_afresh_only_when_nothing_was_in_flight(make_path):
    """tcp_rate_skb_sent: ``if (!tp->packets_out)`` -- tested before the skb is counted -- the sampling
    interval restarts at this skb's send time.  The sender counts a GSO skb's segments first, so the
    test must leave out the skb's own segments: a 10-segment skb sent with nothing else in flight
    starts a fresh interval, the same skb sent behind another does not."""
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    s, rate = c.sender, c.sender.cc.rate
    rate.first_tx_time = rate.delivered_time = 1.0
    s.q.queue(0, 10 * s.mss, 2.0, 10)                    # packets_out 10: this skb alone
    s.cc.on_send(0, 10 * s.mss, 2.0, True)
    assert rate.first_tx_time == rate.delivered_time == 2.0
    s.q.queue(10 * s.mss, 20 * s.mss, 3.0, 10)           # packets_out 20: another skb in flight
    s.cc.on_send(10 * s.mss, 10 * s.mss, 3.0, True)
    assert rate.first_tx_time == rate.delivered_time == 2.0


def _ack(sender, una, now, min_rtt=50e-6):
    """The cumulative part of tcp_ack and tcp_rate_gen: (segments acked, the rate sample or None)."""
    acked = sender.q.clean(una, 0.0)[0]
    return acked, sender.cc.rate.gen(acked, now, min_rtt)


def test_rate_samples_are_taken_in_whole_microseconds():
    """tcp_rate.c keeps its clocks in microseconds (tp->tcp_mstamp = tcp_clock_us(), an skb's send time
    tcp_skb_timestamp_us = skb_mstamp_ns / 1000) and tcp_rate_gen's rs->interval_us is their tcp_stamp_us_delta, an
    integer, as is the RTT it carries (tcp_ack_update_rtt's rs->rtt_us).  A packet sent on an idle connection (a
    fresh interval: its own send time starts both phases) and ACKed 9.2-9.9 us later is one packet over 9 or 10 us
    depending on where the microsecond boundaries fall: 11584 / k Mbit/s for whole k, as ss shows each iperf3
    stream's cookie sample on this host (bw 1654.9 / 1448.0 / 1287.1 / 1158.4 / 1053.1 / 965.3 Mbit/s for k = 7..12,
    data/local/tcp_window/2026-11-28-bbr5)."""
    from ovssim.tcp.bbr import RateSampler
    r = RateSampler()
    for sent, acked, k in ((1.0000004, 1.0000103, 10), (1.0000009, 1.0000101, 10), (1.0000001, 1.0000099, 9)):
        r._rs = ((r.delivered, sent, sent, True), sent, 37, False)
        bw, app, _, rtt = r.gen(1, acked, 5e-6)
        assert bw * 1448 * 8 == pytest.approx(11584e6 / k, rel=1e-12) and app
        assert rtt == pytest.approx(k * 1e-6, rel=1e-12)
    r._rs = ((r.delivered, 2.0000004, 2.0000004, False), 2.0000004, 37, False)
    assert r.gen(1, 2.0000047, 5e-6) is None          # 4 us (4.3 really) < tcp_min_rtt 5 us: no sample


def test_a_partially_acked_tso_skb_gives_a_rate_sample_on_each_ack(make_path):
    """tcp_clean_rtx_queue calls tcp_rate_skb_delivered for a TSO skb the ACK covers only in part (after
    tcp_tso_acked trimmed the whole segments off its head, before ``if (!fully_acked) break``), and
    takes ``last_ackt`` (the rate sample's RTT) from it: every ACK of a GSO skb a shaper split into
    segments (TBF, behind a burst smaller than the skb) is a rate sample whose prior state is that skb's
    send-time snapshot.  An ACK that trims no whole segment off it (tcp_tso_acked returns 0) stops the
    walk first, and a one-segment skb is never partially ACKed."""
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    s, rate = c.sender, c.sender.cc.rate
    mss = s.mss
    d0 = rate.delivered                                  # 1: the connection's handshake
    s.q.queue(0, 10 * mss, 1.0, 10)                      # one 10-segment skb, nothing else in flight
    s.cc.on_send(0, 10 * mss, 1.0, True)
    # an ACK of 2 of its 10 segments 1 ms later: a sample of 2 segments over 1 ms, RTT 1 ms
    acked, rs = _ack(s, 2 * mss, 1.001)
    assert acked == 2 and rs is not None
    bw, app, prior_delivered, rtt = rs
    assert bw == pytest.approx(2 / 0.001) and prior_delivered == d0 and rtt == pytest.approx(0.001)
    # the next ACK (4 more segments) samples from the same skb's snapshot: 6 segments over 2 ms
    _, (bw, _, prior_delivered, rtt) = _ack(s, 6 * mss, 1.002)
    assert bw == pytest.approx(6 / 0.002) and prior_delivered == d0 and rtt == pytest.approx(0.002)
    # less than a segment further: tcp_tso_acked trims nothing, no sample (and nothing delivered)
    assert _ack(s, 6 * mss + 100, 1.0025) == (0, None)
    # the rest of it: the skb is ACKed whole
    _, (bw, _, _, _) = _ack(s, 10 * mss, 1.003)
    assert bw == pytest.approx(10 / 0.003) and not len(s.q)
    # a one-segment skb is never partially ACKed (tcp_skb_pcount(skb) == 1 stops the walk)
    s.q.queue(10 * mss, 11 * mss, 1.004, 1)
    s.cc.on_send(10 * mss, mss, 1.004, True)
    assert _ack(s, 10 * mss + 700, 1.005) == (0, None)


def test_sacked_skbs_give_rate_samples_and_rounds_go_on_in_recovery(make_path):
    """tcp_sacktag_walk calls tcp_rate_skb_delivered for each newly SACKed skb, and tcp_rate_skb_sent
    snapshots every transmission, a retransmission included (__tcp_transmit_skb): while a hole waits for
    its retransmission, each ACK that SACKs data is a rate sample from the most recently sent skb it
    delivered, so BBR's packet-timed rounds (bbr_update_bw: prior_delivered reaching next_rtt_delivered)
    advance on SACKs; a SACKed skb's snapshot is used once (its tx.delivered_mstamp zeroed), so the
    cumulative ACK that later covers it gives no second sample; and the retransmission's own snapshot,
    taken when it was sent, is what its ACK samples."""
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    s, b = c.sender, c.sender.cc
    rate, mss, q = b.rate, c.sender.mss, c.sender.q
    d0 = rate.delivered
    for k in range(4):                                   # four 10-segment skbs, 1 ms apart
        q.queue(k * 10 * mss, (k + 1) * 10 * mss, 1.0 + k * 0.001, 10)
        b.on_send(k * 10 * mss, 10 * mss, 1.0 + k * 0.001, True)
    # the first skb is lost; an ACK SACKs the second 10 ms after it was sent
    newly = q.sacktag([(10 * mss, 20 * mss)], 0)
    assert newly == 10
    bw, app, prior, rtt = rate.gen(newly, 1.011, 50e-6)
    assert prior == d0 and bw == pytest.approx(10 / 0.011) and rtt == pytest.approx(0.010)
    assert q.recs[q.head + 1][5] is None                 # its snapshot is spent
    # the next SACK covers skbs 3 and 4: the sample is the later-sent one's (the 4th)
    newly = q.sacktag([(10 * mss, 40 * mss)], 0)
    bw, _, prior, _ = rate.gen(newly, 1.013, 50e-6)
    assert newly == 20 and prior == d0 and bw == pytest.approx(30 / 0.013)
    # the hole is retransmitted (one segment per skb) after the SACKs: its snapshot is this moment's
    q.recs[q.head][3] |= 2                               # LOST
    q.lost_out += 10
    r, _ = q.next_retransmit(1.014)
    b.on_send(r[0], mss, 1.014, False)
    assert r[5][0] == rate.delivered == d0 + 30
    # the retransmission's ACK (cumulative up to the first skb's second segment): sampled from its snapshot
    acked, rs = _ack(s, mss, 1.020)
    assert acked == 1 and rs[2] == d0 + 30 and rs[3] == -1.0   # no RTT from retransmitted data
    # the cumulative ACK of everything: only the first skb's unretransmitted rest has a snapshot left
    r2 = q.recs[q.head]
    assert r2[5] is not None and r2[0] == mss
    acked, rs = _ack(s, 40 * mss, 1.021)
    assert acked == 39 - 30 + 30 and rs[2] == d0              # the remaining 9 segments' send-time snapshot
    # and in a bulk transfer with losses, BBR's rounds advance while the cumulative ACK is stuck
    p2 = make_path(rate=20e6, delay=0.002, limit=30)
    (c2, _), = bulk_bbr(p2, 2.0)
    b2 = c2.sender.cc
    rounds = []
    main = b2.cong_control

    def watch(acked, delivered, now):
        una = c2.sender.snd_una
        main(acked, delivered, now)
        if b2.round_start:
            rounds.append((now, c2.sender.snd_una == una and delivered > 0))
    b2.cong_control = watch
    c2.sender._cc_main = watch
    p2.env.run(until=2.0)
    assert c2.sender.retransmits > 0
    assert any(on_sack for _, on_sack in rounds)          # a round began on an ACK that only SACKed


def test_bbr_takes_rate_samples_from_the_acks_of_a_split_gso_skb(make_path):
    """Behind a TBF whose burst (32 KB) is smaller than BBR's startup skbs (up to 45 segments), the skbs
    leave as segments and the receiver ACKs every second one: with tcp_clean_rtx_queue's partial-ACK
    samples (above) each of those ACKs is a rate sample, so BBR's rounds, bandwidth filter, min_rtt and
    ACK-aggregation epoch advance on them (without, only the ACK that completed a split skb was)."""
    from ovssim.path.port import EgressPort
    tbf = {"kind": "tbf", "rate": "20mbit", "burst": "32kb", "latency": "400ms"}
    p = make_path(rate=10e9, delay=25e-6, limit=1000)
    p.a.out = EgressPort(p.env, 10e9, tbf, out=p.b, prop_delay=25e-6, name="tbf")
    p.a.gso = True
    (c, _), = bulk_bbr(p, 1.0)
    b, q = c.sender.cc, c.sender.q
    sizes = {}                    # end_seq -> segments of each skb sent
    partial = []                  # (segments the ACKed skb had, a sample taken) of each partial ACK
    on_send, clean, delivered_cb, gen = b.on_send, q.clean, q.on_delivered, b.rate.gen
    seen = {}

    def watch_send(seq, n, now, new):
        if new:
            sizes[seq + n] = (n + c.sender.mss - 1) // c.sender.mss
        on_send(seq, n, now, new)

    def watch_clean(ack, ts_ecr):
        seen.clear()
        seen["ack"] = ack
        return clean(ack, ts_ecr)

    def watch_delivered(r):
        if "ack" in seen and r[1] > seen["ack"] and not r[3] & 1:
            seen["partial"] = sizes.get(r[1], 0)
        delivered_cb(r)

    def watch_gen(delivered, now, min_rtt):
        rs = gen(delivered, now, min_rtt)
        if "partial" in seen:
            partial.append((seen["partial"], rs is not None))
        seen.clear()
        return rs
    b.on_send, c.sender._cc_sent, q.clean, q.on_delivered, b.rate.gen = (watch_send, watch_send, watch_clean,
                                                                          watch_delivered, watch_gen)
    p.env.run(until=1.0)
    assert len(partial) >= 20 and min(segs for segs, _ in partial) > 22     # skbs larger than the burst
    assert all(sampled for _, sampled in partial)


def test_drain_and_gain_cycling_count_the_packets_in_the_network_at_the_next_departure(make_path):
    """bbr_packets_in_net_at_edt: in-flight less BtlBw x (EDT - now), plus a bbr_tso_segs_goal skb while
    the pacing gain (the one in force before this ACK: bbr_update_gains runs last in bbr_update_model)
    is above 1.  bbr_check_drain compares that with bbr_inflight(bw, 1), so on the ACK that ends STARTUP
    the queue counts as drained only if in-flight plus a goal-sized skb fits one BDP plus the
    quantization budget; the next ACK, at the drain gain, compares in-flight alone."""
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    s, b = c.sender, c.sender.cc
    now = p.env.now
    b.bw_filter.reset(b.round_count, 1e5)                # BtlBw 100 segments/ms
    b.min_rtt = 50e-6                                     # BDP 5 segments
    s.pacing_rate = 1e9                                   # bytes/s: a 45-segment TSO goal
    goal = b.tso_segs_goal()
    assert goal == 45
    s._wstamp = now                                       # next departure now
    assert b.packets_in_net_at_edt(100, now, HIGH_GAIN) == 100 + goal
    assert b.packets_in_net_at_edt(100, now, 1.0) == 100
    s._wstamp = now + 0.0002                              # 0.2 ms ahead: 20 segments delivered by then
    assert b.packets_in_net_at_edt(100, now, 1.0) == 80
    assert b.packets_in_net_at_edt(100, now, HIGH_GAIN) == 80 + goal
    assert b.packets_in_net_at_edt(10, now, 1.0) == 0
    s._wstamp = now
    target = b.inflight(b.bw, 1.0)                        # 5 + 3 x 45 = 140
    in_flight = target - 10                               # under the target, but not with the EDT skb
    s.q.queue(0, in_flight * s.mss, now, in_flight)
    assert s.in_flight == in_flight
    b.full_bw_reached = True
    b._check_drain(now)                                   # the ACK that ends STARTUP (gain still high)
    assert b.mode == DRAIN
    b._check_drain(now)                                   # the next ACK, at the drain gain
    assert b.mode == PROBE_BW



def test_a_write_on_an_idle_connection_makes_app_limited_samples_and_an_ack_does_not(make_path):
    """tcp_rate_check_app_limited runs where tcp_sendmsg_locked starts a write (the ACK path does not call
    it): an iperf3 stream's cookie, written on the idle connection, is an app-limited sample -- BBR takes
    it into its filter only as a new maximum, and bbr_check_full_bw_reached skips it, so the count of
    rounds without growth starts with the bulk data's samples."""
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    p.env.run(until=0.1)                                   # established, idle
    s, b = c.sender, c.sender.cc
    delivered = b.rate.delivered
    c.write(37)                                            # the cookie: marked before its bytes are queued
    assert b.rate.app_limited == (delivered or 1)          # delivered + in flight (0) at the write
    assert s.q.recs[-1][5][3] is True                      # its skb's snapshot is app-limited
    p.env.run(until=0.2)                                   # its ACK: nothing left to send, room in cwnd
    assert b.rate.app_limited == 0                         # the mark ended with it; the ACK set none
    assert b.bw > 0.0 and b.full_bw == 0.0                 # in the filter, not in the full-pipe count
    c.bulk(0.3)                                            # the bulk writer's first write marks again
    assert s.q.recs[s.q.head][5][3] is True
    p.env.run(until=0.3)
    assert b.full_bw > 0.0 and b.rate.app_limited == 0


def _htb_bbr_flow(make_path, rate="100mbit", read_delay=None):
    """One BBR flow behind an HTB that releases the GSO skbs whole (the bridge placement of
    validation/tcp_window: the shaper after a veth, TCP Small Queues not binding); ``read_delay``: the
    receiving application's delay from data queued to the read that takes it (None: reads at once)."""
    from ovssim.path.port import EgressPort
    htb = {"kind": "htb", "default": "10",
           "classes": [{"classid": "1:10", "parent": "1:", "rate": rate, "ceil": rate}]}
    p = make_path(rate=10e9, delay=25e-6, limit=1000)
    p.a.out = EgressPort(p.env, 10e9, htb, out=p.b, prop_delay=25e-6, name="htb")
    p.a.gso = True
    c, s = connect(p.env, p.a, p.b, 5001, cc="bbr")
    if read_delay is not None:
        s.receiver.read_delay = lambda: read_delay(p.env.now)
    return p, c, s


def test_acks_of_whole_gso_skbs_wait_for_the_reader_when_the_window_cannot_advance(make_path):
    """__tcp_ack_snd_check sends the every-second-segment ACK only if nothing is unread or the window
    __tcp_select_window offers is at least tp->rcv_wnd ("tcp_recvmsg() will send ACK otherwise"): a whole
    GSO skb of 10-40 segments, unread, takes more room than the free space holds above the advertised
    window, so the read's tcp_cleanup_rbuf sends the ACK (more than one segment unacknowledged).  This
    host (tcp_probe, bridge HTB 100 Mbit/s, data/local/tcp_window/2026-11-28-bbr): the sender processes
    the ACK a median 43 us after the receiver processed the skb, the softirq path alone takes ~25 us.
    A reader that reads at once (the default) leaves every ACK to the softirq."""
    p, c, s = _htb_bbr_flow(make_path, read_delay=lambda now: 100e-6)
    acks = []
    send_ack = s.receiver.send_ack

    def record(now):
        acks.append((now, s.receiver.rcv_nxt - s.receiver.copied_seq))
        send_ack(now)
    s.receiver.send_ack = record
    c.bulk(2.0)
    p.env.run(until=2.0)
    r = s.receiver
    steady = [a for a in acks if a[0] > 0.5]
    assert steady and r.reader_acks >= 0.9 * r.acks_sent
    assert all(unread == 0 for _, unread in steady)          # sent by the read, after it took the data
    p2, c2, s2 = _htb_bbr_flow(make_path)
    c2.bulk(2.0)
    p2.env.run(until=2.0)
    assert s2.receiver.reader_acks == 0 and s2.receiver.acks_sent > 0.9 * r.acks_sent


def test_a_reader_stall_withholds_the_acks_and_bbr_aggregation_grows_the_cwnd(make_path):
    """While the reader is not scheduled its data stays unread, so no ACK leaves (__tcp_ack_snd_check);
    its read sends one cumulative ACK (tcp_cleanup_rbuf), and bbr_update_ack_aggregation counts what that
    ACK carries beyond BtlBw x the epoch: extra_acked, and with it the cwnd target (bbr_set_cwnd), rises
    above one skb for the next 5-10 rounds.  Linux on this host (tcp_probe, bridge TBF 100 Mbit/s P1,
    2026-11-28-bbr): a 5.7 ms stall of the iperf3 server ended in a 46-segment ACK and a cwnd of 72-74
    where the flow had 56-64."""
    stall = (1.5, 1.505)

    def reader(now):
        return stall[1] - now if stall[0] <= now < stall[1] else 50e-6
    p, c, s = _htb_bbr_flow(make_path, read_delay=reader)
    log = []
    send_ack = s.receiver.send_ack

    def record(now):
        log.append((now, s.receiver.rcv_nxt - s.receiver.rcv_wup))
        send_ack(now)
    s.receiver.send_ack = record
    c.bulk(2.0)
    p.env.run(until=stall[0])
    b = c.sender.cc
    agg0, skb_max = b.aggregation_cwnd(), max(n for t, n in log if t > 1.0)
    before = (c.sender.cwnd, agg0)
    p.env.run(until=stall[1] + 0.002)
    in_stall = [n for t, n in log if stall[0] < t < stall[1]]
    assert not in_stall                                     # no ACK while the data sits unread
    cumulative = max(n for t, n in log if stall[1] <= t <= stall[1] + 1e-6)
    assert cumulative > 20 * c.sender.mss                  # the read ACKs everything that arrived meanwhile
    assert b.aggregation_cwnd() > max(agg0, skb_max // c.sender.mss)
    assert c.sender.cwnd > before[0]


# -- several flows: the later flows' cookie sample and the cwnd target (issue 18) -----------------------------

def _linux_target(bw_pps, min_rtt, cwnd_gain, pacing_Bps, extra_acked, full_bw, probe_phase0, mss=1448):
    """bbr_set_cwnd's target as tcp_bbr.c computes it: bbr_bdp (rounded up) at the cwnd gain, plus
    bbr_ack_aggregation_cwnd (the larger of the two extra_acked windows, at most 100 ms of bw, 0 before the pipe
    is full), then bbr_quantization_budget: 3 x bbr_tso_segs_goal (sk_pacing_rate >> sk_pacing_shift 10 bytes,
    at most GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER (192 here), in segments, at least 2 above 1.2 Mbit/s, at
    most 127), rounded up to even, +2 in the 5/4 phase."""
    bdp = math.ceil(bw_pps * min_rtt * cwnd_gain)
    agg = min(max(extra_acked), int(bw_pps * 0.100)) if full_bw else 0
    goal = min(max(int(min(pacing_Bps / 1024, 65536 - 1 - 192) // mss), 2 if pacing_Bps >= 1.2e6 / 8 else 1), 127)
    target = (bdp + agg + 3 * goal + 1) & ~1
    return target + 2 if probe_phase0 else target


@pytest.mark.parametrize("mode, cycle_idx, bw_bps, mrtt_us, pacing_bps, ss_cwnd", [
    # bridge HTB 20 Mbit/s P4 BBR on this host (data/local/tcp_window/2026-11-28-bbr5, ss -ti at 1.3-2.5 s):
    # each flow's bw is its cookie's sample, 1 segment over the idle round trip (11 / 23 us)
    (PROBE_BW, 2, 1053090592, 11, 1042.6e6, 182),      # pacing_gain 1, cwnd_gain 2
    (PROBE_BW, 0, 1053090592, 11, 1303.2e6, 184),      # pacing_gain 1.25
    (DRAIN, 0, 1053090592, 11, 358.4e6, 138),          # pacing_gain 0.34375, cwnd_gain 2.88672
    (DRAIN, 0, 386132960, 23, 131.4e6, 82),
])
def test_the_cwnd_target_of_linux_measured_bbr_states(make_path, mode, cycle_idx, bw_bps, mrtt_us, pacing_bps,
                                                      ss_cwnd):
    """ss -ti gives BBR's bw, mrtt, gains and pacing rate per flow; with them and one ACK of a whole 45-segment
    GSO skb as the aggregation term (extra_acked 45), bbr_set_cwnd's target is the cwnd ss showed in all four
    states: a 1 Gbit/s estimate keeps the TSO goal at 45 segments (135 of the 182) in PROBE_BW and 30 in DRAIN.
    The pacing rate follows from bw and the gain as bbr_set_pacing_rate sets it (once the pipe is full)."""
    p = make_path(rate=20e6, delay=5e-6)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    p.env.run(until=0.01)
    s, b = c.sender, c.sender.cc
    assert s.mss == 1448
    b.bw_filter.reset(b.round_count, bw_bps / 8 / s.mss)
    b.min_rtt = mrtt_us * 1e-6
    b.full_bw_reached = True
    b.extra_acked = [45, 0]
    b.mode, b.cycle_idx = mode, cycle_idx
    b.cwnd_gain = 2.0 if mode == PROBE_BW else HIGH_GAIN
    # the gains in tcp_bbr.c's fixed point (ss: pacing_gain 0.34375 and cwnd_gain 2.88672 in DRAIN), so the
    # pacing rate is ss's from its bw (1/2.885 would give 361.4 Mbit/s for 358.4)
    b.pacing_gain = PACING_GAINS[cycle_idx] if mode == PROBE_BW else DRAIN_GAIN
    b._set_pacing_rate(b.bw)
    assert s.pacing_rate * 8 == pytest.approx(pacing_bps, rel=1e-3)
    s.pacing_rate = pacing_bps / 8
    assert b.target_cwnd(b.bw) == ss_cwnd
    s.cwnd = 300                                   # above the target: one ACK brings it down to it
    b._set_cwnd(1, 0, b.bw)
    assert s.cwnd == ss_cwnd


def test_one_aggregation_term_gives_linux_traced_cwnd_in_every_gain_phase_behind_htb_100mbit(make_path):
    """Linux behind the bridge port's HTB 100 Mbit/s, one BBR flow (tcp_probe at 3.0 s,
    data/local/tcp_window/2026-11-28-bbr/bridge_htb_100mbit_P1_bbr_tcpprobe_1795869571; ss in the same run: bw
    112.745936 Mbit/s, mrtt 14 us): each ACK is one gain phase, and the cwnd after the ACKs of one cycle is 70 in the
    5/4 phase, 56 in the 3/4 phase and 62 in the six gain-1 phases.  tcp_bbr.c's target changes between phases only
    through bbr_quantization_budget -- 3 x bbr_tso_segs_goal at the phase's pacing rate (11 / 7 / 9 segments at 1.25 /
    0.75 / 1 x 0.99 x bw), rounded up to even, +2 in the 5/4 phase -- so one aggregation term must give all three:
    extra_acked 34 (1 + 34 + 27 = 62; 33 rounds up to the same) gives 70 and 56 as well, as the model's target does
    from the same inputs.
    (The model's own flow settles at extra_acked 28: its skbs, validation/tcp_window/bbr_alignment.py.)"""
    p = make_path(rate=100e6, delay=5e-6)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="bbr")
    p.env.run(until=0.01)
    s, b = c.sender, c.sender.cc
    bw_pps = 112745936 / 8 / s.mss
    b.bw_filter.reset(b.round_count, bw_pps)
    b.min_rtt = 14e-6
    b.full_bw_reached = True
    b.extra_acked = [34, 0]
    b.mode, b.cwnd_gain = PROBE_BW, 2.0
    for cycle_idx, tso_goal, linux_cwnd in ((2, 9, 62), (0, 11, 70), (1, 7, 56)):
        b.cycle_idx, b.pacing_gain = cycle_idx, PACING_GAINS[cycle_idx]
        b._set_pacing_rate(b.bw)
        assert b.tso_segs_goal() == tso_goal
        assert b.target_cwnd(b.bw) == linux_cwnd == _linux_target(bw_pps, 14e-6, 2.0, s.pacing_rate, [34, 0], True,
                                                                  cycle_idx == 0)
        s.cwnd = 300
        b._set_cwnd(1, 0, b.bw)
        assert s.cwnd == linux_cwnd


def test_later_flows_cookie_sets_btlbw_for_ten_rounds_and_cwnd_follows_the_target(make_path):
    """iperf3 writes a 37-byte cookie on each idle stream before the test: tcp_rate_check_app_limited marks it,
    its ACK is a sample of one segment (tp->delivered counts packets) over the idle round trip, and BBR takes an
    app-limited sample into an empty max filter (bbr_update_bw).  Through a 20 Mbit/s FIFO with a ~0.1 ms idle
    round trip that is ~10x the link: the estimate of every flow stays there until the filter's 10 rounds
    (bbr_bw_rtts) have passed -- rounds as long as the queue the flows build meanwhile -- then falls to the
    flows' share.  On every ACK after the pipe is full each flow's cwnd moves to tcp_bbr.c's target from its own
    bw, min_rtt, pacing rate and extra_acked (cwnd = min(cwnd + acked, target); up by the ACKed segments only
    below it), so with the cookie's estimate the TSO goal, and the queue, stay large (Linux, bridge HTB
    20 Mbit/s P4: bw 0.39-1.16 Gbit/s for 2.5-3.3 s, cwnd 82-184, RTT up to 350-440 ms)."""
    p = make_path(rate=20e6, delay=5e-6, limit=100000)
    flows = [connect(p.env, p.a, p.b, 5001 + i, cc="bbr")[0] for i in range(4)]
    p.env.run(until=0.01)
    cookie = {}
    log = {i: [] for i in range(4)}
    for i, c in enumerate(flows):
        s, b = c.sender, c.sender.cc
        cong = s._cc_main                                  # the sender's bbr_main

        def hook(acked, delivered, now, i=i, s=s, b=b, cong=cong):
            prev = s.cwnd
            cong(acked, delivered, now)
            if i not in cookie and b.bw > 0:
                cookie[i] = (now, b.round_count, b.bw)
            log[i].append((now, b.round_count, b.bw, b.min_rtt, s.pacing_rate, list(b.extra_acked), b.mode,
                           b.cycle_idx, b.cwnd_gain, b.full_bw_reached, b.packet_conservation, prev, acked, s.cwnd))
        s._cc_main = hook
        written = p.env.now
        c.write(37)
        p.env.run(until=p.env.now + 0.002)
        t_ack, _, bw = cookie[i]
        # one packet over its round trip, in whole microseconds (tcp_rate.c's interval_us)
        assert bw == pytest.approx(1e6 / (_us(t_ack) - _us(written)), rel=1e-9)
        assert bw * s.mss * 8 > 4 * 20e6
    for c in flows:
        c.bulk(6.0)
    p.env.run(until=6.0)
    link_pps = 20e6 / 8 / 1514
    for i, c in enumerate(flows):
        _, r0, bw0 = cookie[i]
        held = [e for e in log[i] if e[1] <= r0 + 10]
        after = [e for e in log[i] if e[1] > r0 + 10]
        assert held[-1][0] > 0.5 and all(e[2] == bw0 for e in held)       # the cookie's estimate through round r0 + 10
        assert after and all(e[2] < bw0 for e in after)                   # gone from round r0 + 11 (dt > 10)
        assert after[-1][2] < 1.2 * link_pps                              # then about the flows' share
        checked = 0
        for (now, rnd, bw, mrtt, pacing, extra, mode, cyc, gain, full, cons, prev, acked, cwnd) in log[i]:
            if not full or cons or mode == PROBE_RTT or not acked:
                continue
            target = _linux_target(bw, mrtt, gain, pacing, extra, full, mode == PROBE_BW and cyc == 0)
            assert cwnd == max(min(prev + acked, target), 4)
            checked += 1
        assert checked > 100
    c0 = flows[0].sender.cc
    assert c0.mode == PROBE_BW
