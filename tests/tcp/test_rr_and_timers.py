"""TCP_RR latency, delayed ACKs, the retransmission timer, RTT estimation."""
from __future__ import annotations

import pytest

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, tcp_frame_size
from ovssim.path.cpu import CpuPool
from ovssim.tcp import RttEstimator, connect
from ovssim.tcp.cubic import Cubic
from ovssim.tcp.newreno import NewReno
from ovssim.workloads.netperf import NetperfTcpRR


def metrics(w):
    return {m.name: m.value for m in w.metrics()}


def one_way(nbytes_payload, rate, delay):
    return (tcp_frame_size(nbytes_payload) + ETH_PREAMBLE_FCS_IFG) * 8 / rate + delay


@pytest.mark.parametrize("rr,cost", [((1, 1), 0.0), ((1, 1), 50e-6), ((200, 4000), 20e-6)])
def test_tcp_rr_latency_is_path_rtt_plus_processing(make_path, rr, cost):
    rate, delay = 100e6, 0.0002
    p = make_path(rate=rate, delay=delay)
    w = NetperfTcpRR(length=2.0, rr=rr, server_cost=cost)
    w.start(p.ctx(2.0))
    p.env.run(until=2.0)
    req, resp = rr
    # request segments then response segments, each crossing one serialising port
    mss = 1448
    def transfer(n):
        full, tail = divmod(n, mss)
        segs = [mss] * full + ([tail] if tail else [])
        # store-and-forward: the last segment arrives after all are serialised
        return sum((tcp_frame_size(s) + ETH_PREAMBLE_FCS_IFG) * 8 / rate for s in segs) + delay
    expected = transfer(req) + cost + transfer(resp)
    m = metrics(w)
    assert m["latency_mean"] / 1e3 == pytest.approx(expected, rel=0.02)
    # the thesis's latency: 1 / transactions per second, same here (no stalls)
    assert m["rtt_mean"] == pytest.approx(m["latency_mean"], rel=0.01)
    assert m["latency_p99"] < 1.05 * m["latency_p50"]     # no 40 ms delayed-ACK/Nagle stall
    assert m["retransmits"] == 0


def test_tcp_rr_server_work_on_a_busy_cpu(make_path):
    p = make_path(rate=100e6, delay=0.0001)
    p.b.cpu = CpuPool(p.env, cores=1)
    w = NetperfTcpRR(length=1.0, server_cost=100e-6)
    w.start(p.ctx(1.0))
    p.env.run(until=1.0)
    assert p.b.cpu.jobs == w.transactions or p.b.cpu.jobs == w.transactions + 1
    assert metrics(w)["transactions"] == pytest.approx(1 / (2 * one_way(1, 100e6, 0.0001) + 100e-6),
                                                       rel=0.01)


def test_bulk_receiver_acks_every_second_segment(make_path):
    p = make_path(rate=100e6, delay=0.001)
    c, s = connect(p.env, p.a, p.b, 5001)
    c.bulk(2.0)
    p.env.run(until=2.0)
    r = s.receiver
    # 16 quick ACKs at the start, then one ACK per two full segments
    assert r.acks_sent == pytest.approx(r.segs_in / 2, rel=0.02)
    assert r.delayed_acks <= 2


def test_lone_segment_is_acked_by_the_40ms_timer(make_path):
    p = make_path(rate=100e6, delay=0.001)
    c, s = connect(p.env, p.a, p.b, 5001, nodelay=True)
    s.receiver.quick = 0          # past the connection's quick-ACK phase
    c.write(100)
    p.env.run(until=0.5)
    r = s.receiver
    assert r.delayed_acks == 1 and r.acks_sent == 1
    # the one RTT sample is the path RTT plus the 40 ms delayed-ACK timer
    assert c.sender.rtt.latest == pytest.approx(0.040 + one_way(100, 100e6, 0.001)
                                                + one_way(0, 100e6, 0.001), rel=1e-3)


def test_rto_doubles_on_a_black_hole(make_path):
    # everything after the first 20 data segments is lost: timeouts at RTO, 2 RTO, 4 RTO ...
    p = make_path(rate=100e6, delay=0.001, fwd_pattern=range(20, 10_000))
    c, s = connect(p.env, p.a, p.b, 5001)
    c.bulk(100.0)
    fires = []
    orig = c.sender._on_timeout
    def spy(now):
        fires.append(now)
        orig(now)
    c.sender._on_timeout = spy
    p.env.run(until=30.0)
    gaps = [b - a for a, b in zip(fires, fires[1:])]
    assert len(fires) >= 5
    for g1, g2 in zip(gaps, gaps[1:]):
        assert g2 == pytest.approx(2 * g1, rel=1e-6)
    # the first timeout is srtt + max(4 rttvar, 200 ms) after the last (re)transmission of the head
    assert 0.2 <= gaps[0] <= 0.5
    assert c.sender.cwnd == 1 and c.sender.timeouts == len(fires)


def test_rtt_estimator_follows_rfc6298_with_linux_minimum():
    e = RttEstimator()
    assert e.rto == 1.0                     # RFC 6298 initial RTO
    e.sample(0.010)
    assert e.srtt == 0.010 and e.rttvar == 0.005
    assert e.rto == pytest.approx(0.010 + 0.200)   # 4*rttvar = 20 ms < 200 ms minimum
    e.sample(0.020)
    assert e.rttvar == pytest.approx(0.75 * 0.005 + 0.25 * 0.010)
    assert e.srtt == pytest.approx(0.875 * 0.010 + 0.125 * 0.020)
    for _ in range(3):
        e.sample(1.0)
    assert e.rto == pytest.approx(e.srtt + 4 * e.rttvar)
    assert e.backed_off(20) == 120.0


class _S:
    """A stand-in sender holding what congestion control reads and writes."""
    def __init__(self, cwnd):
        self.cwnd, self.cwnd_cnt, self.ssthresh = cwnd, 0, 1 << 30
        self.snd_una = self.snd_nxt = 0

        class Env:
            _now = 0.0
        self.env = Env()


def test_newreno_halves_and_adds_one_per_window():
    cc = NewReno()
    s = _S(100)
    cc.attach(s)
    s.ssthresh = cc.ssthresh()
    assert s.ssthresh == 50
    s.cwnd = 50
    for _ in range(50):               # one window of delivered segments
        cc.cong_avoid(1, 0.0)
    assert s.cwnd == 51
    s.cwnd, s.ssthresh = 10, 100
    cc.cong_avoid(10, 0.0)            # slow start: +1 per delivered segment
    assert s.cwnd == 20


def test_cubic_decrease_and_recovery_to_wmax():
    cc = Cubic(hystart=False, tcp_friendliness=False)
    s = _S(100)
    cc.attach(s)
    s.ssthresh = cc.ssthresh()
    assert s.ssthresh == 70           # (100 * 717) >> 10, beta ~ 0.7
    assert cc.last_max_cwnd == 100
    s.cwnd = s.ssthresh
    # W(t) = C (t - K)^3 + W_max: the window is back at W_max after K = cbrt((W_max - cwnd)/C)
    k = ((100 - 70) / 0.4) ** (1 / 3)
    rtt = 0.05
    cc.delay_min = rtt
    t = 0.0
    trace = []
    while t < 2 * k:
        w = s.cwnd
        for i in range(w):            # one window of ACKs per RTT, evenly spread
            cc.cong_avoid(1, t + rtt * i / w)
        t += rtt
        trace.append((t, s.cwnd))
    at_k = min(trace, key=lambda x: abs(x[0] - k))[1]
    assert 97 <= at_k <= 103
    # concave then convex: slow growth near W_max, faster growth away from it
    mid = min(trace, key=lambda x: abs(x[0] - k / 2))[1]
    assert mid - 70 > 100 - mid
    late = min(trace, key=lambda x: abs(x[0] - 2 * k))[1]
    assert late == pytest.approx(100 + 0.4 * (k + rtt) ** 3, abs=6)
    # fast convergence: a loss below the previous maximum lowers W_max further
    s.cwnd = 90
    cc.ssthresh()
    assert cc.last_max_cwnd == pytest.approx(90 * (1 + 717 / 1024) / 2)


def test_cubic_is_reno_friendly_at_small_windows():
    cc = Cubic(hystart=False)
    s = _S(10)
    cc.attach(s)
    s.ssthresh = cc.ssthresh()        # 7, W_max 10: the cubic curve is almost flat
    s.cwnd = s.ssthresh
    rtt = 0.05
    cc.delay_min = rtt
    for r in range(100):
        w = s.cwnd
        for i in range(w):
            cc.cong_avoid(1, r * rtt + rtt * i / w)
    # 100 RTTs at the Reno-friendly rate 3(1-b)/(1+b) ~ 0.53 segment per RTT
    assert s.cwnd >= 7 + 0.45 * 100


@pytest.mark.parametrize("nodelay", [False, True])
def test_nagle_meets_delayed_ack_on_write_write_read(make_path, nodelay):
    # the classic stall: two small writes; Nagle holds the second until the first is
    # ACKed, and the receiver delays that ACK by 40 ms (TCP_NODELAY removes it)
    p = make_path(rate=100e6, delay=0.001)
    c, s = connect(p.env, p.a, p.b, 5001, nodelay=nodelay)
    s.receiver.quick = 0
    got = []
    s.receiver.on_deliver = lambda n, now: got.append((now, n))
    c.write(100)
    c.write(100)
    p.env.run(until=1.0)
    assert sum(n for _, n in got) == 200
    last = got[-1][0]
    if nodelay:
        assert last < 0.002
    else:
        # first segment lands, 40 ms later its ACK leaves, and only then the second is sent
        seg, ack = one_way(100, 100e6, 0.001), one_way(0, 100e6, 0.001)
        assert last == pytest.approx(seg + 0.040 + ack + seg, rel=1e-3)
