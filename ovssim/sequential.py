"""Sequential replications: add replications until every watched metric's 95 % CI is as narrow as asked.

The rule is the relative-precision procedure of Law (*Simulation Modeling and Analysis*, 5th ed.,
§9.4.1) as netperf applies it to its iterations (``-I 99,5 -i 30,3``): after ``n`` replications
stop when, for every watched metric, the half-width of the 95 % CI of its mean
(:func:`ovssim.intervals.interval`) is at most ``rel * |mean|`` (or at most an absolute bound), or
when ``max_reps`` is reached.

The rule is only looked at on a fixed grid of replication counts (:func:`checkpoints`: ``min_reps``,
then about +25 % a step), never at a count derived from the data or the precision.  So:

* a tighter precision never stops earlier on the same seed (where it stops, the looser rule holds too);
* the decision depends only on the values of replications ``0..n-1`` of that point, so the result
  is the same whatever the executor, the worker count or the order runs finish in;
* with common random numbers, replication ``r`` of every point uses the same seed stream; a point that
  stops at ``n`` holds replications ``0..n-1`` and stays paired with the others on those.

Looking again and again inflates the miss rate of the final interval a little (Law §9.4.1 reports
coverage close to nominal for rel <= 0.15); the stopping report says how many looks each point took.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

import numpy as np

from . import units
from .errors import ConfigError
from .intervals import interval

DEFAULT_MIN_REPS = 3
DEFAULT_MAX_REPS = 100
GROWTH = 0.25


@dataclass(frozen=True)
class Precision:
    """Which metrics to watch and how narrow their CIs must be.

    ``rel`` and ``abs`` map metric patterns (``throughput``, ``udp:jitter``, ``rtt_*``; ``*`` = every
    reported metric) to a relative half-width (0.01 = 1 % of the mean) or an absolute one (the metric's
    unit).  A metric meets its precision when either of its bounds holds.
    """
    rel: dict = field(default_factory=dict)
    abs: dict = field(default_factory=dict)
    min_reps: int = DEFAULT_MIN_REPS
    max_reps: int = DEFAULT_MAX_REPS

    def bounds(self, workload: str, metric: str) -> tuple[float | None, float | None]:
        """(rel, abs) bounds for one metric, None where no pattern names it (the most specific pattern wins)."""
        return _match(self.rel, workload, metric), _match(self.abs, workload, metric)

    def watches(self, workload: str, metric: str) -> bool:
        return workload != "system" and self.bounds(workload, metric) != (None, None)

    def as_dict(self) -> dict:
        return {"rel": dict(self.rel), "abs": dict(self.abs), "min_reps": self.min_reps, "max_reps": self.max_reps}


def _match(table: dict, workload: str, metric: str):
    best, score = None, -1
    for pat, v in table.items():
        wl, _, m = pat.rpartition(":")
        if fnmatch.fnmatchcase(metric, m) and (not wl or fnmatch.fnmatchcase(workload, wl)):
            s = (2 if wl else 0) + (0 if any(c in m for c in "*?[") else 1)
            if s > score:
                best, score = v, s
    return best


def parse_precision(rel=None, abs_=None, min_reps=None, max_reps=None, *, where: str = "--precision",
                    file: str | None = None) -> Precision | None:
    """A :class:`Precision` from CLI strings or file values; None when neither ``rel`` nor ``abs_`` is given.

    ``rel``: a number (every reported metric), ``"METRIC=REL"`` strings, or a table ``{metric = rel}``;
    ``abs_``: ``"METRIC=VALUE"`` strings or a table.
    """
    def table(value, key, allow_bare):
        if value is None or value == () or value == []:
            return {}
        if isinstance(value, dict):
            items = list(value.items())
        else:
            items = []
            for v in ([value] if isinstance(value, (str, int, float)) else list(value)):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    items.append(("*", v))
                    continue
                k, sep, num = str(v).rpartition("=")
                if not sep:
                    k, num = "*", v
                items.append((k.strip(), num))
        out = {}
        for k, v in items:
            if not k or (k == "*" and not allow_bare):
                raise ConfigError(f"{key} {v!r} names no metric", file=file, key=key,
                                  fix=f"write {key} METRIC=VALUE, e.g. loss=0.1")
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{key} {k}={v!r} is not a number", file=file, key=key,
                                  fix=f"write e.g. {key} 0.01 (1 % of the mean)") from None
            if not math.isfinite(x) or x <= 0 or (key.startswith(("--precision", "precision")) and x >= 1):
                raise ConfigError(f"{key} {k}={v!r} is out of range", file=file, key=key,
                                  fix="a relative precision is in (0, 1), e.g. 0.01 for 1 %; an absolute one > 0")
            out[k] = x
        return out
    rel_t = table(rel, where, True)
    abs_t = table(abs_, where.replace("precision", "abs-precision") if where.startswith("--")
                  else where.replace("precision", "abs_precision"), False)
    if not rel_t and not abs_t:
        if min_reps is not None or max_reps is not None:
            raise ConfigError("min/max replications are given without a precision", file=file, key=where,
                              fix="add a precision (e.g. --precision 0.01), or use --reps N for a fixed count")
        return None
    lo = DEFAULT_MIN_REPS if min_reps is None else min_reps
    hi = DEFAULT_MAX_REPS if max_reps is None else max_reps
    for name, v in (("min_reps", lo), ("max_reps", hi)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 2 or v > units.COUNT_MAX:
            raise ConfigError(f"{name} must be a whole number >= 2, got {v!r}", file=file, key=name,
                              fix="at least 2 replications are needed for an interval; e.g. min reps 3, max reps 100")
    if hi < lo:
        raise ConfigError(f"max_reps {hi} is below min_reps {lo}", file=file, key="max_reps",
                          fix="raise the maximum or lower the minimum")
    return Precision(rel_t, abs_t, lo, hi)


def checkpoints(min_reps: int, max_reps: int) -> list[int]:
    """The replication counts at which the rule is looked at: ``min_reps``, ~+25 % a step, ``max_reps``."""
    out, n = [], min_reps
    while n < max_reps:
        out.append(n)
        n += max(1, math.ceil(GROWTH * n))
    out.append(max_reps)
    return out


def next_checkpoint(n: int, precision: Precision) -> int:
    """The first checkpoint above ``n`` replications (``max_reps`` at most)."""
    for c in checkpoints(precision.min_reps, precision.max_reps):
        if c > n:
            return c
    return precision.max_reps


@dataclass
class MetricCheck:
    workload: str
    metric: str
    unit: str
    mean: float
    half_width: float
    target: float          # the half-width asked for (the looser of rel*|mean| and abs)
    met: bool

    @property
    def name(self) -> str:
        return f"{self.workload}:{self.metric}"


def check(values: dict, precision: Precision) -> list[MetricCheck]:
    """Check every watched metric.  ``values`` maps (workload, metric, unit) -> per-replication values in
    replication order.  A metric with no finite value is not checked (nothing to estimate)."""
    out = []
    for (wl, metric, unit), xs in values.items():
        if not precision.watches(wl, metric):
            continue
        x = np.asarray(xs, float)
        if not np.isfinite(x).any():
            continue
        ci = interval(x, unit, metric)
        rel, ab = precision.bounds(wl, metric)
        targets = [t for t in ((rel * abs(ci.mean)) if rel is not None else None, ab) if t is not None]
        target = max(targets)
        hw = ci.half_width
        met = bool(math.isfinite(hw) and hw <= target)
        out.append(MetricCheck(wl, metric, unit, ci.mean, hw, target, met))
    return out


def converged(checks: list[MetricCheck]) -> bool:
    return bool(checks) and all(c.met for c in checks)


@dataclass
class Stopping:
    """How one point (or a whole run) stopped."""
    reps: int
    reason: str                   # "precision reached" | "max-reps" | "ranking settled" | "failed"
    unmet: list = field(default_factory=list)     # metric names not within precision at the stop
    looks: int = 0
    widest: str = ""              # the watched metric with the largest half-width / target


def stopping_of(checks: list[MetricCheck], reps: int, looks: int, precision: Precision) -> Stopping | None:
    """The :class:`Stopping` after ``reps`` replications, or None to go on."""
    ratio = [(c.half_width / c.target if c.target > 0 else math.inf, c.name) for c in checks]
    widest = max(ratio)[1] if ratio else ""
    if converged(checks):
        return Stopping(reps, "precision reached", [], looks, widest)
    if reps >= precision.max_reps:
        return Stopping(reps, "max-reps", [c.name for c in checks if not c.met], looks, widest)
    return None


def values_of(per_rep) -> dict:
    """(workload, metric, unit) -> values in replication order, from a tidy per-replication frame."""
    out = {}
    for key, g in per_rep.sort_values("rep", kind="stable").groupby(["workload", "metric", "unit"], sort=False):
        out[key] = g["value"].to_numpy(float)
    return out
