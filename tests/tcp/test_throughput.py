"""Bulk TCP against the analytic limits: framing, window/RTT, Mathis, fairness."""
from __future__ import annotations

import math

import pytest

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, tcp_frame_size
from ovssim.tcp import connect
from ovssim.workloads.iperf_tcp import IperfTcp
from ovssim.workloads.netperf import NetperfTcpStream


def metric(workload, name):
    return {m.name: m.value for m in workload.metrics()}[name]


@pytest.mark.parametrize("cc", ["cubic", "newreno"])
def test_one_flow_fills_clean_100mbit_path(make_path, cc):
    # Ethernet framing limit for 1448-byte payloads: 100e6 * 1448 / (1514 + 24) = 94.1 Mbit/s
    limit = 100.0 * 1448 / (tcp_frame_size(1448) + ETH_PREAMBLE_FCS_IFG)
    p = make_path(rate=100e6, delay=0.001)
    w = NetperfTcpStream(length=5.0, cc=cc)
    w.start(p.ctx(5.0))
    p.env.run(until=5.5)
    thr = metric(w, "throughput")
    assert 93.0 <= thr <= limit + 1e-9


@pytest.mark.parametrize("side", ["receiver", "sender"])
def test_window_limited_throughput_is_window_over_rtt(make_path, side):
    # 100 Mbit/s, 20 ms base RTT: BDP = 250 kB, far above a 32 KiB buffer.
    p = make_path(rate=100e6, delay=0.010)
    buf = 32 * 1024
    kw = {"remote_buffer": buf} if side == "receiver" else {"local_buffer": buf}
    w = NetperfTcpStream(length=6.0, **kw)
    w.start(p.ctx(6.0))
    p.env.run(until=6.0)
    mss = 1448
    # the receiver advertises whole segments; a sender's writer is woken only when 2/3 of its
    # buffer is left queued (sk_stream_write_space), so between 2/3 and all of it is in flight
    rtt = w.client.sender.rtt.min_rtt
    thr = metric(w, "throughput")
    if side == "receiver":
        assert thr == pytest.approx((buf // mss) * mss * 8 / rtt / 1e6, rel=0.05)
    else:
        assert 0.95 * (2 * buf / 3) * 8 / rtt / 1e6 <= thr <= 1.05 * buf * 8 / rtt / 1e6
    assert thr < 20.0   # clearly window-limited, not link-limited


def _mathis_run(make_path, p_loss, sack, seconds=60.0, delay=0.010):
    path = make_path(rate=100e6, delay=delay, loss_p=p_loss, seed=7)
    c, s = connect(path.env, path.a, path.b, 5001, cc="newreno", sack=sack, keep_samples=False)
    c.bulk(seconds)
    path.env.run(until=seconds)
    warm = 0.0
    thr = s.receiver.bytes_received * 8 / (seconds - warm)
    base_rtt = 2 * delay + (tcp_frame_size(1448) + 24 + tcp_frame_size(0) + 24) * 8 / 100e6
    return thr, base_rtt, c.sender


@pytest.mark.parametrize("p_loss", [0.002, 0.005, 0.01])
def test_newreno_follows_mathis_under_random_loss(make_path, p_loss):
    thr, rtt, snd = _mathis_run(make_path, p_loss, sack=True)
    mathis = 1.22 * 1448 * 8 / (rtt * math.sqrt(p_loss))
    assert thr == pytest.approx(mathis, rel=0.20), (thr / 1e6, mathis / 1e6, snd.timeouts)


def test_mathis_without_sack(make_path):
    p_loss = 0.005
    thr, rtt, snd = _mathis_run(make_path, p_loss, sack=False)
    mathis = 1.22 * 1448 * 8 / (rtt * math.sqrt(p_loss))
    assert thr == pytest.approx(mathis, rel=0.20), (thr / 1e6, mathis / 1e6, snd.timeouts)


@pytest.mark.parametrize("cc,n", [("cubic", 4), ("newreno", 3)])
def test_flows_share_fifo_bottleneck_fairly(make_path, cc, n):
    p = make_path(rate=20e6, delay=0.005, limit=100)
    w = IperfTcp(parallel=n, time=10.0, cc=cc)
    w.start(p.ctx(10.0, seed=3))
    p.env.run(until=10.0)
    m = {x.name: x.value for x in w.metrics()}
    assert m["fairness"] >= 0.9
    # together they still fill the link
    assert m["throughput"] >= 0.9 * 20.0 * 1448 / 1538
    assert m["retransmits"] > 0       # a 100-packet FIFO must overflow


class _Reorder:
    """Holds back every ``every``-th packet by ``extra`` seconds (a path that reorders)."""

    def __init__(self, env, out, every, extra):
        self.env, self.out, self.every, self.extra, self.n = env, out, every, extra, 0

    def put(self, pkt):
        self.n += 1
        if self.n % self.every == 0:
            pkt.t = max(pkt.t, self.env.now) + self.extra
        self.out.put(pkt)


def test_sack_sender_adapts_to_reordering(make_path):
    # every 50th data segment arrives ~8 segments late: no loss at all on this path
    p = make_path(rate=100e6, delay=0.002)
    p.a.out = _Reorder(p.env, p.fwd, every=50, extra=8 * 1538 * 8 / 100e6)
    c, s = connect(p.env, p.a, p.b, 5001)
    c.bulk(3.0)
    p.env.run(until=3.0)
    snd = c.sender
    assert s.receiver.ofo_segments > 100            # the receiver saw the reordering
    assert snd.reordering >= 8                      # ... and the sender learnt its degree
    assert snd.retransmits <= 5                     # only the first events cost spurious retransmissions
    assert s.receiver.bytes_received * 8 / 3.0 / 1e6 > 85.0


def test_omit_leaves_out_the_start_as_iperf3_does(make_path):
    """iperf3 -O: the first seconds (slow start, a shaper's initial burst) are not in the result."""
    from ovssim.path.port import EgressPort

    def shaped():
        # a 20 Mbit/s TBF with a 200 kB bucket before the 100 Mbit/s link: the bucket passes at line rate first
        p = make_path(rate=100e6, delay=0.001)
        p.fwd = EgressPort(p.env, 100e6, {"kind": "tbf", "rate": "20mbit", "burst": "200kb", "latency": "50ms"},
                           out=p.b, prop_delay=0.001, name="fwd")
        p.a.out = p.fwd
        return p

    steady = 20.0 * 1448 / tcp_frame_size(1448)          # TBF counts the frame without the wire overhead
    p = shaped()
    whole = IperfTcp(time=0.5)
    whole.start(p.ctx(1.0))
    p.env.run(until=0.6)
    assert metric(whole, "throughput") > steady * 1.1                  # the burst inflates a short test
    q = shaped()
    omitted = IperfTcp(time=0.5, omit=0.5)
    omitted.start(q.ctx(1.0))
    q.env.run(until=1.1)
    assert omitted.t1 == pytest.approx(1.0)                             # runs omit + time
    assert metric(omitted, "throughput") == pytest.approx(steady, rel=0.01)
