"""Seed 002's scheduling probe: how long a busy process waits between two turns on the CPU.

The authors' small C++ program (seed 002, section IV-B, Tables VII and VIII) runs
in a loop and reports the time whenever it runs.  The interval between two
reports is the loop's own work while the process keeps its CPU, and grows by every
stretch it spends off the CPU: on a host, behind another thread's slice; in a
guest, also while the host runs something else on its vCPU's core (two-level
scheduling, :class:`~ovssim.cpu.GuestCpus`).  :func:`scheduling_gaps` runs that
loop on a pool's thread, through the pool's own scheduler (:meth:`CpuPool.run`).
"""
from __future__ import annotations

import numpy as np


def scheduling_gaps(pool, thread, duration: float, loop: float, start: float = 0.0) -> np.ndarray:
    """Intervals (s) between the reports of a CPU-bound loop of ``loop`` seconds per turn on ``thread``.

    ``pool`` is the CPU the thread was placed on (a host's :class:`CpuPool` or a guest's
    :class:`GuestCpus`); the loop runs from ``start`` for ``duration`` seconds of wall time."""
    if not loop > 0 or not duration > 0:
        raise ValueError(f"scheduling_gaps: loop and duration must be > 0, got {loop!r}, {duration!r}")
    gaps = []
    t, end = start, start + duration
    while t < end:
        done = pool.run(thread, t, loop)
        gaps.append(done - t)
        t = done
    return np.asarray(gaps)
