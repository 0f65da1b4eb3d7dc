"""Log-normal mixture fitted by EM, with the number of components chosen by BIC.

Javed et al. (cited by seed 001, Sec. II) found that a log-normal mixture
describes OpenFlow transit latency far better than M/M/1 models.  If
``X - loc`` is a log-normal mixture then ``log(X - loc)`` is a Gaussian
mixture, so the fit is 1-D Gaussian-mixture EM on the log data.  No installed
library does 1-D Gaussian-mixture EM (scikit-learn is not a dependency and
statsmodels has no mixture EM), so the loop is written here in numpy; the
normal CDF is scipy's ``ndtr``.

Parameters map to scipy's log-normal: component ``j`` has ``s_j = sigma_j``
and ``scale_j = exp(mu_j)``; this is the ``{dist = "lognorm_mixture"}`` spec of
:mod:`ovssim.distributions`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

_VAR_FLOOR = 1e-8


@dataclass
class LognormMixture:
    weights: np.ndarray
    s: np.ndarray          # sigma of log(x - loc) per component
    scale: np.ndarray      # exp(mu) per component, seconds
    loc: float = 0.0
    iterations: int = 0
    converged: bool = True

    @property
    def k(self) -> int:
        return int(self.weights.size)

    def n_params(self, loc_fitted: bool = False) -> int:
        return 3 * self.k - 1 + int(loc_fitted)

    def logpdf(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        y = x - self.loc
        out = np.full(x.shape, -np.inf)
        ok = y > 0
        z = np.log(y[ok])
        # linear-domain mixture density of log(x - loc), floored so a far outlier stays finite
        dens = np.zeros(z.shape)
        for w, s, sc in zip(self.weights, self.s, self.scale):
            dens += (w / (s * np.sqrt(2 * np.pi))) * np.exp(-0.5 * ((z - np.log(sc)) / s) ** 2)
        out[ok] = np.log(np.maximum(dens, 1e-300)) - z
        return out

    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        y = np.clip(x - self.loc, 1e-300, None)
        z = np.log(y)
        c = np.zeros(x.shape)
        for w, s, sc in zip(self.weights, self.s, self.scale):
            c += w * ndtr((z - np.log(sc)) / s)
        return np.where(x > self.loc, c, 0.0)

    def rvs(self, n: int, rng: np.random.Generator) -> np.ndarray:
        comp = rng.choice(self.k, size=n, p=self.weights)
        return self.loc + self.scale[comp] * np.exp(self.s[comp] * rng.standard_normal(n))


def _em_gauss(z: np.ndarray, k: int, *, max_iter: int, tol: float):
    """1-D Gaussian-mixture EM on ``z``; initialised by splitting the sorted data into k blocks."""
    n = z.size
    zs = np.sort(z)
    blocks = np.array_split(zs, k)
    w = np.array([b.size / n for b in blocks])
    mu = np.array([b.mean() for b in blocks])
    var = np.array([max(b.var(), _VAR_FLOOR) for b in blocks])
    var = np.maximum(var, 0.01 * z.var() / k)  # avoid degenerate starts on tied data
    prev = -np.inf
    it = 0
    converged = False
    inv_sqrt_2pi = 1.0 / np.sqrt(2 * np.pi)
    for it in range(1, max_iter + 1):
        # component densities written out in the linear domain: log(delay) data lie
        # within a few dozen standard deviations of some component, so nothing
        # underflows, and this is ~2x cheaper than scipy's logpdf + logsumexp
        sd = np.sqrt(var)
        dens = (w * inv_sqrt_2pi / sd)[:, None] * np.exp(-0.5 * ((z[None, :] - mu[:, None]) / sd[:, None]) ** 2)
        total = np.maximum(dens.sum(axis=0), 1e-300)
        ll = float(np.log(total).sum())
        resp = dens / total
        nk = resp.sum(axis=1) + 1e-300
        w = nk / n
        mu = (resp @ z) / nk
        var = np.maximum((resp * (z[None, :] - mu[:, None]) ** 2).sum(axis=1) / nk, _VAR_FLOOR)
        if abs(ll - prev) <= tol * n:      # mean log-likelihood per sample has settled
            converged = True
            break
        prev = ll
    order = np.argsort(mu)
    return w[order], mu[order], np.sqrt(var[order]), it, converged


def fit_lognorm_mixture(x: np.ndarray, k: int, *, loc: float = 0.0, max_iter: int = 400,
                        tol: float = 2e-6) -> LognormMixture:
    """EM fit of a ``k``-component log-normal mixture to ``x > loc`` (seconds)."""
    z = np.log(np.asarray(x, float) - loc)
    w, mu, sd, it, conv = _em_gauss(z, k, max_iter=max_iter, tol=tol)
    w = w / w.sum()
    return LognormMixture(w, sd, np.exp(mu), float(loc), it, conv)


def select_k(x: np.ndarray, *, k_max: int = 4, loc: float = 0.0, x_score: np.ndarray | None = None,
             loc_fitted: bool = False, max_iter: int = 400):
    """Fit k = 1, 2, ... on ``x`` and pick k by BIC on ``x_score`` (default ``x``).

    The search stops at ``k_max`` or at the first k whose BIC is worse than k-1's.

    Returns ``(best, table)`` where ``table`` lists ``k, loglik, bic`` per k.
    Fitting on a subsample ``x`` and scoring on all data ``x_score`` keeps
    EM fast on millions of samples.
    """
    xs = x if x_score is None else x_score
    n = xs.size
    rows, best, best_bic = [], None, np.inf
    for k in range(1, k_max + 1):
        if x.size < 5 * (3 * k - 1):
            break
        m = fit_lognorm_mixture(x, k, loc=loc, max_iter=max_iter)
        ll = float(m.logpdf(xs).sum())
        bic = m.n_params(loc_fitted) * np.log(n) - 2 * ll
        rows.append({"k": k, "loglik": ll, "bic": bic, "iterations": m.iterations,
                     "converged": m.converged})
        if bic < best_bic:
            best, best_bic = m, bic
        else:
            break
    return best, rows
