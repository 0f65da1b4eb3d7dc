"""What TCP tools report: goodput in a window, RTT percentiles, fairness."""
from __future__ import annotations

import numpy as np


class GoodputMeter:
    """Counts bytes the receiving application reads between ``start`` and ``end``.

    Hook it as ``receiver.on_deliver``; ``chain`` is called too (so a tool can
    still react to the data).
    """

    __slots__ = ("start", "end", "bytes", "chain", "last_t")

    def __init__(self, start: float, end: float, chain=None):
        self.start = start
        self.end = end
        self.bytes = 0
        self.chain = chain
        self.last_t = start

    def __call__(self, nbytes: int, now: float) -> None:
        if self.start <= now <= self.end:
            self.bytes += nbytes
            self.last_t = now
        if self.chain is not None:
            self.chain(nbytes, now)

    def mbit_per_s(self) -> float:
        """Throughput in 10^6 bit/s, the unit netperf and iperf print."""
        span = self.end - self.start
        return self.bytes * 8.0 / span / 1e6 if span > 0 else 0.0


def _rtt_stats(senders, start: float):
    """The senders' RTT samples from ``start`` on, in one :class:`~ovssim.metrics.DelayStats` (raw while
    few enough, so the figures are those of the raw values to the bit)."""
    from ..metrics import DelayStats
    st = DelayStats()
    for s in senders:
        if s.rtt_folded is not None:
            st.merge(s.rtt_folded)
        st.values.extend(r for r, t in zip(s.rtt_samples, s.rtt_times) if t >= start)
    return st


def rtt_summary(senders, start: float = 0.0) -> dict[str, float]:
    """Mean / median / 99th percentile (ms) of the senders' RTT samples taken after ``start``."""
    st = _rtt_stats(senders, start)
    if not st.count:
        return {}
    return {"rtt_mean": st.mean(1e3), "rtt_p50": st.percentile(50, 1e3), "rtt_p99": st.percentile(99, 1e3)}


def rtt_array_ms(senders) -> np.ndarray:
    """The RTT samples (ms) for an ECDF: all of them, or a systematic sample once they folded."""
    return _rtt_stats(senders, -np.inf).sample() * 1e3


def cwnd_array(senders, start: float = 0.0) -> np.ndarray:
    """Congestion-window samples (segments) the senders logged from ``start`` on."""
    vals = [c for s in senders for (t, c, _) in s.cwnd_log if t >= start]
    return np.asarray(vals, dtype=float)


def jain_index(x) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all shares are equal."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (len(x) * (x * x).sum()))
