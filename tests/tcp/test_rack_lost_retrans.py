"""A retransmission lost again is found by RACK and sent again, not after a retransmission timeout.

Linux (net/ipv4/tcp_recovery.c, ``tcp_rack_detect_loss``, the default loss detection since 4.18): once data
sent after a retransmission is delivered (SACKed or acknowledged), the retransmission -- sent before it by
more than the reordering window, which is zero in Recovery while no reordering has been seen -- is lost and
goes out again.  Without it the flow waits for the RTO (200 ms minimum) with its window open.
"""
from __future__ import annotations

from ovssim.tcp import connect


class DropSeqTimes:
    """Drops the first ``times`` data frames carrying sequence ``seq`` (an original and its retransmissions)."""

    def __init__(self, out, seq: int, times: int):
        self.out, self.seq, self.left = out, seq, times
        self.dropped = 0

    def put(self, pkt) -> None:
        if pkt.kind == "data" and pkt.payload and pkt.seq <= self.seq < pkt.seq + pkt.payload and self.left:
            self.left -= 1
            self.dropped += 1
            return
        self.out.put(pkt)


def _run(make_path, times: int):
    p = make_path(rate=100e6, delay=0.001)
    c, _ = connect(p.env, p.a, p.b, 5001)
    drop = DropSeqTimes(p.fwd, c.sender.snd_una + 200 * c.sender.mss, times)
    p.a.out = drop
    c.bulk(1.0)
    p.env.run(until=1.0)
    return c.sender, drop


def test_a_lost_retransmission_is_resent_without_a_timeout(make_path):
    s, drop = _run(make_path, times=2)          # the original and its first retransmission
    assert drop.dropped == 2
    assert s.lost_retrans == 1
    assert s.timeouts == 0
    assert s.retransmits == 2


def test_a_single_loss_needs_no_second_retransmission(make_path):
    s, drop = _run(make_path, times=1)
    assert drop.dropped == 1 and s.lost_retrans == 0 and s.timeouts == 0 and s.retransmits == 1


def test_a_retransmission_not_yet_overtaken_is_left_alone():
    """The rule itself (RtxQueue.mark_lost_retrans): only a retransmission sent before the latest delivered
    original by more than the window is re-marked."""
    from ovssim.tcp.rtx_queue import LOST, RETRANS, RtxQueue
    q = RtxQueue(1000)
    for i in range(4):
        q.queue(i * 1000, (i + 1) * 1000, 0.001 * i, 1)
    q.recs[0][3] |= LOST
    q.lost_out = 1
    r, _ = q.next_retransmit(0.010)             # retransmitted at 10 ms
    q.queue(4000, 5000, 0.012, 1)               # new data sent at 12 ms
    q.sacktag([(4000, 5000)], 0)                 # ... and SACKed: sent after the retransmission
    assert q.mark_lost_retrans(0.005) == 0       # within a 5 ms window: not yet
    assert q.mark_lost_retrans(0.0) == 1
    assert r[3] & LOST and not r[3] & RETRANS and q.retrans_out == 0
    assert q.next_retransmit(0.013)[0] is r      # it goes out again
