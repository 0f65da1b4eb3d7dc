"""Metrics: RFC 3550 jitter, loss, percentiles, and mean +- 95% CI over replications.

The thesis reports every figure as the mean of 100 iterations with a 95%
confidence interval (seed 000 §6.1); :func:`summarise` does the same, one row per
workload and metric, with the interval of :mod:`ovssim.intervals` (Student's t, or a method
that stays inside the metric's range).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .intervals import interval


class JitterEstimator:
    """RFC 3550 §6.4.1 interarrival jitter, as iperf's server computes it.

    For each packet, transit = arrival - send timestamp; D = |transit -
    previous transit|; J += (|D| - J) / 16.  Times in seconds.
    """

    __slots__ = ("jitter", "_prev", "count")

    def __init__(self):
        self.jitter = 0.0
        self._prev = None
        self.count = 0

    def update(self, sent: float, arrived: float) -> float:
        transit = arrived - sent
        prev = self._prev
        if prev is not None:
            d = transit - prev
            if d < 0:
                d = -d
            self.jitter += (d - self.jitter) / 16.0
        self._prev = transit
        self.count += 1
        return self.jitter


class DelayStats:
    """Per-packet delays in bounded memory: exact count, mean, standard deviation, min and max;
    quantiles exact up to ``capacity`` values and within ``ALPHA`` (0.1 %) relative error beyond.

    The hot path appends to the plain list ``values`` (one C call per packet) and calls :meth:`fold`
    once it holds ``capacity`` values: they move into running moments (Chan et al.'s pairwise update,
    so the mean and variance stay exact to rounding), a logarithmic histogram -- DDSketch's mapping
    (Masson, Rim and Lee, VLDB 2019): bucket ``k`` holds values in (gamma^(k-1), gamma^k] with
    gamma = (1 + ALPHA) / (1 - ALPHA), so its midpoint 2 gamma^k / (gamma + 1) is within ALPHA of
    any value in it; filled with one ``numpy.bincount`` per fold, where the ``ddsketch`` package
    adds one value per Python call -- and a systematic sample (every 2^j-th value, at most
    ``capacity``) for ECDFs and KS tests.  A run with fewer values never folds, so its figures are
    those of the raw values, to the bit.
    """

    CAPACITY = 1 << 17                   # at most ~4 MB of buffered Python floats and 1 MB of sample per stream
    ALPHA = 1e-3
    _LOG_GAMMA = float(np.log((1 + ALPHA) / (1 - ALPHA)))
    _LOW, _HIGH = 1e-9, 1e7              # seconds: the histogram's range (below: counted as LOW)
    _KMIN = int(np.floor(np.log(_LOW) / _LOG_GAMMA))
    _KMAX = int(np.ceil(np.log(_HIGH) / _LOG_GAMMA))

    __slots__ = ("values", "capacity", "n", "_mean", "_m2", "min", "max", "_counts", "_kept", "_stride")

    def __init__(self, capacity: int | None = None):
        self.values: list[float] = []
        self.capacity = capacity or self.CAPACITY
        self.n = 0                       # values folded so far
        self._mean = self._m2 = 0.0
        self.min, self.max = float("inf"), float("-inf")
        self._counts = None
        self._kept = np.empty(0)
        self._stride = 1

    @property
    def count(self) -> int:
        return self.n + len(self.values)

    def fold(self) -> None:
        """Move ``values`` into the moments, the histogram and the systematic sample."""
        if not self.values:
            return
        x = np.asarray(self.values, float)
        self.values = []
        m = x.size
        mean = float(x.mean())
        m2 = float(((x - mean) ** 2).sum())
        n = self.n
        delta = mean - self._mean
        self._mean += delta * m / (n + m)
        self._m2 += m2 + delta * delta * n * m / (n + m)
        self.min, self.max = min(self.min, float(x.min())), max(self.max, float(x.max()))
        if self._counts is None:
            self._counts = np.zeros(self._KMAX - self._KMIN + 1, np.int64)
        keys = np.ceil(np.log(np.clip(x, self._LOW, self._HIGH)) / self._LOG_GAMMA).astype(np.int64) - self._KMIN
        self._counts += np.bincount(keys, minlength=self._counts.size)
        self._kept = np.concatenate([self._kept, x[(-n) % self._stride::self._stride]])   # indexes divisible by stride
        while self._kept.size > self.capacity:
            self._kept = self._kept[::2]
            self._stride *= 2
        self.n = n + m

    def merge(self, other: "DelayStats") -> None:
        """Add ``other``'s values (both folded first): moments and histograms exactly, samples thinned alike."""
        self.fold()
        other.fold()
        if not other.n:
            return
        n, m = self.n, other.n
        delta = other._mean - self._mean
        self._mean += delta * m / (n + m)
        self._m2 += other._m2 + delta * delta * n * m / (n + m)
        self.min, self.max = min(self.min, other.min), max(self.max, other.max)
        self._counts = other._counts.copy() if self._counts is None else self._counts + other._counts
        stride = max(self._stride, other._stride)       # every stride-th of both (strides are powers of 2)
        self._kept = np.concatenate([self._kept[::stride // self._stride], other._kept[::stride // other._stride]])
        self._stride = stride
        while self._kept.size > self.capacity:
            self._kept = self._kept[::2]
            self._stride *= 2
        self.n = n + m

    def mean(self, scale: float = 1.0) -> float:
        """The mean of the values times ``scale`` (unfolded: numpy's mean of the scaled values, to the bit)."""
        if not self.n:
            return float(np.mean(np.asarray(self.values) * scale)) if self.values else float("nan")
        self.fold()
        return self._mean * scale

    def std(self) -> float:
        """Population standard deviation (ping's mdev)."""
        if not self.n:
            return float(np.std(self.values)) if self.values else float("nan")
        self.fold()
        return float(np.sqrt(self._m2 / self.n))

    def percentile(self, q: float, scale: float = 1.0) -> float:
        """The ``q``-th percentile (0-100) times ``scale``: numpy's on the raw values, or the histogram's."""
        if not self.n:
            return percentile(np.asarray(self.values) * scale, q)
        self.fold()
        rank = q / 100.0 * (self.n - 1)
        k = int(np.searchsorted(np.cumsum(self._counts), rank, side="right"))
        value = 2.0 * np.exp((k + self._KMIN) * self._LOG_GAMMA) / (1.0 + np.exp(self._LOG_GAMMA))
        return float(min(max(value, self.min), self.max)) * scale

    def sample(self) -> np.ndarray:
        """The raw values, or (once folded) every ``stride``-th of them."""
        if not self.n:
            return np.asarray(self.values, float)
        self.fold()
        return self._kept.copy()


def summarise(per_rep: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """Tidy summary: scenario, workload, metric, unit, mean, ci95_low, ci95_high, reps, ci_method
    (intervals from :func:`ovssim.intervals.interval`)."""
    rows = []
    if per_rep.empty:
        return pd.DataFrame(columns=["scenario", "workload", "metric", "unit", "mean", "ci95_low",
                                     "ci95_high", "reps", "ci_method"])
    for (wl, metric, unit), grp in per_rep.groupby(["workload", "metric", "unit"], sort=False):
        ci = interval(grp["value"], unit, metric)
        rows.append({"scenario": scenario, "workload": wl, "metric": metric, "unit": unit, "mean": ci.mean,
                     "ci95_low": ci.low, "ci95_high": ci.high, "reps": ci.n, "ci_method": ci.method})
    return pd.DataFrame(rows)


def percentile(x, q: float) -> float:
    x = np.asarray(x, float)
    return float(np.percentile(x, q)) if x.size else float("nan")
