"""Empirical CDFs of processing delays, as seed 001 builds them.

Seed 001 (Sec. IV, eq. 1) counts how often each processing time occurs, turns
the counts into relative frequencies ``f = count / N`` and accumulates them into
the ECDF.  :func:`frequency_table` returns exactly that table;
:func:`ecdf` returns the step function (statsmodels' ``ECDF``) used for
plots and distances.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.distributions.empirical_distribution import ECDF


def frequency_table(x_seconds: np.ndarray, *, resolution: float | None = None) -> pd.DataFrame:
    """Seed 001's eq. 1: value, count, relative frequency, cumulative relative frequency.

    ``resolution`` (seconds) rounds values to the timer's tick first, so that
    near-equal float timings count as one processing time.
    """
    x = np.asarray(x_seconds, float)
    if resolution:
        x = np.round(x / resolution) * resolution
    values, counts = np.unique(x, return_counts=True)
    rel = counts / x.size
    return pd.DataFrame({"value": values, "count": counts, "rel_freq": rel,
                         "ecdf": np.cumsum(rel)})


def ecdf(x_seconds: np.ndarray) -> ECDF:
    """The right-continuous empirical CDF step function of the samples."""
    return ECDF(np.asarray(x_seconds, float))


def quantile_table(x_seconds: np.ndarray, n_points: int = 2001) -> tuple[np.ndarray, np.ndarray]:
    """(quantiles, probs) summarising a large sample: a uniform grid with the tails refined.

    The grid always includes the minimum (p=0) and maximum (p=1) so the table
    spans the whole support, which both ``ovssim.distributions`` and ns-3's
    ``EmpiricalRandomVariable`` need.
    """
    x = np.asarray(x_seconds, float)
    tails = np.array([1e-5, 1e-4, 5e-4, 1e-3, 0.005])
    probs = np.unique(np.concatenate([np.linspace(0.0, 1.0, n_points), tails, 1.0 - tails]))
    q = np.quantile(x, probs)
    q = np.maximum.accumulate(q)   # guard float noise
    return q, probs
