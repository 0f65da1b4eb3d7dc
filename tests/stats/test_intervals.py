"""The one interval helper: t where it is right, inside the metric's range always, n/a for one value."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ovssim.intervals import interval, metric_range


def test_one_replication_has_no_interval_never_a_zero_width_one():
    ci = interval([3.2], "ms", "rtt_mean")
    assert ci.mean == 3.2 and math.isnan(ci.low) and math.isnan(ci.high)
    assert ci.text() == "n/a" and ci.method == "n/a"


def test_a_mean_away_from_its_bounds_gets_the_student_t_interval():
    x = np.random.default_rng(4).normal(50.0, 2.0, 12)
    ci = interval(x, "Mbit/s", "throughput")
    lo, hi = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert ci.method == "t"
    assert ci.low == pytest.approx(lo) and ci.high == pytest.approx(hi)


def test_the_intervals_the_issue_reported_now_stay_in_range():
    # shapes of the reported cases: retransmits [-2.3, 7.8], Jain index [0.906, 1.017], rtt_min low -5.2 ms
    retx = [0, 0, 0, 0, 0, 0, 0, 0, 0, 27]
    jain = [1.0, 1.0, 1.0, 0.86, 1.0, 1.0, 1.0, 1.0]
    rtt_min = [0.05, 0.04, 0.06, 30.0, 0.05]
    for x, unit, metric in ((retx, "count", "retransmits"), (jain, "Jain index", "fairness"),
                            (rtt_min, "ms", "rtt_min")):
        t_half = stats.t.ppf(0.975, len(x) - 1) * np.std(x, ddof=1) / math.sqrt(len(x))
        lo_b, hi_b = metric_range(unit, metric)
        assert np.mean(x) - t_half < lo_b or np.mean(x) + t_half > hi_b      # t would leave the range
        ci = interval(x, unit, metric)
        assert lo_b <= ci.low <= ci.mean <= ci.high <= hi_b, (metric, ci)
        assert ci.method.startswith("bootstrap") and ci.high > ci.low


def test_a_count_that_is_zero_every_time_gets_the_exact_poisson_bound():
    ci = interval([0, 0, 0, 0, 0], "count", "retransmits")
    assert ci.low == 0 and ci.high == pytest.approx(-math.log(0.025) / 5, rel=1e-9)   # chi2(2)/2 = -ln(alpha)


def test_the_interval_is_a_pure_function_of_the_values():
    x = [0, 1, 0, 0, 4, 0, 2]
    assert interval(x, "count", "retransmits") == interval(list(x), "count", "retransmits")


_counts = st.lists(st.integers(0, 10_000), min_size=2, max_size=40)
_percent = st.lists(st.floats(0, 100, allow_nan=False, allow_subnormal=False), min_size=2, max_size=40)
_jain = st.lists(st.floats(0.5, 1.0, allow_nan=False, allow_subnormal=False), min_size=2, max_size=40)
_minima = st.lists(st.floats(0, 1e3, allow_nan=False, allow_subnormal=False), min_size=2, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.one_of(_counts.map(lambda x: (x, "count", "retransmits")),
                 _percent.map(lambda x: (x, "%", "loss")),
                 _jain.map(lambda x: (x, "Jain index", "fairness")),
                 _minima.map(lambda x: (x, "ms", "rtt_min"))))
def test_bounded_metrics_get_intervals_inside_their_range(case):
    x, unit, metric = case
    lo_b, hi_b = metric_range(unit, metric)
    ci = interval(x, unit, metric)
    assert lo_b <= ci.low <= ci.high <= hi_b
    assert ci.low <= ci.mean + 1e-9 * max(1.0, abs(ci.mean)) and ci.mean <= ci.high + 1e-9 * max(1.0, abs(ci.mean))
    if np.ptp(x) > 1e-9 * max(1.0, np.max(np.abs(x))):
        assert ci.high > ci.low                      # spread in the data: never a zero-width interval
