"""Seed 001's ECDF construction (eq. 1) and the quantile summary (ovssim.fit.ecdf)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.fit.ecdf import ecdf, frequency_table, quantile_table


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=300))
def test_eq1_relative_frequencies_accumulate_to_the_ecdf(ticks):
    x = np.array(ticks, float) * 1e-6          # a 1 us timer, as seed 001's traces
    t = frequency_table(x)
    assert t["count"].sum() == x.size
    assert np.isclose(t["rel_freq"].sum(), 1.0)
    assert np.all(np.diff(t["value"]) > 0) and np.isclose(t["ecdf"].iloc[-1], 1.0)
    assert np.allclose(t["ecdf"], ecdf(x)(t["value"].to_numpy()))


def test_resolution_merges_float_noise():
    x = np.array([10e-6, 10e-6 + 1e-13, 20e-6, 20e-6 - 1e-13])
    assert len(frequency_table(x)) == 4
    assert len(frequency_table(x, resolution=1e-6)) == 2


def test_quantile_table_spans_the_sample():
    x = np.random.default_rng(0).lognormal(-11, 0.5, 50_000)
    q, p = quantile_table(x)
    assert p[0] == 0 and p[-1] == 1 and q[0] == x.min() and q[-1] == x.max()
    assert np.all(np.diff(p) > 0) and np.all(np.diff(q) >= 0)
    assert np.isclose(np.interp(0.5, p, q), np.median(x), rtol=1e-3)
