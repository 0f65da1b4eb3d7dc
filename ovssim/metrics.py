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
