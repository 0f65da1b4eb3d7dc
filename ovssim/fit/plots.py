"""Figures of a sample fit: the ECDF with fitted CDFs overlaid, and a Q-Q plot.

The ECDF figure follows seed 001's Figs. 2-8 (cumulative probability against
processing delay in microseconds), with each candidate family's fitted CDF
drawn over the data; the Q-Q plot compares the data's quantiles with the
chosen family's.  Matplotlib's non-interactive Agg backend is used, so plots
work on a headless host.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..atomic import save_figure  # noqa: E402
import numpy as np  # noqa: E402

from .ecdf import ecdf  # noqa: E402
from .families import FamilyFit, SampleFit  # noqa: E402

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_MAX_POINTS = 5000


def _thin(x_sorted: np.ndarray) -> np.ndarray:
    if x_sorted.size <= _MAX_POINTS:
        return x_sorted
    return x_sorted[np.linspace(0, x_sorted.size - 1, _MAX_POINTS).astype(int)]


def plot_ecdf(x_seconds, fit: SampleFit, path: str | Path, *, title: str = "",
              logx: bool | None = None) -> Path:
    """ECDF of the data with every fitted family's CDF overlaid; the chosen one bold.

    ``logx`` (default: when the tail reaches 8x the median, as with upcalls)
    draws the delay axis on a log scale.
    """
    unit = fit.unit
    f = _UNITS[unit]
    xs = np.sort(np.asarray(x_seconds, float))
    e = ecdf(xs)
    top = np.quantile(xs, 0.999)
    if logx is None:
        logx = top > 8 * np.median(xs) and xs[0] > 0
    grid = np.geomspace(xs[0], xs[-1], 600) if logx else np.linspace(xs[0], top, 600)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    pts = _thin(xs)
    ax.step(pts / f, e(pts), where="post", color="black", lw=1.6, label=f"ECDF (n={xs.size})")
    for fam in fit.fits:
        if fam.family == "empirical":
            continue
        bold = fam is fit.chosen
        label = fam.family + (f" k={fam.extra['k']}" if "k" in fam.extra else "")
        if fam.bic is not None and np.isfinite(fam.bic):
            label += f"  KS={fam.ks:.3f}"
        ax.plot(grid / f, fam.cdf(grid), lw=2.2 if bold else 1.0, ls="-" if bold else "--",
                label=label + ("  (chosen)" if bold else ""))
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(f"delay [{unit}]")
    ax.set_ylabel("cumulative probability")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path, dpi=120, make_parents=True)
    plt.close(fig)
    return path


def model_quantiles(fam: FamilyFit, probs: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Quantiles of a fitted family: scipy's ppf when it has one, else CDF inversion on a grid."""
    frozen = fam.extra.get("frozen")
    if frozen is not None:
        return frozen.ppf(probs)
    xs = np.linspace(lo, hi, 20001)
    return np.interp(probs, fam.cdf(xs), xs)


def plot_qq(x_seconds, fit: SampleFit, path: str | Path, *, family: str | None = None,
            title: str = "") -> Path:
    """Q-Q plot of the data against the chosen (or named) family."""
    fam = fit.get(family) if family else fit.chosen
    unit = fit.unit
    f = _UNITS[unit]
    xs = _thin(np.sort(np.asarray(x_seconds, float)))
    probs = (np.arange(1, xs.size + 1) - 0.5) / xs.size
    span = xs[-1] - xs[0]
    q = model_quantiles(fam, probs, max(0.0, xs[0] - span), xs[-1] + 2 * span)
    fig, ax = plt.subplots(figsize=(4.8, 4.8))
    ax.plot(q / f, xs / f, ".", ms=2.5, color="tab:blue")
    lim = [min(q[0], xs[0]) / f, max(q[-1], xs[-1]) / f]
    ax.plot(lim, lim, color="black", lw=1)
    ax.set_xlabel(f"{fam.family} quantile [{unit}]")
    ax.set_ylabel(f"sample quantile [{unit}]")
    ax.grid(alpha=0.3)
    ax.set_title(title or f"Q-Q: {fam.family}")
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path, dpi=120, make_parents=True)
    plt.close(fig)
    return path
