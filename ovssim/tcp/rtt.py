"""Round-trip time estimation and the retransmission timeout (RFC 6298, as Linux).

Smoothed RTT and RTT variation with gains 1/8 and 1/4 (RFC 6298 section 2).
Linux folds its minimum RTO into the variation term rather than clamping the
result (``tcp_rtt_estimator``/``tcp_set_rto`` in net/ipv4/tcp_input.c), so the
timeout is ``SRTT + max(4 * RTTVAR, 200 ms)``, bounded by 120 s; each
expiry doubles it (exponential back-off, RFC 6298 section 5.5).
"""
from __future__ import annotations

from .defaults import RTO_INITIAL, RTO_MAX, RTO_MIN


class RttEstimator:
    __slots__ = ("srtt", "rttvar", "rto", "min_rtt", "latest", "samples", "rto_min", "rto_max")

    def __init__(self, rto_min: float = RTO_MIN, rto_initial: float = RTO_INITIAL,
                 rto_max: float = RTO_MAX):
        self.srtt = 0.0
        self.rttvar = 0.0
        self.rto = rto_initial
        self.rto_min = rto_min
        self.rto_max = rto_max
        self.min_rtt = float("inf")
        self.latest = 0.0
        self.samples = 0

    def sample(self, r: float) -> None:
        """Take one RTT measurement ``r`` seconds (never from an ambiguous retransmission)."""
        if r <= 0.0:
            r = 1e-6
        self.latest = r
        if r < self.min_rtt:
            self.min_rtt = r
        if self.samples == 0:
            self.srtt = r
            self.rttvar = r / 2
        else:
            err = r - self.srtt
            self.rttvar += 0.25 * ((err if err > 0 else -err) - self.rttvar)
            self.srtt += 0.125 * err
        self.samples += 1
        var = 4.0 * self.rttvar
        rto = self.srtt + (var if var > self.rto_min else self.rto_min)
        self.rto = rto if rto < self.rto_max else self.rto_max

    def backed_off(self, backoff: int) -> float:
        """The timeout after ``backoff`` consecutive expiries (doubling, capped at RTO_MAX)."""
        rto = self.rto * (1 << backoff) if backoff < 30 else self.rto_max
        return rto if rto < self.rto_max else self.rto_max
