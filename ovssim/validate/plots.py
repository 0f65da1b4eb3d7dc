"""Report figures: measured-vs-simulated bars with 95% CIs (thesis Figs. 11-16 style) and ECDF overlays.

Small PNGs (about 6x3 inches at 80 dpi, a few tens of KB).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..atomic import save_figure  # noqa: E402

DPI = 80


def _err(mean, lo, hi):
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 0.0
    return max(mean - lo, 0.0), max(hi - mean, 0.0)


def bars(path: Path, title: str, ylabel: str, rows: list) -> Path:
    """Grouped bars per configuration: measured (grey) and simulated (colour by split), 95% CI whiskers.

    ``rows`` are :class:`~ovssim.validate.compare.Comparison` objects of one metric.
    """
    n = len(rows)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.75 * n + 1.5), 3.2), dpi=DPI)
    x = np.arange(n)
    w = 0.38
    m = [r.measured for r in rows]
    s = [r.simulated for r in rows]
    me = np.array([_err(r.measured, r.measured_lo, r.measured_hi) for r in rows]).T
    se = np.array([_err(r.simulated, r.sim_lo, r.sim_hi) for r in rows]).T
    colours = ["#1f77b4" if r.split == "in-sample" else "#d62728" for r in rows]
    ax.bar(x - w / 2, m, w, yerr=me, color="#9a9a9a", capsize=3, label="measured")
    ax.bar(x + w / 2, s, w, yerr=se, color=colours, capsize=3, label="simulated")
    ax.set_xticks(x)
    ax.set_xticklabels([r.config for r in rows], rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center",
                       fontsize=7)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="y", labelsize=7)
    lo = min(v for v in m + s if math.isfinite(v))
    hi = max(v for v in m + s if math.isfinite(v))
    if lo > 0 and (hi - lo) / hi < 0.25:          # zoom like the thesis's figures, but say so
        ax.set_ylim(lo * 0.9, hi * 1.05)
        ax.text(0.01, 0.97, "y axis does not start at 0", transform=ax.transAxes, fontsize=6, va="top")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="#9a9a9a", label="measured"), Patch(color="#1f77b4", label="simulated, in-sample"),
                       Patch(color="#d62728", label="simulated, held-out")], fontsize=6, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return path


def ecdfs(path: Path, title: str, xlabel: str, series: list[tuple[str, np.ndarray, str]], logx: bool = False) -> Path:
    """ECDF overlays: ``series`` = [(label, values, line style)]."""
    fig, ax = plt.subplots(figsize=(5.2, 3.2), dpi=DPI)
    for label, values, style in series:
        v = np.sort(np.asarray(values, float))
        v = v[np.isfinite(v)]
        if v.size == 0:
            continue
        if v.size > 4000:                       # keep the PNG small
            v = v[np.linspace(0, v.size - 1, 4000).astype(int)]
        ax.step(v, np.arange(1, v.size + 1) / v.size, style, where="post", label=label, lw=1.1)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel("ECDF", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return path
