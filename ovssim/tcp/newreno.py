"""NewReno congestion control: Linux ``tcp_reno`` (net/ipv4/tcp_cong.c).

Slow start doubles cwnd per RTT; congestion avoidance adds one segment per
window of delivered segments (counted in segments, not ACKs, so delayed ACKs
do not slow growth, RFC 3465); a loss halves cwnd: ``ssthresh = max(cwnd/2, 2)``
(RFC 5681 section 3.1).  The NewReno part -- staying in recovery until the
whole window sent before the loss is acknowledged and retransmitting one hole
per partial ACK (RFC 6582) -- is in the sender's loss recovery.
"""
from __future__ import annotations

from .congestion import CongestionControl


class NewReno(CongestionControl):
    name = "newreno"

    def ssthresh(self) -> int:
        half = self.s.cwnd >> 1
        return half if half > 2 else 2

    def cong_avoid(self, acked: int, now: float) -> None:
        s = self.s
        if s.cwnd < s.ssthresh:
            acked = self.slow_start(acked)
            if not acked:
                return
        self.additive_increase(s.cwnd, acked)
