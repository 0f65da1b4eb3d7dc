"""The comparison figures behave as their definitions say."""
import math

import numpy as np
from scipy import stats

from ovssim.validate.compare import Comparison, ks_distance, mean_ci, ranking_agreement


def test_ks_distance_identical_and_disjoint():
    a = np.linspace(0, 1, 200)
    assert ks_distance(a, a) == 0.0
    assert ks_distance(a, a + 5) == 1.0


def test_ks_distance_shift_of_uniform():
    # two uniform samples shifted by 0.2 of their width: sup |F - G| = 0.2
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0, 1, 20000), rng.uniform(0.2, 1.2, 20000)
    assert abs(ks_distance(a, b) - 0.2) < 0.02


def test_mean_ci_is_student_t():
    """Student's t while the interval stays above zero (see the next test for when it would not)."""
    v = [10.0, 11.0, 13.0, 16.0]
    m, lo, hi = mean_ci(v)
    h = stats.t.ppf(0.975, 3) * np.std(v, ddof=1) / 2
    assert math.isclose(m, 12.5) and math.isclose(hi - m, h) and math.isclose(m - lo, h)
    assert math.isnan(mean_ci([5.0])[1])


def test_ranking_ties_are_not_preserved():
    meas = {"FIFO": 1.0, "HTB": 2.0, "SFQ": 3.0}
    assert ranking_agreement(meas, {"FIFO": 10, "HTB": 20, "SFQ": 30})["preserved"]
    assert not ranking_agreement(meas, {"FIFO": 10, "HTB": 10, "SFQ": 10})["preserved"]
    assert not ranking_agreement(meas, {"FIFO": 30, "HTB": 20, "SFQ": 10})["preserved"]


def test_comparison_error_target_and_band():
    c = Comparison("t", "c", "rtt", "ms", 0.30, 0.29, 0.31, 0.32, 0.31, 0.33, "held-out", "rtt")
    assert math.isclose(c.rel_error, 0.0666666, rel_tol=1e-4)
    assert c.meets is True and c.inside is False
    ks = Comparison("t", "c", "ks_rtt", "KS", math.nan, math.nan, math.nan, 0.3, math.nan, math.nan, "held-out", "ks")
    assert ks.error == 0.3 and ks.meets is False and ks.inside is None


def test_validation_intervals_stay_at_or_above_zero():
    """Two noisy replications of a magnitude (a jitter, a throughput) give no negative lower bound."""
    from ovssim.validate.compare import mean_ci
    m, lo, hi = mean_ci([0.001, 0.2])
    assert m == 0.1005 and 0.0 <= lo <= m <= hi
