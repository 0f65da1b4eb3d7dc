"""Simulation-based calibration: choose model parameters so simulated metrics match measured ones.

The measured side is a set of :class:`Target` s -- a metric's mean and its
uncertainty (a 95 % CI half-width, else the table's rounding resolution, else a
stated relative error).  The model side is any callable mapping parameter values
to simulated metric means and standard errors; :class:`SimulationModel` wraps
``ovssim.runner.run_scenario`` and sets the parameters through the scenario's
``[params]`` overrides.

The objective is the weighted sum of squared standardised errors
``sum((sim_i - y_i) / sd_i)**2`` with ``sd_i**2`` the target's variance plus the
simulation's replication variance of that metric (pooled over the start point and
the initial simplex, then fixed, so the weights do not jitter), minimised over each
parameter's bounds -- searched on a log scale for positive ranges -- with
``scipy.optimize.minimize`` (bounded Nelder-Mead, the default: derivative-free, so
robust to the small steps that remain in a simulated metric) or
``scipy.optimize.least_squares`` (trust-region Gauss-Newton: fewer evaluations when
the metrics are smooth in the parameters).  Every evaluation uses the **same seed** (common
random numbers), so two nearby parameter values see the same random draws and
the objective is nearly smooth instead of jumping with the sampling noise.

Uncertainty: by default from the Jacobian of the standardised residuals at the
optimum (central differences, still with common random numbers), with each
residual's variance the target's plus the simulation's replication variance:
``Cov = (J^T J)^-1`` (Gauss-Newton / delta method).  With per-run measured
values, a bootstrap over measured runs re-fits on resampled target means.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
from scipy import optimize

from .. import units
from ..errors import ConfigError, DataError

Z95 = 1.959963984540054


# -- parameters -----------------------------------------------------------------
@dataclass
class Param:
    """One calibrated quantity: a profile parameter, or one field of its distribution spec.

    ``lo``/``hi`` are in SI units (seconds) for time-valued fields and plain
    numbers for shapes.  ``log`` searches ``log(value)`` (default for positive bounds).
    """

    name: str
    field: str | None
    lo: float
    hi: float
    is_time: bool = True
    log: bool | None = None

    def __post_init__(self):
        if not (self.hi > self.lo):
            raise ConfigError(f"bounds of {self.label} must satisfy lo < hi, got {self.lo}..{self.hi}",
                              key=self.label, fix="write NAME[:FIELD]=LO..HI, e.g. ovs.upcall:scale=20us..400us")
        if self.log is None:
            self.log = self.lo > 0

    @property
    def label(self) -> str:
        return self.name if self.field is None else f"{self.name}:{self.field}"

    def to_unit(self, v: float) -> float:
        """Parameter value -> search coordinate in [0, 1]."""
        if self.log:
            return (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            return math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
        return self.lo + u * (self.hi - self.lo)

    def dvalue_du(self, v: float) -> float:
        if self.log:
            return v * (math.log(self.hi) - math.log(self.lo))
        return self.hi - self.lo

    def fmt(self, v: float) -> str | float:
        return units.fmt_time(v) if self.is_time else float(f"{v:.6g}")

    _RE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?::([A-Za-z_]+))?\s*=\s*([^.\s][^\s]*?)\s*\.\.\s*(\S+)\s*$")
    _SHAPES = {"s", "a", "c", "b", "weights"}

    @classmethod
    def parse(cls, text: str) -> "Param":
        """``NAME[:FIELD]=LO..HI`` -- e.g. ``vif.kvm-tap.cpu_per_packet=1us..20us`` or
        ``vif.kvm-tap.backend_delay:scale=5us..100us`` or ``ovs.upcall:s=0.1..1.5`` or
        ``ovs.idle_stall_prob=0..0.6``."""
        m = cls._RE.match(text)
        if not m:
            raise ConfigError(f"cannot read parameter {text!r}", key="--params",
                              fix="write NAME[:FIELD]=LO..HI, e.g. vif.kvm-tap.backend_delay:scale=5us..100us")
        name, fld, lo, hi = m.groups()
        from ..profile import SCHEMA          # plain-number parameters (a probability) are not times
        is_time = fld not in cls._SHAPES and not (fld is None and SCHEMA.get(name) == "prob")
        conv = units.time if is_time else float
        try:
            return cls(name, fld, conv(lo), conv(hi), is_time=is_time)
        except (ValueError, units.UnitError) as exc:
            raise ConfigError(f"bad bounds in {text!r}: {exc}", key="--params",
                              fix="times need a unit (5us), shapes are plain numbers") from None


# -- targets --------------------------------------------------------------------
@dataclass
class Target:
    """A measured metric the simulation should reproduce."""

    workload: str
    metric: str
    value: float
    sigma: float
    unit: str = ""
    runs: np.ndarray | None = None     # per-run values, when the data has them (for the bootstrap)
    source: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.workload, self.metric)

    @classmethod
    def from_runs(cls, workload: str, metric: str, runs: np.ndarray, unit: str = "") -> "Target":
        """The mean of per-run values, its sigma the standard error std / sqrt(n) (:func:`target_sigma`)."""
        sigma, how = target_sigma(float(runs.mean()), std=float(runs.std(ddof=1)), n=runs.size)
        return cls(workload, metric, float(runs.mean()), sigma, unit, runs, how)


def target_sigma(value: float, *, ci_low=None, ci_high=None, resolution=None, n=None, std=None,
                 rel_sigma: float = 0.01) -> tuple[float, str]:
    """Standard error of a measured mean, from the best information available.

    CI half-width / 1.96; else std / sqrt(n); else the rounding error of a
    printed value (``resolution / sqrt(12)``, the s.d. of a uniform rounding
    error) floored at ``rel_sigma`` of the value; else ``rel_sigma * |value|``.
    """
    def ok(v):
        return v is not None and not (isinstance(v, float) and math.isnan(v))
    if ok(ci_low) and ok(ci_high) and ci_high > ci_low:
        return (ci_high - ci_low) / (2 * Z95), "95% CI"
    if ok(std) and ok(n) and n > 1:
        return std / math.sqrt(n), "std/sqrt(n) of runs"
    floor = rel_sigma * abs(value) if value else rel_sigma
    if ok(resolution) and resolution > 0:
        return max(resolution / math.sqrt(12), floor), f"rounding (resolution {resolution:g}) / {rel_sigma:.0%} floor"
    return floor, f"assumed {rel_sigma:.0%} of the value"


# -- the model --------------------------------------------------------------------
Model = Callable[[dict], dict]     # {label: value} -> {(workload, metric): (mean, se)}


def _spec_with(spec, fld: str, value: float, is_time: bool):
    if not isinstance(spec, dict):
        raise ConfigError(f"cannot set field {fld!r} of the constant {spec!r}", key=fld,
                          fix="calibrate the parameter itself (NAME=LO..HI) or give a distribution base")
    out = copy.deepcopy(spec)
    if fld in ("scale", "s") and isinstance(out.get(fld), list):
        raise ConfigError(f"{fld!r} of a mixture is a list; calibrate a scalar family instead", key=fld)
    if is_time:
        out[fld] = f"{value * 1e6:.9g}us"
    else:
        out[fld] = float(value)
    return out


def overrides_for(params: list[Param], values: dict, base_specs: dict) -> dict:
    """Scenario ``[params]`` overrides setting each parameter (or spec field) to its value."""
    out: dict = {}
    for p in params:
        v = values[p.label]
        if p.field is None:
            out[p.name] = f"{v * 1e6:.9g}us" if p.is_time else v
        else:
            base = out.get(p.name, base_specs.get(p.name))
            if base is None:
                raise ConfigError(f"no base distribution for {p.name!r} to set {p.field!r} in",
                                  key=p.name, fix="the scenario's profile or [params] must define it")
            out[p.name] = _spec_with(base, p.field, v, p.is_time)
    return out


class SimulationModel:
    """``run_scenario`` as a calibration model, with common random numbers.

    ``scenario`` is a scenario dict (or path); the base distribution specs come
    from its profile and ``[params]``; each evaluation runs ``reps``
    replications with the same ``seed`` -- on ``pool`` (a
    :class:`~ovssim.runner.ReplicationPool`) when given, with the same results.
    """

    def __init__(self, scenario, params: list[Param], *, reps: int = 4, seed: int = 12345, pool=None):
        from ..precedence import resolve
        from ..scenario import load_scenario
        self.scenario = load_scenario(scenario)
        self.params = params
        self.reps, self.seed = reps, seed
        self.pool = pool
        self.base_specs = dict(resolve(self.scenario).profile.params)     # profile, then [params]
        self.evaluations = 0

    def __call__(self, values: dict) -> dict:
        from ..runner import run_scenario
        # the trial values are this run's --set: above the profile and [params] (ovssim.precedence)
        res = run_scenario(self.scenario, reps=self.reps, seed=self.seed, pool=self.pool,
                           sets=overrides_for(self.params, values, self.base_specs))
        self.evaluations += 1
        out = {}
        for (wl, metric), grp in res.per_rep.groupby(["workload", "metric"]):
            v = grp["value"].to_numpy(float)
            v = v[np.isfinite(v)]       # a replication with no value (the jitter of a stream it lost entirely)
            se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
            out[(wl, metric)] = (float(v.mean()) if v.size else float("nan"), se)
        return out


# -- calibration ------------------------------------------------------------------
@dataclass
class CalibrationResult:
    params: list[Param]
    values: dict                 # label -> value (SI)
    std: dict                    # label -> standard error (SI), inf if not identifiable
    ci95: dict                   # label -> (lo, hi)
    objective: float
    evaluations: int
    success: bool
    message: str
    fitted: dict = field(default_factory=dict)   # (workload, metric) -> (sim mean, target, sigma)
    method: str = ""
    uncertainty_method: str = ""
    at_bound: list = field(default_factory=list)   # labels whose estimate sits on a search bound

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([{"param": p.label, "value": self.values[p.label], "std": self.std[p.label],
                              "ci95_low": self.ci95[p.label][0], "ci95_high": self.ci95[p.label][1]}
                             for p in self.params])

    def fit_table(self) -> pd.DataFrame:
        return pd.DataFrame([{"workload": k[0], "metric": k[1], "simulated": s, "measured": y,
                              "sigma": sg, "z": (s - y) / sg} for k, (s, y, sg) in self.fitted.items()])


#: the standardised residual of a target the simulation gave no value for: worse than any real miss
NO_VALUE_PENALTY = 1e6


def _residuals(model_out: dict, targets: list[Target], *, with_sim_se: bool,
               fixed_se: dict | None = None) -> np.ndarray:
    """Standardised errors ``(sim - measured) / sd``.

    ``sd`` is the target's sigma, combined with the simulation's standard error
    either as measured in this evaluation (``with_sim_se``) or as fixed once for
    the whole optimisation (``fixed_se``, so the weights do not jitter).
    """
    r = []
    for t in targets:
        if t.key not in model_out:
            have = sorted(model_out)
            raise ConfigError(f"the simulation has no metric {t.metric!r} for workload {t.workload!r}",
                              key=f"{t.workload}:{t.metric}",
                              fix=f"map the measured metric to one of {have[:12]}")
        mean, se = model_out[t.key]
        if fixed_se is not None:
            se = fixed_se.get(t.key, 0.0)
        if not math.isfinite(se):
            se = 0.0
        if not math.isfinite(mean):
            # no replication produced the metric at these parameters (e.g. every datagram lost): a large,
            # finite penalty steers the optimiser away instead of a NaN that breaks it
            r.append(NO_VALUE_PENALTY)
            continue
        sd = math.sqrt(t.sigma ** 2 + (se ** 2 if (with_sim_se or fixed_se is not None) else 0.0))
        r.append((mean - t.value) / sd)
    return np.asarray(r, float)


def calibrate(model: Model, params: list[Param], targets: list[Target], *, x0: dict | None = None,
              method: str = "Nelder-Mead", max_evals: int = 200, fd_step: float = 0.03,
              bootstrap: int = 0, seed: int = 0) -> CalibrationResult:
    """Minimise the weighted squared error between ``model`` and ``targets`` over ``params``."""
    if not params:
        raise ConfigError("no parameters to calibrate", key="--params", fix="give at least one NAME=LO..HI")
    if not targets:
        raise DataError("no measured targets to calibrate against -- fix: check the data selection")
    for t in targets:
        if not (t.sigma > 0 and math.isfinite(t.sigma) and math.isfinite(t.value)):
            raise DataError(f"target {t.workload}:{t.metric} has value {t.value!r} and sigma {t.sigma!r}; "
                            "both must be finite and sigma > 0")
    labels = [p.label for p in params]
    cache: dict = {}

    def run(u: np.ndarray) -> dict:
        key = tuple(np.round(np.clip(u, 0, 1), 12))
        if key not in cache:
            cache[key] = model({p.label: p.from_unit(ui) for p, ui in zip(params, key)})
        return cache[key]

    u0 = np.array([p.to_unit(x0[p.label]) if x0 and p.label in x0 else 0.5 for p in params])
    # weights: each metric's target variance plus the simulation's replication variance,
    # measured once at the start point -- a metric the simulation reproduces only noisily
    # (jitter of a short UDP run) then cannot drag the search around with its noise
    # (pooled over the start point and the p points of the initial simplex: a standard error
    # from a handful of replications is itself noisy)
    step = 0.15
    design = [u0] + [np.clip(u0 + step * np.eye(len(params))[i] * (1 if u0[i] < 0.5 else -1), 0, 1)
                     for i in range(len(params))]
    outs = [run(u) for u in design]
    fixed_se = {t.key: float(np.sqrt(np.mean([o[t.key][1] ** 2 for o in outs])))
                for t in targets if all(t.key in o for o in outs)}

    def objective(u, tg=targets):
        return float(np.sum(_residuals(run(u), tg, with_sim_se=False, fixed_se=fixed_se) ** 2))

    def solve(start, tg):
        if method == "least_squares":
            # trust-region Gauss-Newton on the standardised residuals; forward differences of
            # fd_step in the unit cube (common random numbers keep them meaningful)
            r = optimize.least_squares(lambda u: _residuals(run(u), tg, with_sim_se=False, fixed_se=fixed_se),
                                       start,
                                       bounds=(0.0, 1.0), method="trf", diff_step=fd_step,
                                       x_scale=1.0, max_nfev=max_evals, xtol=1e-4, ftol=1e-6)
            return optimize.OptimizeResult(x=r.x, fun=float(2 * r.cost), success=r.status > 0,
                                           message=r.message)
        if method == "Nelder-Mead":
            simplex = np.vstack([start] + [np.clip(start + step * np.eye(len(params))[i] *
                                                   (1 if start[i] < 0.5 else -1), 0, 1)
                                           for i in range(len(params))])
            return optimize.minimize(objective, start, args=(tg,), method="Nelder-Mead",
                                     bounds=[(0, 1)] * len(params),
                                     options={"initial_simplex": simplex, "maxfev": max_evals,
                                              "xatol": 2e-3, "fatol": 1e-4})
        return optimize.minimize(objective, start, args=(tg,), method=method, bounds=[(0, 1)] * len(params),
                                 options={"maxfun": max_evals} if method == "L-BFGS-B" else {"maxiter": max_evals})

    res = solve(u0, targets)
    u_hat = np.clip(res.x, 0, 1)
    values = {p.label: p.from_unit(ui) for p, ui in zip(params, u_hat)}
    out = run(u_hat)
    fitted = {t.key: (out[t.key][0], t.value, t.sigma) for t in targets}

    # -- uncertainty ------------------------------------------------------------------
    std = {lab: float("inf") for lab in labels}
    if bootstrap and all(t.runs is not None and len(t.runs) > 1 for t in targets):
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(bootstrap):
            tb = []
            for t in targets:
                rs = rng.choice(t.runs, size=len(t.runs), replace=True)
                tb.append(Target(t.workload, t.metric, float(np.mean(rs)), t.sigma, t.unit))
            rb = solve(u_hat, tb)
            draws.append([p.from_unit(ui) for p, ui in zip(params, np.clip(rb.x, 0, 1))])
        draws = np.asarray(draws)
        for i, lab in enumerate(labels):
            std[lab] = float(draws[:, i].std(ddof=1))
        ci95 = {lab: (float(np.quantile(draws[:, i], 0.025)), float(np.quantile(draws[:, i], 0.975)))
                for i, lab in enumerate(labels)}
        unc = f"bootstrap over measured runs (B={bootstrap})"
    else:
        p_n = len(params)
        J = np.zeros((len(targets), p_n))
        for i in range(p_n):
            h = fd_step
            up, dn = u_hat.copy(), u_hat.copy()
            up[i] = min(1.0, u_hat[i] + h)
            dn[i] = max(0.0, u_hat[i] - h)
            ru = _residuals(run(up), targets, with_sim_se=True)
            rd = _residuals(run(dn), targets, with_sim_se=True)
            J[:, i] = (ru - rd) / (up[i] - dn[i])
        jtj = J.T @ J
        try:
            cond = np.linalg.cond(jtj)
            cov_u = np.linalg.inv(jtj) if np.isfinite(cond) and cond < 1e12 else None
        except np.linalg.LinAlgError:
            cov_u = None
        if cov_u is not None:
            for i, p in enumerate(params):
                std[p.label] = float(math.sqrt(max(cov_u[i, i], 0.0)) * p.dvalue_du(values[p.label]))
        ci95 = {}
        for i, p in enumerate(params):
            if cov_u is None:
                ci95[p.label] = (float("-inf"), float("inf"))
                continue
            su = math.sqrt(max(cov_u[i, i], 0.0))
            # the interval is symmetric in the search coordinate (log scale for positive ranges)
            lo_u, hi_u = u_hat[i] - Z95 * su, u_hat[i] + Z95 * su
            if p.log:
                span = math.log(p.hi) - math.log(p.lo)
                ci95[p.label] = (math.exp(math.log(p.lo) + lo_u * span), math.exp(math.log(p.lo) + hi_u * span))
            else:
                ci95[p.label] = (p.lo + lo_u * (p.hi - p.lo), p.lo + hi_u * (p.hi - p.lo))
        unc = ("Gauss-Newton covariance (J^T J)^-1 of the standardised residuals, central differences "
               f"(step {fd_step:g} of each range) with common random numbers; residual variance = "
               "target sigma^2 + simulation replication variance")
        if cov_u is None:
            unc += "; NOT identifiable from these targets (singular J^T J)"
    at_bound = [p.label for p, ui in zip(params, u_hat) if ui <= 1e-3 or ui >= 1 - 1e-3]
    return CalibrationResult(params, values, std, ci95, float(res.fun), len(cache), bool(res.success),
                             str(res.message), fitted, method, unc, at_bound)


# -- measured data -> targets -------------------------------------------------------
_TIME_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
_RATE_MBIT = {"bit/s": 1e-6, "kbit/s": 1e-3, "mbit/s": 1.0, "gbit/s": 1e3}


def to_sim_unit(value: float, unit) -> tuple[float, str]:
    """Measured value -> the simulator's metric units (times in ms, rates in Mbit/s, loss in %)."""
    u = "" if unit is None or (isinstance(unit, float) and math.isnan(unit)) else str(unit).strip()
    if u in _TIME_MS:
        return value * _TIME_MS[u], "ms"
    if u.lower() in _RATE_MBIT:
        return value * _RATE_MBIT[u.lower()], "Mbit/s"
    if u == "ratio":                 # the collector's loss (0..1); the simulator reports %
        return value * 100.0, "%"
    return value, u


def parse_mapping(text: str) -> tuple[str, str, str]:
    """``MEASURED=WORKLOAD:METRIC`` (e.g. ``rtt=ping:rtt_mean``) -> (measured, workload, metric)."""
    m = re.match(r"^\s*([^=\s]+)\s*=\s*([^:\s]+):(\S+)\s*$", text)
    if not m:
        raise ConfigError(f"cannot read target mapping {text!r}", key="--target",
                          fix="write MEASURED_METRIC=WORKLOAD:SIM_METRIC, e.g. rtt=ping:rtt_mean")
    return m.group(1), m.group(2), m.group(3)


def targets_from_table(df: pd.DataFrame, mapping: list[tuple[str, str, str]], *, rel_sigma: float = 0.01,
                       file: str = "") -> list[Target]:
    """Targets from a seed table (means with CIs/resolution) or a tidy per-run table.

    A seed table has a ``statistic`` column (rows with ``mean`` are used) and
    optional ``ci95_low``/``ci95_high``/``resolution``/``n_iterations``; a tidy
    collector table has one row per run and metric, so the target is the mean of
    the runs, its sigma their standard error, and the runs feed the bootstrap.
    Rows must already be filtered to one configuration (``--where``).
    """
    for col in ("metric", "value"):
        if col not in df.columns:
            raise DataError(f"{file}: no {col!r} column -- fix: give a seed table (data/seeds/*.csv) "
                            "or a campaign's results.csv")
    seed_style = "statistic" in df.columns
    out = []
    for measured, wl, metric in mapping:
        rows = df[df["metric"].astype(str) == measured]
        if seed_style:
            rows = rows[rows["statistic"].astype(str) == "mean"]
        if rows.empty:
            raise DataError(f"{file}: no rows for metric {measured!r} "
                            f"(metrics: {sorted(df['metric'].astype(str).unique())[:12]}) -- fix: check "
                            "--target and --where")
        vals = pd.to_numeric(rows["value"], errors="coerce").to_numpy(float)
        if np.any(~np.isfinite(vals)):
            raise DataError(f"{file}: metric {measured!r} has missing or non-numeric values -- fix: "
                            "clean the data or narrow --where")
        unit = rows["unit"].iloc[0] if "unit" in rows.columns else None
        conv = lambda v: to_sim_unit(v, unit)[0]  # noqa: E731
        if seed_style:
            if len(rows) != 1:
                raise DataError(f"{file}: {len(rows)} rows for metric {measured!r}; a seed table target "
                                "needs one -- fix: narrow --where (e.g. testbed=..., bridge=..., scheduler=...)")
            r = rows.iloc[0]
            get = lambda c: (float(r[c]) if c in rows.columns and pd.notna(r[c]) else None)  # noqa: E731
            lo, hi, res = get("ci95_low"), get("ci95_high"), get("resolution")
            value = conv(vals[0])
            sigma, how = target_sigma(value, ci_low=None if lo is None else conv(lo),
                                      ci_high=None if hi is None else conv(hi),
                                      resolution=None if res is None else conv(res), rel_sigma=rel_sigma)
            out.append(Target(wl, metric, value, sigma, to_sim_unit(1.0, unit)[1], None,
                              f"{measured}: {how}"))
        else:
            runs = np.array([conv(v) for v in vals])
            value = float(runs.mean())
            sigma, how = target_sigma(value, std=float(runs.std(ddof=1)) if runs.size > 1 else None,
                                      n=runs.size, rel_sigma=rel_sigma)
            out.append(Target(wl, metric, value, sigma, to_sim_unit(1.0, unit)[1], runs,
                              f"{measured}: {how} ({runs.size} runs)"))
    return out


_SAMPLE_STATS = {"mean": np.mean, "median": np.median, "p50": np.median, "std": lambda v: np.std(v, ddof=1),
                 "min": np.min, "max": np.max}


def _sample_stat(name: str):
    if name in _SAMPLE_STATS:
        return _SAMPLE_STATS[name]
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)", name)
    if m:
        q = float(m.group(1)) / 100.0
        return lambda v: np.quantile(v, q)
    raise ConfigError(f"unknown sample statistic {name!r}", key="--target",
                      fix="use mean, median, std, min, max or pNN (e.g. p99)")


def targets_from_samples(samples: pd.DataFrame, mapping: list[tuple[str, str, str]], *,
                         rel_sigma: float = 0.01, file: str = "") -> list[Target]:
    """Targets computed from raw per-packet samples, one statistic per run.

    ``mapping`` entries look like ``("samples:rtt:p99", "ping", "rtt_p99")``: the
    statistic (``mean``, ``median``, ``std``, ``min``, ``max``, ``pNN``) of series
    ``rtt`` in each run; the target is their mean over runs, sigma their standard
    error, and the per-run values feed the bootstrap.
    """
    out = []
    for measured, wl, metric in mapping:
        parts = measured.split(":")
        if len(parts) != 3 or parts[0] != "samples":
            raise ConfigError(f"cannot read sample target {measured!r}", key="--target",
                              fix="write samples:SERIES:STAT=WORKLOAD:METRIC, e.g. samples:rtt:p99=ping:rtt_p99")
        _, series, stat = parts
        fn = _sample_stat(stat)
        rows = samples[samples["series"].astype(str) == series] if "series" in samples.columns else samples
        if rows.empty:
            raise DataError(f"{file}: no samples of series {series!r} in the selection -- fix: check "
                            "--where and the series name (data/README.md)")
        unit = rows["unit"].iloc[0] if "unit" in rows.columns else None
        per_run = []
        for _, grp in rows.groupby("run_id" if "run_id" in rows.columns else (lambda _i: 0)):
            v = pd.to_numeric(grp["value"], errors="coerce").to_numpy(float)
            v = v[np.isfinite(v)]
            if v.size:
                per_run.append(to_sim_unit(float(fn(v)), unit)[0])
        runs = np.asarray(per_run)
        value = float(runs.mean())
        sigma, how = target_sigma(value, std=float(runs.std(ddof=1)) if runs.size > 1 else None,
                                  n=runs.size, rel_sigma=rel_sigma)
        out.append(Target(wl, metric, value, sigma, to_sim_unit(1.0, unit)[1], runs,
                          f"{measured}: {how} ({runs.size} runs)"))
    return out
