"""DelayStats: per-packet delays in bounded memory (issue 20), checked against numpy on the raw values."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ovssim.metrics import DelayStats, percentile


def _fill(values, capacity):
    s = DelayStats(capacity)
    for v in values:
        s.values.append(v)
        if len(s.values) >= capacity:
            s.fold()
    return s


def test_below_capacity_the_figures_are_numpys_to_the_bit():
    x = np.random.default_rng(3).lognormal(-9, 0.6, 5000).tolist()
    s = _fill(x, 10_000)
    assert s.n == 0 and s.count == len(x)
    assert s.mean() == float(np.mean(x))
    assert s.percentile(99) == percentile(x, 99)
    assert np.array_equal(s.sample(), np.asarray(x))


@pytest.mark.parametrize("q", [0, 1, 50, 90, 99, 99.9, 100])
def test_beyond_capacity_moments_are_exact_and_quantiles_within_alpha(q):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.lognormal(-9, 0.8, 60_000), rng.exponential(2e-3, 40_000), np.full(500, 3e-6)])
    rng.shuffle(x)
    s = _fill(x.tolist(), 1000)
    assert s.count == x.size and len(s.values) < 1000
    assert s.mean() == pytest.approx(x.mean(), rel=1e-12)
    assert s.std() == pytest.approx(x.std(), rel=1e-9)
    assert (s.min, s.max) == (x.min(), x.max())
    lo, hi = np.percentile(x, q, method="lower"), np.percentile(x, q, method="higher")
    a = DelayStats.ALPHA
    assert lo * (1 - a) <= s.percentile(q) <= hi * (1 + a)


def test_memory_does_not_grow_with_the_number_of_values():
    s = DelayStats(2000)
    rng = np.random.default_rng(1)
    sizes = []
    for _ in range(200):                       # 400,000 values through a 2,000-value buffer
        s.values.extend(rng.lognormal(-9, 0.5, 2000).tolist())
        s.fold()
        sizes.append((len(s.values), len(s.sample()), s._counts.size))
    assert s.count == 400_000
    assert max(k for _, k, _ in sizes) <= 2000 and len({c for *_, c in sizes}) == 1
    kept = s.sample()                          # a systematic sample: every stride-th value
    assert kept.size >= 1000 and s._stride == 256


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 5.0, allow_nan=False), min_size=1, max_size=3000), st.integers(2, 200))
def test_any_sequence_folds_to_the_same_count_mean_and_bounds(values, capacity):
    s = _fill(values, capacity)
    x = np.asarray(values)
    assert s.count == x.size
    assert s.mean() == pytest.approx(x.mean(), rel=1e-9, abs=1e-15)
    med = s.percentile(50)
    assert x.min() <= med <= x.max()
    assert _fill(values, capacity).percentile(90) == s.percentile(90)      # deterministic


def test_a_udp_run_folding_early_reports_the_same_figures(monkeypatch):
    """The same replication with a 500-value buffer (it folds ~40 times) and an unbounded one."""
    from ovssim.runner import run_scenario
    from ovssim.scenario import load_scenario
    sc = load_scenario({
        "scenario": {"name": "udp", "duration": "0.2s", "reps": 1, "seed": 5},
        "host": [{"name": "h1", "cores": 2}],
        "bridge": [{"name": "br0", "host": "h1"}],
        "vm": [{"name": "vm1", "host": "h1", "bridge": "br0"}, {"name": "vm2", "host": "h1", "bridge": "br0"}],
        "workload": [{"name": "udp", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm2", "b": "950mbit"}]})
    full = run_scenario(sc).per_rep.set_index("metric")["value"]
    monkeypatch.setattr(DelayStats, "CAPACITY", 500)
    folded = run_scenario(sc)
    small = folded.per_rep.set_index("metric")["value"]
    assert folded.samples["udp:one_way_delay"].size <= 500
    for m in ("throughput", "jitter", "loss", "out_of_order"):
        assert small[m] == full[m]
    assert small["delay_mean"] == pytest.approx(full["delay_mean"], rel=1e-9)
    assert small["delay_p99"] == pytest.approx(full["delay_p99"], rel=2 * DelayStats.ALPHA)
