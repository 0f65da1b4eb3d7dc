"""Metrics: RFC 3550 jitter, loss, percentiles, and mean +- 95% CI over replications.

The thesis reports every figure as the mean of 100 iterations with a 95%
confidence interval (seed 000 §6.1); :func:`summarise` does the same with
Student's t (scipy.stats.t), one row per workload and metric.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


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


def ci95(values) -> tuple[float, float, float]:
    """(mean, low, high) of a Student-t 95% confidence interval; a single value has a zero-width CI."""
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"),) * 3
    m = float(x.mean())
    if x.size < 2:
        return m, m, m
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return m, m - half, m + half


def summarise(per_rep: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """Tidy summary: scenario, workload, metric, unit, mean, ci95_low, ci95_high, reps."""
    rows = []
    if per_rep.empty:
        return pd.DataFrame(columns=["scenario", "workload", "metric", "unit", "mean", "ci95_low",
                                     "ci95_high", "reps"])
    for (wl, metric, unit), grp in per_rep.groupby(["workload", "metric", "unit"], sort=False):
        m, lo, hi = ci95(grp["value"])
        rows.append({"scenario": scenario, "workload": wl, "metric": metric, "unit": unit, "mean": m,
                     "ci95_low": lo, "ci95_high": hi, "reps": int(grp["value"].notna().sum())})
    return pd.DataFrame(rows)


def percentile(x, q: float) -> float:
    x = np.asarray(x, float)
    return float(np.percentile(x, q)) if x.size else float("nan")
