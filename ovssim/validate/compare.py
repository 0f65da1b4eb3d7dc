"""Comparison figures: measured vs simulated means with 95% CIs, KS distances, rankings.

One :class:`Comparison` is one row of the report's summary table: a metric of
one configuration of one testbed, measured and simulated, the relative error,
whether the simulated mean lies inside the measured 95% CI (or, where no CI
was published, inside the rounding band of the printed value), whether the
row was used to fit the profile (``in-sample``) or predicted (``held-out``),
and the issue's target for that kind of metric.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from ..intervals import interval

#: Targets of held-out predictions (issue 7; shaped throughput from issue 4).
TARGETS = {"throughput": 0.03, "shaped_throughput": 0.02, "rtt": 0.10, "jitter": 0.25,
           "ks": 0.10, "ks_shaped": 0.15,
           # issue 15: throughput where the CPU, not a shaper or a link, is the limit
           "cpu_throughput": 0.10}


def mean_ci(values, unit: str = "", metric: str = "") -> tuple[float, float, float]:
    """Mean and 95% CI of replication values (:func:`ovssim.intervals.interval`); a single value has no CI.

    Every figure validation compares -- a throughput, an RTT, a jitter, a CPU share, a ratio of throughputs --
    is a magnitude, so without a unit that says more the interval stays at or above zero."""
    bounds = None if unit or metric else (0.0, math.inf)
    return tuple(interval(values, unit, metric, bounds=bounds))


def ks_distance(a, b) -> float:
    """Two-sample Kolmogorov-Smirnov statistic (sup distance between the ECDFs)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(stats.ks_2samp(a, b).statistic)


def ranking_agreement(measured: dict, simulated: dict) -> dict:
    """Kendall's tau between measured and simulated orderings, and whether the order is identical.

    Ties in the simulation (schedulers the model cannot tell apart) count as not preserved.
    """
    keys = [k for k in measured if k in simulated]
    m = np.array([measured[k] for k in keys], float)
    s = np.array([simulated[k] for k in keys], float)
    tau = float(stats.kendalltau(m, s).statistic) if len(keys) > 1 else float("nan")
    same = list(np.argsort(m, kind="stable")) == list(np.argsort(s, kind="stable")) and len(set(s)) == len(s)
    return {"tau": tau, "preserved": bool(same), "order_measured": [keys[i] for i in np.argsort(-m)],
            "order_simulated": [keys[i] for i in np.argsort(-s)]}


@dataclass
class Comparison:
    testbed: str
    config: str
    metric: str            # report name, e.g. "throughput", "rtt", "jitter", "ks_rtt"
    unit: str
    measured: float
    measured_lo: float     # 95% CI (or rounding band) of the measured value; NaN if unknown
    measured_hi: float
    simulated: float
    sim_lo: float
    sim_hi: float
    split: str             # "in-sample" | "held-out"
    kind: str              # key of TARGETS, "" when the row has no target
    band: str = "95% CI"   # what measured_lo/hi are
    note: str = ""

    @property
    def rel_error(self) -> float:
        if self.kind.startswith("ks"):
            return float("nan")
        if not self.measured or not math.isfinite(self.measured):
            return float("nan")
        return (self.simulated - self.measured) / abs(self.measured)

    @property
    def error(self) -> float:
        """The figure compared with the target: |relative error|, or the KS distance itself."""
        return self.simulated if self.kind.startswith("ks") else abs(self.rel_error)

    @property
    def inside(self) -> bool | None:
        if self.kind.startswith("ks") or not (math.isfinite(self.measured_lo) and math.isfinite(self.measured_hi)):
            return None
        return bool(self.measured_lo <= self.simulated <= self.measured_hi)

    @property
    def target(self) -> float | None:
        return TARGETS.get(self.kind)

    @property
    def meets(self) -> bool | None:
        t = self.target
        if t is None or not math.isfinite(self.error):
            return None
        return bool(self.error <= t)

    @property
    def noise(self) -> float:
        """Relative half-width of the simulated CI: how much the error figure moves with sampling."""
        if self.kind.startswith("ks"):
            return 0.05
        if not (math.isfinite(self.sim_lo) and math.isfinite(self.sim_hi)) or not self.measured:
            return 0.0
        return (self.sim_hi - self.sim_lo) / 2 / abs(self.measured)

    def record(self) -> dict:
        d = asdict(self)
        d.update(rel_error=self.rel_error, error=self.error, inside=self.inside, target=self.target,
                 meets=self.meets, noise=self.noise)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
