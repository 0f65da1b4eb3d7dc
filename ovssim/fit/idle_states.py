"""A core's idle states from RTTs measured at several spacings: three levels -- hot, shallow, deep.

A periodic ping through a veth pair (and bridges) finds the core in the idle state its gap selects (cpuidle:
the deepest state whose target residency the expected idle covers, drivers/cpuidle/governors), so its RTT (a
spacing's mean or median) over the spacing is a staircase.  :func:`three_levels` splits the sorted spacings into three contiguous runs by
least squares; :func:`idle_levels` turns the split into the profile's ``host.shallow_after``,
``host.idle_exit_after`` (geometric means of the spacings either side of each step) and ``host.shallow_exit``
(the shallow level less the hottest spacing's RTT).  Used on the chain-ping probe
(:mod:`ovssim.validate.cold`) and on the collector's idle ladder (:mod:`ovssim.collect.state`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IdleLevels:
    shallow_after: float   # host.shallow_after (s): idles from here reach the shallow state
    deep_after: float      # host.idle_exit_after (s): idles from here reach the deep one
    shallow_exit: float    # host.shallow_exit (s): the shallow level less the hottest spacing's RTT
    levels_us: tuple[float, float, float]   # mean of the RTTs (us) of the hot, shallow and deep spacings
    spacings: int
    runs: int


def three_levels(y: np.ndarray) -> tuple[int, int]:
    """Split points (i, j) of the sequence ``y`` into three contiguous runs y[:i], y[i:j], y[j:] with the least
    summed squared deviation from each run's mean (every run at least one long)."""
    if len(y) < 3:
        raise ValueError(f"three levels need at least three spacings, got {len(y)}")

    def sse(a: np.ndarray) -> float:
        return float(((a - a.mean()) ** 2).sum())
    best = min((sse(y[:i]) + sse(y[i:j]) + sse(y[j:]), i, j)
               for i in range(1, len(y) - 1) for j in range(i + 1, len(y)))
    return best[1], best[2]


def idle_levels(points, source: str = "the data") -> IdleLevels:
    """:class:`IdleLevels` from ``points``: (spacing in s, its RTT in us, pings behind it) at three or more
    spacings.  Raises ValueError where the RTT does not rise in steps with the spacing."""
    pts = sorted((float(s), float(r), int(n)) for s, r, n in points)
    if len(pts) < 3:
        raise ValueError(f"{source}: RTTs at {len(pts)} spacings; three levels need three")
    gaps, y, counts = (np.array(c, dtype=float) for c in zip(*pts))
    i, j = three_levels(y)
    levels = (float(y[:i].mean()), float(y[i:j].mean()), float(y[j:].mean()))
    if not (levels[0] < levels[1] < levels[2] and y[0] < levels[1]):
        raise ValueError(f"{source}: the RTT does not rise in steps with the spacing "
                         f"({', '.join(f'{v:.1f}' for v in levels)} us)")
    return IdleLevels(shallow_after=float(np.sqrt(gaps[i - 1] * gaps[i])),
                      deep_after=float(np.sqrt(gaps[j - 1] * gaps[j])),
                      shallow_exit=(levels[1] - float(y[0])) * 1e-6, levels_us=levels, spacings=len(gaps),
                      runs=int(counts.sum()))
