"""Figures for ``ovssim run --plot`` and ``ovssim sweep --plot`` (matplotlib, Agg, written atomically).

A run's figure has one bar panel per metric kind (mean with its 95 % CI per workload) and one ECDF per
sample series pooled over replications (RTTs, delays, transaction latencies); a sweep's figure has one
panel per workload and metric, the points side by side with their CIs.  A panel whose values span more
than 20x is drawn on a log scale.
"""
from __future__ import annotations

import math

import numpy as np

# sample series recorded in seconds (the rest are in their own unit, e.g. rr_latency in ms)
SECONDS_TO_MS = {"rtt": 1e3, "one_way_delay": 1e3}
MAIN_METRICS = ("throughput", "rtt_mean", "rtt_p99", "jitter", "loss", "transactions", "latency")


def _grid(n: int):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = min(3, max(1, n))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat


def _log_if_wide(ax, values, axis: str = "y") -> None:
    v = [x for x in values if x is not None and math.isfinite(x) and x > 0]
    if len(v) >= 2 and max(v) / min(v) > 20:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def _bars(ax, labels, means, lows, highs, title: str, unit: str) -> None:
    x = np.arange(len(labels))
    means = np.asarray(means, float)
    err = np.vstack([np.clip(means - np.asarray(lows, float), 0, None),
                     np.clip(np.asarray(highs, float) - means, 0, None)])
    err = np.where(np.isfinite(err), err, 0.0)
    ax.bar(x, means, yerr=err, capsize=4)
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(unit)
    _log_if_wide(ax, list(means))


def run_figure(summary, samples: dict, path, *, overwrite: bool = True):
    """Bars per metric kind (workloads side by side) and ECDFs of the sample series; returns the path."""
    from .atomic import save_figure
    rows = summary[(summary["workload"] != "system") & summary["metric"].isin(MAIN_METRICS)]
    metrics = [m for m in MAIN_METRICS if m in set(rows["metric"])]
    series = [k for k, v in sorted(samples.items()) if len(v)]
    fig, flat = _grid(max(1, len(metrics) + len(series)))
    for ax, metric in zip(flat, metrics):
        r = rows[rows["metric"] == metric]
        _bars(ax, list(r["workload"]), r["mean"], r["ci95_low"], r["ci95_high"],
              f"{metric} (95 % CI over replications)", str(r["unit"].iloc[0]))
    for ax, name in zip(flat[len(metrics):], series):
        scale = SECONDS_TO_MS.get(name.rpartition(":")[2], 1.0)
        v = np.sort(np.asarray(samples[name], float)) * scale
        ax.step(v, np.arange(1, v.size + 1) / v.size, where="post")
        _log_if_wide(ax, [v[0], v[-1]], axis="x")
        ax.set_title(f"ECDF of {name} ({v.size} samples, all replications)", fontsize=9)
        ax.set_xlabel("ms" if scale != 1.0 or name.endswith("latency") else "")
        ax.set_ylabel("P(X <= x)")
    fig.tight_layout()
    out = save_figure(fig, path, overwrite=overwrite)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return out


def sweep_figure(summary, path, *, overwrite: bool = True):
    """One panel per workload and metric: every point's mean with its 95 % CI; returns the path."""
    from .atomic import save_figure
    s = summary[(summary["workload"] != "system") & summary["metric"].isin(MAIN_METRICS)]
    panels = list(dict.fromkeys(zip(s["workload"], s["metric"])))
    fig, flat = _grid(max(1, len(panels)))
    for ax, (wl, metric) in zip(flat, panels):
        r = s[(s["workload"] == wl) & (s["metric"] == metric)]
        _bars(ax, list(r["label"]), r["mean"], r["ci95_low"], r["ci95_high"], f"{wl}: {metric}",
              str(r["unit"].iloc[0]))
    fig.tight_layout()
    out = save_figure(fig, path, overwrite=overwrite)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return out
