"""Steady-state estimation within one long run: MSER-5 warm-up deletion and batch means.

For a long stationary run, one replication can give the mean and its CI:

* :func:`mser5` -- the truncation point of the Marginal Standard Error Rule on batches of 5
  observations (White, "An effective truncation heuristic for bias reduction in simulation output",
  *Simulation* 69(6), 1997; Franklin & White, WSC 2008): the ``d`` that minimises
  ``sum_{i>d} (Y_i - mean(Y_{d+1..m}))^2 / (m - d)^2`` over the batch averages ``Y``, searched
  over the first half of the run (a minimum in the second half means the run is too short).
* :func:`batch_means` -- the mean of what is left and a Student-t CI from ``k`` non-overlapping
  batch means (Law, *Simulation Modeling and Analysis*, 5th ed., §9.5.3), with the lag-1
  autocorrelation of the batch means (statsmodels ``acf``) to show whether the batches are long
  enough to be taken as independent (|rho_1| well below 0.2 or so).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

MSER_BATCH = 5


def mser5(x) -> int:
    """Observations to delete from the start of ``x`` (a multiple of 5), by MSER-5."""
    x = np.asarray(x, float)
    m = x.size // MSER_BATCH
    if m < 4:
        return 0
    y = x[: m * MSER_BATCH].reshape(m, MSER_BATCH).mean(axis=1)
    tail = y[::-1]                                      # statistics of y[d:] for every d, in one pass
    k = np.arange(1, m + 1)
    s1 = np.cumsum(tail)[::-1]
    s2 = np.cumsum(tail * tail)[::-1]
    n_left = k[::-1].astype(float)                      # m - d
    sse = s2 - s1 * s1 / n_left
    stat = sse / n_left ** 2
    half = m // 2
    return int(np.argmin(stat[: half + 1])) * MSER_BATCH


@dataclass(frozen=True)
class SteadyState:
    mean: float
    low: float
    high: float
    deleted: int            # warm-up observations deleted (MSER-5)
    used: int               # observations in the batches
    batches: int
    lag1: float             # lag-1 autocorrelation of the batch means

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def batch_means(x, batches: int = 20, *, warmup: int | None = None, level: float = 0.95) -> SteadyState:
    """Mean of ``x`` after deleting ``warmup`` observations (MSER-5 when None) and its CI from
    ``batches`` batch means."""
    from statsmodels.tsa.stattools import acf
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    d = mser5(x) if warmup is None else int(warmup)
    rest = x[d:]
    size = rest.size // batches
    if batches < 2 or size < 1:
        m = float(rest.mean()) if rest.size else math.nan
        return SteadyState(m, math.nan, math.nan, d, int(rest.size), 0, math.nan)
    used = rest[rest.size - size * batches:]            # drop the remainder at the start, next to the warm-up
    bm = used.reshape(batches, size).mean(axis=1)
    m = float(bm.mean())
    half = float(stats.t.ppf(0.5 + level / 2, batches - 1) * bm.std(ddof=1) / math.sqrt(batches))
    lag1 = float(acf(bm, nlags=1, fft=False)[1]) if np.ptp(bm) > 0 else math.nan
    return SteadyState(m, m - half, m + half, d, int(used.size), batches, lag1)


#: Sample series recorded in seconds (the rest are in ms already): shown in ms.
SECONDS_SERIES = ("rtt", "one_way_delay")


def steady_state_table(samples: dict, batches: int = 20):
    """One row per sample series of one run (``workload:name`` -> values in time order): MSER-5 deletion,
    batch-means mean and 95 % CI, lag-1 autocorrelation of the batch means; times in ms."""
    import pandas as pd
    rows = []
    for name, v in samples.items():
        kind = name.rpartition(":")[2]
        if name.count(":") > 1 or kind == "cwnd":        # per-stage traces and cwnd are not estimands
            continue
        x = np.asarray(v, float) * (1e3 if kind in SECONDS_SERIES else 1.0)
        if x.size < 2 * batches:
            continue
        s = batch_means(x, batches)
        rows.append({"series": name, "unit": "ms", "observations": int(x.size), "warmup_deleted": s.deleted,
                     "mean": s.mean, "ci95_low": s.low, "ci95_high": s.high, "batches": s.batches,
                     "batch_lag1": s.lag1})
    return pd.DataFrame(rows, columns=["series", "unit", "observations", "warmup_deleted", "mean", "ci95_low",
                                       "ci95_high", "batches", "batch_lag1"])


class MeanAbsDiff:
    """The steady-state mean of |D| = |x_i - x_(i-1)| over a stream fed in chunks, in bounded memory.

    Keeps block means of |D| (blocks of 5, MSER-5's batches); past ``capacity`` blocks, neighbours
    are averaged in pairs and the block width doubles (an odd last block is dropped: at most one
    block per merge), so memory stays ``capacity`` floats however long the stream.  :meth:`mean`
    deletes the warm-up by MSER-5 on the blocks and averages the rest.
    """

    def __init__(self, capacity: int = 1 << 15):
        self.capacity = capacity
        self.width = MSER_BATCH
        self.last = None
        self.carry = np.empty(0)
        self.blocks = np.empty(0)

    def add(self, chunk) -> None:
        x = np.asarray(chunk, float)
        if x.size == 0:
            return
        if self.last is not None:
            x = np.concatenate([[self.last], x])
        self.last = float(x[-1])
        if x.size < 2:
            return
        d = np.concatenate([self.carry, np.abs(np.diff(x))])
        k = d.size // self.width * self.width
        self.blocks = np.concatenate([self.blocks, d[:k].reshape(-1, self.width).mean(axis=1)])
        self.carry = d[k:]
        while self.blocks.size > self.capacity:
            self.blocks = self.blocks[: self.blocks.size // 2 * 2].reshape(-1, 2).mean(axis=1)
            self.width *= 2

    def mean(self, tail=()) -> float:
        """The steady-state mean of |D|, with ``tail`` (values not yet added) counted but not kept."""
        probe = MeanAbsDiff(self.capacity)
        probe.width, probe.last, probe.carry, probe.blocks = self.width, self.last, self.carry, self.blocks
        probe.add(tail)
        y = probe.blocks
        if y.size == 0:
            return float(probe.carry.mean()) if probe.carry.size else float("nan")
        return float(y[mser5(y):].mean())
