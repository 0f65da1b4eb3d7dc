"""Distribution specs: sampled means match analytic means; impossible specs are clear errors."""
import numpy as np
import pytest

from ovssim.distributions import Distribution, Sampler, SumSampler
from ovssim.errors import ConfigError


@pytest.mark.parametrize("spec,mean", [
    ("25us", 25e-6),
    ({"dist": "expon", "loc": "10us", "scale": "5us"}, 15e-6),
    ({"dist": "gamma", "a": 2.0, "scale": "4us"}, 8e-6),
    ({"dist": "lognorm", "s": 0.5, "scale": "20us"}, 20e-6 * np.exp(0.125)),
    ({"dist": "lognorm_mixture", "weights": [0.9, 0.1], "s": [0.3, 0.3], "scale": ["10us", "1ms"]},
     (0.9 * 10e-6 + 0.1 * 1e-3) * np.exp(0.045)),
    ({"dist": "empirical", "values": [1, 2, 3, 4], "unit": "us"}, 2.5e-6),
])
def test_sampled_mean_matches_analytic(spec, mean):
    d = Distribution(spec)
    assert d.mean() == pytest.approx(mean, rel=1e-9)
    s = Sampler(d, np.random.default_rng(4))
    draws = np.array([s.next() for _ in range(100_000)])
    assert draws.mean() == pytest.approx(mean, rel=0.02)
    assert draws.min() >= 0


def test_sum_sampler_adds_means_and_is_deterministic():
    mk = lambda seed: SumSampler(Sampler({"dist": "expon", "scale": "2us"}, np.random.default_rng(seed)),  # noqa: E731
                                 Sampler("1us", np.random.default_rng(seed)))
    a, b = mk(1), mk(1)
    xs = [a.next() for _ in range(50_000)]
    assert xs[:100] == [b.next() for _ in range(100)]
    assert np.mean(xs) == pytest.approx(3e-6, rel=0.02)


@pytest.mark.parametrize("spec", [
    {"dist": "lognorm", "s": -1, "scale": "1us"},
    {"dist": "nosuch"},
    {"s": 1},
    {"dist": "lognorm_mixture", "weights": [0.5, 0.6], "s": [1, 1], "scale": ["1us", "2us"]},
    {"dist": "empirical", "values": []},
    {"dist": "empirical", "quantiles": [3, 1], "probs": [0.1, 0.9]},
    "fast", [1, 2],
])
def test_impossible_specs_are_config_errors(spec):
    with pytest.raises(ConfigError, match="fix:"):
        Distribution(spec)
