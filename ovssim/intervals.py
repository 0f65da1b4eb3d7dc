"""The one 95 % confidence-interval helper for ``run``, ``whatif``, ``sweep`` and ``validate``.

An interval for the mean of a metric over replications, true to what the metric can be:

* ``n == 1``: no interval (NaN bounds, printed "n/a") -- one replication says nothing about spread.
* Student's t (``scipy.stats.t``) when the t-interval lies inside the metric's range: the usual
  replication/deletion interval (Law, *Simulation Modeling and Analysis*, 5th ed., §9.4.1).
* Otherwise -- the t-interval crosses a bound, the sign of a mean pressed against it (retransmits
  that are mostly 0, a loss near 0 %, a Jain index near 1, a minimum near 0) where the sampling
  distribution is skewed and t is wrong -- a BCa bootstrap of the mean (``scipy.stats.bootstrap``,
  Efron & Tibshirani 1993, ch. 14).  Its bounds are quantiles of resampled means, so they lie
  within [min, max] of the data and therefore inside the range; the resampling is seeded from the
  data, so the interval is a pure function of the values.  With 2-4 replications it is close to
  the data's own range and covers less than 95 %: ask for more replications (``--min-reps``).
* Every replication equal: a count that is 0 every time gets the exact Poisson (Garwood) upper
  bound of its mean, [0, 3.69/n] (``scipy.stats.chi2``: no event seen is not "never"); any other
  metric is reported as the constant it is (zero width, method "constant" -- the model gives this
  value in every replication, e.g. a flow count or a loss of 0 %, whose trial count is not known here).

A metric's range follows from its unit (``count``/``datagrams`` >= 0, ``%`` in [0, 100],
``Jain index`` in [0, 1], times and rates >= 0); :func:`metric_range` is the one place for it.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.95
#: Units whose values are counts of events (Poisson interval when constant).
COUNT_UNITS = ("count", "datagrams", "packets")
#: unit -> (low, high) of the values it can take; other units of this simulator are times, rates
#: and sizes (>= 0); an unknown unit ("") is unbounded.
UNIT_RANGES = {"%": (0.0, 100.0), "Jain index": (0.0, 1.0), "ratio": (0.0, 1.0)}
NONNEGATIVE_UNITS = ("ms", "s", "us", "Mbit/s", "Gbit/s", "bit/s", "1/s", "B", "bytes", *COUNT_UNITS)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int
    method: str          # "t", "bootstrap BCa", "Poisson exact", "constant", "n/a"

    @property
    def half_width(self) -> float:
        """The larger distance from the mean to a bound (NaN without an interval)."""
        return max(self.mean - self.low, self.high - self.mean)

    def __iter__(self):            # m, lo, hi = interval(...)
        return iter((self.mean, self.low, self.high))

    def text(self, fmt: str = ".5g") -> str:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return "n/a"
        return f"[{self.low:{fmt}}, {self.high:{fmt}}]"


def metric_range(unit: str = "", metric: str = "") -> tuple[float, float]:
    """The values a metric can take, from its unit."""
    if unit in UNIT_RANGES:
        return UNIT_RANGES[unit]
    if unit in NONNEGATIVE_UNITS or metric.startswith(("cpu_util", "rtt", "latency", "delay", "jitter")):
        return 0.0, math.inf
    return -math.inf, math.inf


def _seed(x: np.ndarray) -> int:
    return int.from_bytes(hashlib.sha256(np.ascontiguousarray(x, float).tobytes()).digest()[:8], "big")


def interval(values, unit: str = "", metric: str = "", level: float = LEVEL,
             bounds: tuple[float, float] | None = None) -> Interval:
    """A ``level`` confidence interval for the mean of ``values`` (NaNs dropped), inside the metric's range
    (``bounds``, or the one :func:`metric_range` reads from the unit and name)."""
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "n/a")
    m = float(x.mean())
    if n == 1:
        return Interval(m, math.nan, math.nan, 1, "n/a")
    lo_b, hi_b = bounds if bounds is not None else metric_range(unit, metric)
    if np.ptp(x) == 0:
        if unit in COUNT_UNITS and m == 0:       # no event in n replications: Garwood's upper bound
            hi = stats.chi2.ppf(0.5 + level / 2, 2) / (2 * n)
            return Interval(m, 0.0, float(hi), n, "Poisson exact")
        return Interval(m, m, m, n, "constant")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    if lo_b <= m - half and m + half <= hi_b:
        return Interval(m, m - half, m + half, n, "t")
    rng = np.random.default_rng(_seed(x))
    res = stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=4999, method="BCa",
                          random_state=rng)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    method = "bootstrap BCa"
    if not (math.isfinite(lo) and math.isfinite(hi)):        # BCa degenerate (tiny n): percentile
        res = stats.bootstrap((x,), np.mean, confidence_level=level, n_resamples=4999, method="percentile",
                              random_state=np.random.default_rng(_seed(x)))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        method = "bootstrap percentile"
    return Interval(m, max(lo, lo_b), min(hi, hi_b), n, method)


def ci_text(low: float, high: float, fmt: str = ".5g") -> str:
    """``[low, high]``, or ``n/a`` when there is no interval (one replication)."""
    return Interval(math.nan, low, high, 0, "").text(fmt)
