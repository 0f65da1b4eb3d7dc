"""Regression of per-packet delay on its drivers, with statsmodels.

Seed 001 varies one driver at a time (RAM, packet size, data rate; 2000 extra
flow rules) and reads the effect off ECDFs.  Here the same question is a
regression over all samples at once:

* OLS of ``log(delay)`` on the drivers: multiplicative effects with 95 %
  confidence intervals, and for a new set of drivers a log-normal predictive
  distribution (``s`` = residual standard deviation, ``scale`` = exp(fit));
* quantile regression (``statsmodels.formula.api.quantreg``) of ``log(delay)`` at
  a grid of probabilities: a distribution-free predictive distribution whose
  quantiles, rearranged to be monotone (Chernozhukov, Fernandez-Val & Galichon,
  2010), form an ``{dist = "empirical", quantiles, probs}`` spec.

So "what does 1500-byte traffic at 200 Mbit/s cost on this host?" is
``model.predict({"packet_size": 1500, "rate": 200e6})`` -> a distribution spec.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from .. import units
from ..errors import DataError
from .samples import check_delays

DEFAULT_PROBS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
_QUANTREG_MAX_ROWS = 20_000
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_driver_value(name: str, value) -> float:
    """A driver value from the CLI: a number, or a unit string (``1500b``, ``200mbit``, ``1gb``)."""
    if isinstance(value, (int, float)):
        return float(value)
    v = str(value).strip()
    try:
        return float(v)
    except ValueError:
        pass
    low = v.lower()
    try:
        if "bit" in low or "bps" in low:
            return units.rate(v)
        if low.endswith(("s", "sec", "secs")) and not low.endswith("bps"):
            return units.time(v)
        return units.size(v)
    except Exception:
        raise DataError(f"cannot read driver {name}={value!r} -- fix: give a number in the data's "
                        "unit, or a unit string like 1500b / 200mbit") from None


@dataclass
class DelayRegression:
    """Fitted OLS and quantile regressions of log(delay) on the drivers."""

    drivers: list[str]
    log_drivers: list[str]
    ols: object
    quantiles: dict = field(default_factory=dict)
    n: int = 0
    unit: str = "us"

    @property
    def formula_rhs(self) -> str:
        return _rhs(self.drivers, self.log_drivers)

    def coefficients(self) -> pd.DataFrame:
        """model, term, coef, ci95_low, ci95_high, p_value for OLS and every quantile."""
        rows = []
        models = [("ols", self.ols)] + [(f"q{p:g}", r) for p, r in sorted(self.quantiles.items())]
        for name, res in models:
            ci = res.conf_int(0.05)
            for term in res.params.index:
                rows.append({"model": name, "term": term, "coef": float(res.params[term]),
                             "ci95_low": float(ci.loc[term, 0]), "ci95_high": float(ci.loc[term, 1]),
                             "p_value": float(res.pvalues[term])})
        return pd.DataFrame(rows)

    def _frame(self, drivers: dict) -> pd.DataFrame:
        missing = [d for d in self.drivers if d not in drivers]
        if missing:
            raise DataError(f"prediction needs values for {missing} -- fix: pass e.g. "
                            + ",".join(f"{d}=..." for d in missing))
        return pd.DataFrame({d: [parse_driver_value(d, drivers[d])] for d in self.drivers})

    def predict_lognorm(self, drivers: dict) -> dict:
        """OLS predictive distribution as a ``lognorm`` spec (seconds scaled to ``unit``)."""
        f = self._frame(drivers)
        mu = float(np.asarray(self.ols.predict(f))[0])
        s = float(np.sqrt(self.ols.scale))
        uf = units.time("1" + self.unit)
        return {"dist": "lognorm", "s": float(f"{s:.6g}"), "scale": float(f"{np.exp(mu) / uf:.6g}"),
                "unit": self.unit}

    def predict_quantiles(self, drivers: dict) -> dict:
        """Quantile-regression predictive distribution as an ``empirical`` quantile spec."""
        if not self.quantiles:
            raise DataError("no quantile regressions were fitted -- fix: fit with probs")
        f = self._frame(drivers)
        probs = np.array(sorted(self.quantiles))
        q = np.array([float(np.asarray(self.quantiles[p].predict(f))[0]) for p in probs])
        q = np.sort(q)  # rearrangement: monotone quantiles even where the lines cross
        uf = units.time("1" + self.unit)
        return {"dist": "empirical", "quantiles": [float(f"{v:.6g}") for v in np.exp(q) / uf],
                "probs": [float(p) for p in probs], "unit": self.unit}

    def predict(self, drivers: dict, kind: str = "quantile") -> dict:
        return self.predict_quantiles(drivers) if kind == "quantile" else self.predict_lognorm(drivers)


def _rhs(drivers, log_drivers) -> str:
    terms = [f"np.log({d})" if d in log_drivers else d for d in drivers]
    return " + ".join(terms) if terms else "1"


def fit_regression(df: pd.DataFrame, *, delay: str, drivers: list[str], unit: str | None = None,
                   log_drivers: list[str] | None = None, probs=DEFAULT_PROBS,
                   seed: int = 0) -> DelayRegression:
    """OLS and quantile regressions of ``log(delay)`` on ``drivers``.

    ``unit`` is the delay column's unit (else its ``_us``-style suffix, else s);
    ``log_drivers`` enter as ``log(driver)`` (natural for data rate, whose
    effect seed 001 shows to be diminishing).  Quantile regressions use a
    seeded subsample of at most 20 000 rows.
    """
    from .samples import guess_unit
    if delay not in df.columns:
        raise DataError(f"no delay column {delay!r} (columns: {', '.join(map(str, df.columns))})")
    log_drivers = list(log_drivers or [])
    drivers = list(drivers)
    if not drivers:
        raise DataError("no drivers given -- fix: pass --drivers packet_size,rate,...")
    for d in drivers:
        if d not in df.columns:
            raise DataError(f"no driver column {d!r} (columns: {', '.join(map(str, df.columns))})")
        if not _IDENT.match(d):
            raise DataError(f"driver column {d!r} is not a plain identifier -- fix: rename it")
    unit = unit or guess_unit(delay) or "s"
    y = check_delays(df[delay], unit=unit, what=f"values of {delay!r}")
    if np.any(y <= 0):
        raise DataError(f"{delay!r} has zero delays; log-scale regression needs positive delays "
                        "-- fix: drop them or add the timer resolution")
    data = pd.DataFrame({"log_delay": np.log(y)})
    for d in drivers:
        col = pd.to_numeric(df[d], errors="coerce").to_numpy()
        if np.any(~np.isfinite(col)):
            raise DataError(f"driver {d!r} has non-numeric or missing values -- fix: clean the column")
        if d in log_drivers and np.any(col <= 0):
            raise DataError(f"driver {d!r} must be > 0 to enter on a log scale")
        data[d] = col
    constant = [d for d in drivers if data[d].nunique() < 2]
    if constant:
        raise DataError(f"driver(s) {constant} do not vary in the data, so their effect cannot be "
                        "estimated -- fix: drop them from --drivers")
    formula = "log_delay ~ " + _rhs(drivers, log_drivers)
    ols = smf.ols(formula, data).fit()
    qdata = data
    if len(data) > _QUANTREG_MAX_ROWS:
        qdata = data.sample(_QUANTREG_MAX_ROWS, random_state=seed)
    quant = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # IterationLimitWarning on near-degenerate quantiles
        for p in probs:
            quant[float(p)] = smf.quantreg(formula, qdata).fit(q=float(p), max_iter=2000)
    from .families import display_unit
    return DelayRegression(drivers, log_drivers, ols, quant, len(data), display_unit(y)[0])
