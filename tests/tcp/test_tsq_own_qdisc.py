"""TCP Small Queues with the shaper on the sender's own veth (probe.py's default placement, issue 18).

The skbs in a qdisc of the sender's own device are still charged to the socket (``sk_wmem_alloc``), so
``tcp_small_queue_check`` (net/ipv4/tcp_output.c) bounds them: ``tcp_write_xmit`` sends the skb it has cut only if
``sk_wmem_alloc`` (1 + the truesize of this socket's skbs below TCP) is at most
``max(2 * skb->truesize, sk_pacing_rate >> sk_pacing_shift)`` (at most ``tcp_limit_output_bytes``), or the
retransmit queue holds at most one skb (``tcp_rtx_queue_empty_or_single_skb``, Linux >= 6.7).  The check runs
before the skb is charged, so the bytes below the socket reach at most the limit plus that skb's truesize: three
skbs when the new one is at least the mean of the two queued (Linux, this host: ss ``t`` 169016-192184 with 3 skbs
in the qdisc while cwnd grew, then 131984 = two 45-segment skbs; data/local/tcp_window/htb_100mbit_P1_cubic_*).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ovssim.tcp import sender as sender_mod
from ovssim.tcp.buffers import tcp_skb_truesize
from ovssim.tcp.defaults import PACING_SHIFT

TRACE = (Path(__file__).resolve().parents[2] / "data" / "local" / "tcp_window" / "2026-11-28-tsq"
         / "sender_htb_100mbit_P1_cubic_trace.json.gz")
MSS = 1448


def _kernel_limit(n, pacing_rate, limit_output_bytes, head):
    """tcp_small_queue_check's limit for an skb of ``n`` payload bytes (no pacing rate yet: ~0UL, no limit)."""
    paced = (pacing_rate or float("inf")) / (1 << PACING_SHIFT)
    return min(max(2 * tcp_skb_truesize(n, head), paced), limit_output_bytes)


@pytest.fixture(scope="module")
def sender_htb_100mbit():
    """probe.py's sender htb 100mbit -P 1 -C cubic (1 s of transfer): every TSQ check with its inputs, every new
    skb with the bytes below the socket before it, and the data stream's (t, cwnd, srtt) at each ACK."""
    from ovssim.runner import run_scenario
    from ovssim.validate import tcp_window
    from ovssim.workloads import iperf_tcp
    checks, sends, acks, streams = [], [], [], []
    tsq_full, transmit, on_ack = (sender_mod.TcpSender._tsq_full, sender_mod.TcpSender._transmit,
                                  sender_mod.TcpSender.on_ack)
    opened = iperf_tcp.IperfTcp._open_stream

    def _tsq_full(self, nbytes):
        # len(q): skbs in the retransmit queue before this one is queued
        before = (self, nbytes, self.wmem_queued, self.pacing_rate, len(self.q), self.limit_output_bytes,
                  self.skb_head)
        held = tsq_full(self, nbytes)
        checks.append((*before, held))
        return held

    def _transmit(self, seq, n, now, new, segs=1):
        if new and self.tsq:
            # q.queue() already holds this skb: len(q) - 1 skbs were out before it
            sends.append((self, n, self.wmem_queued, self.pacing_rate, len(self.q) - 1, self.limit_output_bytes,
                          self.skb_head))
        return transmit(self, seq, n, now, new, segs)

    def _on_ack(self, pkt, now):
        acks.append((self, now, self.cwnd, self.rtt.srtt))
        return on_ack(self, pkt, now)

    def open_stream(self, measured_from, until):
        c, s = opened(self, measured_from, until)
        streams.append(c)
        return c, s
    sender_mod.TcpSender._tsq_full, sender_mod.TcpSender._transmit = _tsq_full, _transmit
    sender_mod.TcpSender.on_ack = _on_ack
    iperf_tcp.IperfTcp._open_stream = open_stream
    try:
        args = {"shaper": "htb", "rate": "100mbit", "flows": 1, "cc": "cubic", "time": 1}
        run_scenario(tcp_window.scenario(args), reps=1, seed=1)
    finally:
        sender_mod.TcpSender._tsq_full, sender_mod.TcpSender._transmit = tsq_full, transmit
        sender_mod.TcpSender.on_ack = on_ack
        iperf_tcp.IperfTcp._open_stream = opened
    data = max(streams, key=lambda c: c.sender.bytes_sent).sender
    return (data, [c[1:] for c in checks if c[0] is data], [s[1:] for s in sends if s[0] is data],
            [a[1:] for a in acks if a[0] is data])


def test_every_tsq_decision_is_the_kernels(sender_htb_100mbit):
    """Held exactly when sk_wmem_alloc > limit and the rtx queue holds two skbs or more."""
    sender, checks, _, _ = sender_htb_100mbit
    assert sender.tsq
    held = 0
    for n, wmem, rate, rtx_skbs, lob, head, was_held in checks:
        kernel = wmem > 0 and 1 + wmem > _kernel_limit(n, rate, lob, head) and rtx_skbs > 1
        assert was_held == kernel, (n, wmem, rate, rtx_skbs)
        held += was_held
    assert held > 100                       # TSQ does bind here (the own device's qdisc holds the skbs)
    # the leftover segment's skb an odd cwnd leaves is refused: 2 x its truesize and ~1 ms of the pacing rate
    # are less than the half-cwnd skb queued before it
    assert any(was_held and n == MSS for n, *_, was_held in checks)


def test_bytes_below_the_socket_stay_within_the_limit_plus_the_new_skb(sender_htb_100mbit):
    _, _, sends, _ = sender_htb_100mbit
    assert len(sends) > 100
    most = 0
    for n, wmem, rate, rtx_skbs, lob, head in sends:
        after = wmem + tcp_skb_truesize(n, head)
        if rtx_skbs > 1:        # the check let it go: sk_wmem_alloc <= limit before it was charged
            assert after <= _kernel_limit(n, rate, lob, head) + tcp_skb_truesize(n, head)
        most = max(most, after)
    assert most <= 3 * tcp_skb_truesize(45 * MSS)   # never more than three full GSO skbs below the socket


def _linux_growth():
    """(cwnd, srtt s) at each ACK of the traced Linux flow (tcp_probe shows them before the ACK is processed)."""
    import re
    ev = re.compile(r"tcp_probe: family=AF_INET src=(\S+) dest=(\S+:5201) mark=\S+ data_len=0 .* "
                    r"snd_cwnd=(\d+) ssthresh=\d+ snd_wnd=\d+ srtt=(\d+)")
    with gzip.open(TRACE, "rt") as fh:
        run = json.load(fh)
    rows = [m.groups() for m in map(ev.search, run["trace"].splitlines()) if m]
    port = max({r[0] for r in rows}, key=lambda p: sum(r[0] == p for r in rows))
    return [(int(c), int(s) * 1e-6) for p, _, c, s in rows if p == port]


@pytest.mark.parametrize("cwnd", [30, 40, 50])
def test_two_half_cwnd_skbs_give_linux_s_srtt_at_each_cwnd(sender_htb_100mbit, cwnd):
    """While the window leaves as two equal skbs (tcp_cwnd_test's half-cwnd quota), each waits one skb's
    transmission behind the other in the HTB: the srtt at each cwnd is Linux's (traced, cwnd 16 -> 53 in
    ~100 ms after HyStart's ACK train; 2.79 / 3.74 / 4.78 ms at cwnd 30 / 40 / 50)."""
    _, _, _, acks = sender_htb_100mbit
    model = next(s for _, c, s in acks if c >= cwnd)
    linux = next(s for c, s in _linux_growth() if c >= cwnd)
    assert model == pytest.approx(linux, rel=0.03)
