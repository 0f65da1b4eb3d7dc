"""MSER-5 and batch means against an AR(1) process with a known mean and variance of the mean."""
import numpy as np

from ovssim.steady import batch_means, mser5

MU, PHI, SIGMA = 10.0, 0.9, 1.0


def ar1(n, seed, start=MU):
    """X_t = MU + PHI (X_{t-1} - MU) + e_t, e_t ~ N(0, SIGMA^2); Var(mean) ~ SIGMA^2 / ((1 - PHI)^2 n)."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, SIGMA, n)
    x = np.empty(n)
    prev = start
    for t in range(n):
        prev = MU + PHI * (prev - MU) + e[t]
        x[t] = prev
    return x


def test_mser5_deletes_the_initial_transient_and_little_of_a_stationary_run():
    x = ar1(20_000, 1, start=MU + 60.0)        # 60 * 0.9^t falls below SIGMA after ~39 steps
    d = mser5(x)
    assert d % 5 == 0 and 20 <= d <= 200
    assert x[:d].mean() > MU + 5 and abs(x[d:d + 50].mean() - MU) < 3 * SIGMA / (1 - PHI) / np.sqrt(50)
    stationary = ar1(20_000, 2, start=MU + np.random.default_rng(2).normal(0, SIGMA / np.sqrt(1 - PHI ** 2)))
    assert mser5(stationary) <= 200


def test_batch_means_interval_has_the_analytic_width_and_covers_the_mean():
    n = 20_000
    analytic = 1.96 * SIGMA / (1 - PHI) / np.sqrt(n)       # asymptotic half-width of the mean's CI
    hits, widths = 0, []
    for seed in range(60):
        s = batch_means(ar1(n, 100 + seed, start=MU + 30.0), batches=20)
        hits += s.low <= MU <= s.high
        widths.append(s.half_width)
    assert hits >= 51                                     # 95 % nominal: >= 85 % of 60 (binomial slack)
    assert 0.75 * analytic <= np.median(widths) <= 1.35 * analytic


def test_batch_means_of_iid_data_matches_the_plain_t_interval_width():
    x = np.random.default_rng(5).normal(3.0, 2.0, 10_000)
    s = batch_means(x, batches=25, warmup=0)
    assert abs(s.half_width - 1.96 * 2.0 / 100) < 0.3 * 1.96 * 2.0 / 100
    assert abs(s.lag1) < 0.5


def test_jitter_mean_estimates_the_expected_final_rfc3550_jitter():
    """iperf's jitter is J after the last datagram (gain 1/16); the steady-state estimate is the mean |D|.
    For i.i.d. transit times N(0, s^2), E|D| = 2 s / sqrt(pi) and E[J_final] is the same."""
    from ovssim.metrics import JitterEstimator
    from ovssim.steady import MeanAbsDiff

    def _steady_mean_abs_diff(x):
        m = MeanAbsDiff(capacity=64)              # small: exercises the pairwise merging of blocks
        for chunk in np.array_split(x, 7):
            m.add(chunk[:-3])
            m.add(chunk[-3:])
        return m.mean()
    s = 1e-5
    rng = np.random.default_rng(9)
    analytic = 2 * s / np.sqrt(np.pi)
    finals, steady = [], []
    for _ in range(300):
        transit = rng.normal(1e-3, s, 2000)
        j = JitterEstimator()
        for t in transit:
            j.update(0.0, t)
        finals.append(j.jitter)
        steady.append(_steady_mean_abs_diff(transit))
    finals, steady = np.array(finals), np.array(steady)
    assert abs(steady.mean() - analytic) < 0.01 * analytic
    assert abs(finals.mean() - analytic) < 3 * finals.std(ddof=1) / np.sqrt(finals.size)
    assert steady.std() < finals.std() / 5          # the same expectation, a far smaller spread
