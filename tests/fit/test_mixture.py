"""EM for the log-normal mixture (ovssim.fit.mixture)."""
import numpy as np
from scipy import integrate, stats

from ovssim.fit.mixture import LognormMixture, fit_lognorm_mixture, select_k


def _mixture(n, seed, w=(0.5, 0.3, 0.2), s=(0.2, 0.3, 0.25), sc=(10e-6, 40e-6, 200e-6), loc=0.0):
    rng = np.random.default_rng(seed)
    m = LognormMixture(np.array(w), np.array(s), np.array(sc), loc)
    return m, m.rvs(n, rng)


def test_three_components_recovered_and_k_chosen_by_bic():
    truth, x = _mixture(15_000, 1)
    best, rows = select_k(x, k_max=5)
    assert best.k == 3
    assert [r["k"] for r in rows][:3] == [1, 2, 3]
    assert np.allclose(best.weights, truth.weights, atol=0.03)
    assert np.allclose(best.scale, truth.scale, rtol=0.06)
    assert np.allclose(best.s, truth.s, rtol=0.12)


def test_em_never_decreases_the_likelihood():
    _, x = _mixture(3000, 2)
    lls = [fit_lognorm_mixture(x, 3, max_iter=i, tol=0).logpdf(x).sum() for i in (1, 3, 10, 40, 200)]
    assert all(b >= a - 1e-6 for a, b in zip(lls, lls[1:]))


def test_density_integrates_to_one_and_matches_cdf():
    m = LognormMixture(np.array([0.6, 0.4]), np.array([0.3, 0.5]), np.array([20e-6, 80e-6]), 5e-6)
    total, _ = integrate.quad(lambda v: np.exp(m.logpdf(np.array([v]))[0]), 5e-6, 5e-3, limit=400,
                              points=[20e-6, 80e-6])
    assert abs(total - 1) < 1e-4
    x = np.array([30e-6, 100e-6])
    num = [integrate.quad(lambda v: np.exp(m.logpdf(np.array([v]))[0]), 5e-6, xi, limit=200)[0] for xi in x]
    assert np.allclose(num, m.cdf(x), atol=1e-6)


def test_k1_equals_the_scipy_lognormal_mle():
    x = stats.lognorm(0.4, scale=25e-6).rvs(5000, random_state=np.random.default_rng(4))
    m = fit_lognorm_mixture(x, 1)
    s, _, scale = stats.lognorm.fit(x, floc=0)
    assert np.isclose(m.s[0], s, rtol=1e-6) and np.isclose(m.scale[0], scale, rtol=1e-6)
