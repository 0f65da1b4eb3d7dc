"""Regression of log(delay) on its drivers (ovssim.fit.regression)."""
import numpy as np
import pandas as pd
import pytest

from ovssim.distributions import Distribution
from ovssim.errors import DataError
from ovssim.fit.regression import fit_regression

B_SIZE, B_LOGRATE, SIGMA = 2e-4, -0.1, 0.3


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    size = rng.choice([64, 576, 1500], n)
    rate = rng.choice([0.25e6, 1e6, 10e6, 200e6], n)
    ram = rng.choice([0.5, 1.0, 2.0], n)            # seed 001: RAM barely matters -> true effect 0
    mu = np.log(20e-6) + B_SIZE * size + B_LOGRATE * np.log(rate / 1e6)
    delay = np.exp(mu + SIGMA * rng.standard_normal(n))
    return pd.DataFrame({"delay_us": delay * 1e6, "packet_size": size, "rate": rate, "ram": ram})


def test_coefficients_recovered_within_their_confidence_intervals():
    m = fit_regression(_data(), delay="delay_us", drivers=["packet_size", "rate", "ram"], log_drivers=["rate"])
    c = m.coefficients().set_index(["model", "term"])
    for term, truth in (("packet_size", B_SIZE), ("np.log(rate)", B_LOGRATE), ("ram", 0.0)):
        row = c.loc[("ols", term)]
        # within 1.5 half-widths of the 95 % CI (~2.9 standard errors: fails by chance ~0.4 %)
        half = (row["ci95_high"] - row["ci95_low"]) / 2
        assert abs(row["coef"] - truth) <= 1.5 * half, (term, row)
    assert c.loc[("ols", "ram"), "p_value"] > 0.001      # no RAM effect detected
    assert c.loc[("ols", "np.log(rate)"), "p_value"] < 1e-10
    med = c.loc[("q0.5", "packet_size")]
    assert abs(med["coef"] - B_SIZE) <= 1.5 * (med["ci95_high"] - med["ci95_low"]) / 2


def test_prediction_is_a_distribution_matching_the_truth():
    m = fit_regression(_data(), delay="delay_us", drivers=["packet_size", "rate"], log_drivers=["rate"])
    truth_median = 20e-6 * np.exp(B_SIZE * 1500 + B_LOGRATE * np.log(200))
    for kind in ("quantile", "lognorm"):
        spec = m.predict({"packet_size": "1500b", "rate": "200mbit"}, kind=kind)
        d = Distribution(spec)
        assert abs(d.cdf(truth_median) - 0.5) < 0.05, kind
        # 90th percentile of the truth
        q90 = truth_median * np.exp(1.2816 * SIGMA)
        assert abs(d.cdf(q90) - 0.9) < 0.04, kind
    q = m.predict({"packet_size": 1500, "rate": 200e6})["quantiles"]
    assert q == sorted(q)


def test_bad_regression_inputs():
    df = _data(200)
    with pytest.raises(DataError, match="do not vary"):
        fit_regression(df.assign(ram=1.0), delay="delay_us", drivers=["packet_size", "ram"])
    with pytest.raises(DataError, match="no driver column"):
        fit_regression(df, delay="delay_us", drivers=["cpu"])
    m = fit_regression(df, delay="delay_us", drivers=["packet_size"])
    with pytest.raises(DataError, match="needs values"):
        m.predict({"rate": 1})
