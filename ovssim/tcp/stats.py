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


def rtt_summary(senders, start: float = 0.0) -> dict[str, float]:
    """Mean / median / 99th percentile (ms) of the senders' RTT samples taken after ``start``."""
    arrs = []
    for s in senders:
        if s.rtt_samples:
            r = np.asarray(s.rtt_samples)
            t = np.asarray(s.rtt_times)
            arrs.append(r[t >= start])
    if not arrs or not sum(len(a) for a in arrs):
        return {}
    r = np.concatenate(arrs) * 1e3
    return {"rtt_mean": float(r.mean()), "rtt_p50": float(np.percentile(r, 50)),
            "rtt_p99": float(np.percentile(r, 99))}


def rtt_array_ms(senders) -> np.ndarray:
    arrs = [np.asarray(s.rtt_samples) for s in senders if s.rtt_samples]
    return np.concatenate(arrs) * 1e3 if arrs else np.empty(0)


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
