"""Fit candidate delay distributions to samples and choose one by AIC/BIC.

Candidates (names as in :mod:`ovssim.distributions` specs):

* ``empirical`` -- inverse-CDF sampling of the ECDF (seed 001, eq. 1), optionally
  kernel-smoothed; kept as the reference, never chosen by an information criterion
  (it has no finite parameter count);
* ``expon`` -- shifted exponential (the M/M/1-style service time earlier SDN models
  assume, seed 001 Sec. II);
* ``gamma``, ``weibull_min``, ``lognorm`` -- three-parameter families with a
  location (the minimum processing time);
* ``lognorm_mixture`` -- Javed et al.'s log-normal mixture, EM-fitted, k by BIC
  (:mod:`ovssim.fit.mixture`).

Estimation is maximum likelihood with scipy.stats: the location is found by
profile likelihood (a bounded 1-D search, each step a fixed-location scipy fit),
shapes and scales by scipy's fixed-location fits.  On large data the parameters
are estimated on a seeded random subsample (``max_fit_n``, default 200 000) and
the log-likelihood, AIC, BIC, Kolmogorov-Smirnov distance (scipy) and Anderson-Darling
(statsmodels) figures on all samples.  No KS p-value is reported: with the parameters fitted on
the same data it is not a valid test (Lilliefors 1967).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
from scipy import optimize, stats
from statsmodels.stats.diagnostic import anderson_statistic

from ..errors import DataError
from . import mixture as _mixture
from .ecdf import quantile_table

FAMILIES = ("empirical", "expon", "gamma", "weibull_min", "lognorm", "lognorm_mixture")
ALIASES = {"exponential": "expon", "shifted_exponential": "expon", "exp": "expon",
           "weibull": "weibull_min", "lognormal": "lognorm", "mixture": "lognorm_mixture",
           "lognormal_mixture": "lognorm_mixture", "ecdf": "empirical"}
_SHAPES = {"gamma": "a", "weibull_min": "c", "lognorm": "s"}
_LOC_SUBSAMPLE = 20_000
_EM_SUBSAMPLE = 30_000
_EMPIRICAL_VALUES_MAX = 2000


def canonical_family(name: str) -> str:
    n = ALIASES.get(name.strip().lower(), name.strip().lower())
    if n not in FAMILIES:
        raise DataError(f"unknown family {name!r} -- fix: choose from {', '.join(FAMILIES)}")
    return n


def display_unit(x_seconds: np.ndarray) -> tuple[str, float]:
    """A readable unit for specs of data this size: ('us', 1e-6) for microsecond delays."""
    med = float(np.median(x_seconds))
    for name, f in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if med < 1000 * f:
            return name, f
    return "s", 1.0


def _r(v: float, sig: int = 8) -> float:
    return float(f"{float(v):.{sig}g}")


@dataclass
class FamilyFit:
    """One fitted candidate: its spec, its CDF and its goodness of fit."""

    family: str
    spec: dict
    cdf: Callable[[np.ndarray], np.ndarray]
    n_params: int | None
    loglik: float | None = None
    aic: float | None = None
    bic: float | None = None
    ks: float | None = None
    # scipy's KS p-value for a *fully specified* CDF; the parameters here were fitted on the same data, so
    # it is far too high (Lilliefors 1967) and not a test of the family: kept for ordering, never printed
    # or saved as a p-value (a valid one needs a parametric bootstrap, scipy.stats.goodness_of_fit, i.e.
    # a refit per resample -- too dear for profile-likelihood fits of 10^5..10^6 samples)
    ks_pvalue: float | None = None
    ad: float | None = None
    extra: dict = field(default_factory=dict)

    def figures(self) -> dict:
        out = {k: getattr(self, k) for k in ("n_params", "loglik", "aic", "bic", "ks", "ad")}
        return {k: (None if v is None else (int(v) if k == "n_params" else float(v))) for k, v in out.items()}


@dataclass
class SampleFit:
    """All candidates fitted to one sample, and the chosen one."""

    n: int
    fits: list[FamilyFit]
    chosen: FamilyFit
    criterion: str
    unit: str
    summary: dict

    def table(self) -> pd.DataFrame:
        rows = []
        for f in self.fits:
            row = {"family": f.family, **f.figures(), "chosen": f is self.chosen}
            rows.append(row)
        return pd.DataFrame(rows)

    def get(self, family: str) -> FamilyFit:
        fam = canonical_family(family)
        for f in self.fits:
            if f.family == fam:
                return f
        raise KeyError(family)


class _CdfDist:
    """Adapter so statsmodels' ``anderson_statistic`` can call an arbitrary CDF."""

    def __init__(self, cdf):
        self._cdf = cdf

    def __call__(self, *a, **k):  # statsmodels checks callable(dist)
        return self

    def cdf(self, y, *params):
        return np.clip(self._cdf(y), 1e-300, 1 - 1e-16)


class _MemoCdf:
    """The fitted CDF evaluated once on the (sorted) data and reused by KS and AD."""

    def __init__(self, cdf, x_sorted):
        self._cdf, self._x, self._z = cdf, x_sorted, None

    def __call__(self, y):
        if y is self._x or (y.shape == self._x.shape and y[0] == self._x[0] and y[-1] == self._x[-1]
                            and np.array_equal(y, self._x)):
            if self._z is None:
                self._z = self._cdf(self._x)
            return self._z
        return self._cdf(y)


def _gof(fit: FamilyFit, x_sorted: np.ndarray) -> None:
    n = x_sorted.size
    method = "asymp" if n > 10_000 else "auto"
    cdf = _MemoCdf(fit.cdf, x_sorted)
    res = stats.ks_1samp(x_sorted, cdf, method=method)
    fit.ks, fit.ks_pvalue = float(res.statistic), float(res.pvalue)
    fit.ad = float(anderson_statistic(x_sorted, dist=_CdfDist(cdf), fit=False))


def _ic(fit: FamilyFit, loglik: float, n: int) -> None:
    fit.loglik = float(loglik)
    if fit.n_params is not None and np.isfinite(loglik):
        fit.aic = 2 * fit.n_params - 2 * loglik
        fit.bic = fit.n_params * np.log(n) - 2 * loglik
    else:
        fit.aic = fit.bic = float("inf") if fit.n_params is not None else None


# -- fixed-location fits with scipy -------------------------------------------
def _fit_fixed_loc(family: str, y: np.ndarray) -> tuple[float, float]:
    """(shape, scale) of ``family`` for data ``y = x - loc > 0``, by scipy MLE."""
    if family == "lognorm":
        s, _, scale = stats.lognorm.fit(y, floc=0)       # closed form in scipy
        return s, scale
    if family == "gamma":
        a, _, scale = stats.gamma.fit(y, floc=0)         # scipy's 1-D root for the shape
        return a, scale
    if family == "weibull_min":
        # log of a Weibull variable is a (left-skewed) Gumbel: scipy solves its MLE
        # equations directly, far faster than weibull_min.fit's generic optimiser.
        m, b = stats.gumbel_l.fit(np.log(y))
        return 1.0 / b, float(np.exp(m))
    raise ValueError(family)


def _nll(family: str, y: np.ndarray) -> float:
    try:
        shape, scale = _fit_fixed_loc(family, y)
    except Exception:
        return np.inf
    ll = getattr(stats, family).logpdf(y, shape, scale=scale).sum()
    return -ll if np.isfinite(ll) else np.inf


def profile_loc(family: str, x: np.ndarray, *, lower: float | None = None,
                data_min: float | None = None) -> float:
    """Maximum-profile-likelihood location for a 3-parameter family.

    The search runs over ``[lower, min(x) - gap]``; ``gap`` (1 % of the distance
    from the minimum to the 10th percentile) keeps it off the spurious infinite
    likelihood at ``loc -> min(x)`` that these families have.  When ``x`` is a
    subsample, ``data_min`` (the minimum of all samples) caps the location too, so
    that no sample falls below it.
    """
    xmin = float(x.min()) if data_min is None else min(float(x.min()), float(data_min))
    q10, q50 = np.quantile(x, [0.1, 0.5])
    gap = 0.01 * (q10 - xmin) + 1e-15
    hi = xmin - gap
    lo = max(0.0, xmin - 20 * (q50 - xmin)) if lower is None else lower
    if hi <= lo:
        return lo
    f = lambda loc: _nll(family, x - loc)  # noqa: E731
    res = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-4 * (q50 - lo)})
    best = float(res.x)
    return lo if f(lo) <= f(best) else best


# -- the candidates ------------------------------------------------------------
def _fit_scipy(family: str, x_fit: np.ndarray, loc_mode: str, unit: tuple[str, float],
               data_min: float) -> FamilyFit:
    uname, uf = unit
    if family == "expon":
        loc = data_min if loc_mode == "fit" else 0.0    # the MLE of the shift is the sample minimum
        scale = float(x_fit.mean() - loc)
        frozen = stats.expon(loc=loc, scale=scale)
        spec = {"dist": "expon", "loc": _r(loc / uf), "scale": _r(scale / uf), "unit": uname}
        k = 2 if loc_mode == "fit" else 1
        return FamilyFit("expon", spec, frozen.cdf, k, extra={"frozen": frozen})
    if loc_mode == "fit":
        sub = x_fit if x_fit.size <= _LOC_SUBSAMPLE else x_fit[:: max(1, x_fit.size // _LOC_SUBSAMPLE)]
        loc = profile_loc(family, sub, data_min=data_min)
    else:
        loc = 0.0
    shape, scale = _fit_fixed_loc(family, x_fit - loc)
    frozen = getattr(stats, family)(shape, loc=loc, scale=scale)
    spec = {"dist": family, _SHAPES[family]: _r(shape), "loc": _r(loc / uf), "scale": _r(scale / uf),
            "unit": uname}
    k = 3 if loc_mode == "fit" else 2
    return FamilyFit(family, spec, frozen.cdf, k, extra={"frozen": frozen})


def _fit_mixture(x_fit: np.ndarray, unit: tuple[str, float], k_max: int,
                 loc_candidates: list[float]) -> FamilyFit | None:
    uname, uf = unit
    sub = x_fit if x_fit.size <= _EM_SUBSAMPLE else x_fit[:: max(1, x_fit.size // _EM_SUBSAMPLE)]
    best, best_bic, best_rows, best_loc_fitted = None, np.inf, None, False
    for loc in loc_candidates:
        fitted = loc > 0
        m, rows = _mixture.select_k(sub, k_max=k_max, loc=loc, loc_fitted=fitted)
        if m is None:
            continue
        b = min(r["bic"] for r in rows)
        if b < best_bic:
            best, best_bic, best_rows, best_loc_fitted = m, b, rows, fitted
    if best is None:
        return None
    spec = {"dist": "lognorm_mixture", "weights": [_r(w) for w in best.weights],
            "s": [_r(s) for s in best.s], "scale": [_r(c / uf) for c in best.scale],
            "loc": _r(best.loc / uf), "unit": uname}
    return FamilyFit("lognorm_mixture", spec, best.cdf, best.n_params(best_loc_fitted),
                     extra={"model": best, "k": best.k, "bic_by_k": best_rows})


def _fit_empirical(x_sorted: np.ndarray, unit: tuple[str, float], smooth: bool) -> FamilyFit:
    uname, uf = unit
    if x_sorted.size <= _EMPIRICAL_VALUES_MAX:
        vals = x_sorted
        probs = (np.arange(1, vals.size + 1) - 0.5) / vals.size
        spec = {"dist": "empirical", "values": [_r(v / uf) for v in vals], "unit": uname}
    else:
        vals, probs = quantile_table(x_sorted)
        spec = {"dist": "empirical", "quantiles": [_r(v / uf) for v in vals],
                "probs": [_r(p, 10) for p in probs], "unit": uname}
    if smooth:
        spec["smooth"] = True
    cdf = lambda y: np.interp(np.asarray(y, float), vals, probs, left=0.0, right=1.0)  # noqa: E731
    return FamilyFit("empirical", spec, cdf, None, extra={"quantiles": vals, "probs": probs})


def fit_samples(x_seconds, *, families=None, criterion: str = "bic", loc: str = "fit",
                k_max: int = 4, smooth: bool = False, max_fit_n: int = 200_000,
                seed: int = 0) -> SampleFit:
    """Fit the candidate ``families`` (default all) to delays in seconds and choose one.

    ``criterion`` is ``bic`` (default), ``aic`` or ``ks``; the empirical
    candidate is chosen only when it is the sole candidate or ``criterion='ks'``
    cannot rank the parametric ones.  ``loc='zero'`` fixes all locations at 0.
    """
    from .samples import check_delays
    x = check_delays(np.asarray(x_seconds), unit="s")
    if criterion not in ("bic", "aic", "ks"):
        raise DataError(f"unknown selection criterion {criterion!r} -- fix: use bic, aic or ks")
    if loc not in ("fit", "zero"):
        raise DataError(f"unknown loc mode {loc!r} -- fix: use fit or zero")
    fams = [canonical_family(f) for f in (families or FAMILIES)]
    fams = list(dict.fromkeys(fams))
    xs = np.sort(x)
    n = xs.size
    unit = display_unit(xs)
    if n > max_fit_n:
        rng = np.random.default_rng(seed)
        x_fit = np.sort(rng.choice(xs, size=max_fit_n, replace=False))
    else:
        x_fit = xs
    fits: list[FamilyFit] = []
    for fam in fams:
        if fam == "empirical":
            fits.append(_fit_empirical(xs, unit, smooth))
        elif fam == "lognorm_mixture":
            locs = [0.0]
            if loc == "fit":
                sub = x_fit[:: max(1, x_fit.size // _LOC_SUBSAMPLE)]
                locs.append(profile_loc("lognorm", sub, data_min=float(xs[0])))
            f = _fit_mixture(x_fit, unit, k_max, locs)
            if f is not None:
                fits.append(f)
        else:
            fits.append(_fit_scipy(fam, x_fit, loc, unit, float(xs[0])))
    if not fits:
        raise DataError("no family could be fitted -- fix: give more samples or other --families")
    for f in fits:
        if f.family == "empirical":
            f.loglik = None
        elif f.family == "lognorm_mixture":
            _ic(f, f.extra["model"].logpdf(xs).sum(), n)
        else:
            _ic(f, f.extra["frozen"].logpdf(xs).sum(), n)
        _gof(f, xs)
    # a 1-component "mixture" is a log-normal (with its location fixed at 0 or at the log-normal
    # fit's): it competes as such, loses ties to the plain log-normal listed before it, and is
    # written as a plain log-normal spec
    for f in fits:
        if f.family == "lognorm_mixture" and f.extra["k"] == 1:
            m = f.extra["model"]
            f.spec = {"dist": "lognorm", "s": _r(m.s[0]), "loc": _r(m.loc / unit[1]),
                      "scale": _r(m.scale[0] / unit[1]), "unit": unit[0]}
    ranked = [f for f in fits if f.family != "empirical"]
    if not ranked:
        chosen = fits[0]
    elif criterion == "ks":
        chosen = min(ranked, key=lambda f: f.ks)
    else:
        chosen = min(ranked, key=lambda f: getattr(f, criterion))
    summary = {"n": n, "min": float(xs[0]), "median": float(np.median(xs)), "mean": float(xs.mean()),
               "p99": float(np.quantile(xs, 0.99)), "max": float(xs[-1]), "std": float(xs.std(ddof=1))}
    return SampleFit(n, fits, chosen, criterion, unit[0], summary)
