"""Benchmark: fit every candidate family to 1,000,000 delay samples (target <= 5 s).

Prints the wall time of ``ovssim.fit.families.fit_samples`` (all families:
empirical, shifted exponential, gamma, Weibull, log-normal, log-normal mixture
with k by BIC, plus KS and AD on all samples), and its ratio to a baseline
measured in the same run on the same data: one closed-form scipy log-normal fit
plus one scipy KS test -- the least any "fit and check" of one family costs.

    .venv/bin/python benchmarks/bench_fit.py [--n 1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats

from ovssim.fit.families import fit_samples


def _data(n: int, seed: int = 1) -> np.ndarray:
    """Seed-001-like processing delays: a 2-component log-normal mixture above a 3 us floor."""
    rng = np.random.default_rng(seed)
    comp = rng.choice(2, size=n, p=[0.75, 0.25])
    return 3e-6 + np.array([12e-6, 35e-6])[comp] * np.exp(np.array([0.25, 0.4])[comp] * rng.standard_normal(n))


def _time(fn, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds (CPU shows the cost when other jobs share the cores)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    x = _data(a.n)

    def baseline():
        s, loc, scale = stats.lognorm.fit(x, floc=0)
        stats.ks_1samp(x, stats.lognorm(s, loc, scale).cdf, method="asymp")

    res = fit_samples(x)   # warm-up (imports, caches) and the result to report
    t_base = _time(baseline, a.repeat)
    t_all = _time(lambda: fit_samples(x), a.repeat)
    print(f"samples: {a.n:,}   families: {', '.join(f.family for f in res.fits)}")
    print(f"chosen: {res.chosen.family} (k={res.chosen.extra.get('k', '-')}), KS={res.chosen.ks:.4f}")
    print(f"baseline (1 closed-form lognorm fit + 1 KS test): {t_base[0]:.3f} s wall, {t_base[1]:.3f} s CPU")
    print(f"fit all families + KS + AD:                       {t_all[0]:.3f} s wall, {t_all[1]:.3f} s CPU "
          f"({t_all[0] / t_base[0]:.1f}x baseline; target <= 5 s wall: "
          f"{'OK' if t_all[0] <= 5 else 'MISSED'})")


if __name__ == "__main__":
    main()
