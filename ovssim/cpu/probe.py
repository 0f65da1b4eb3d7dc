"""Seed 002's scheduling probe: how long a busy process waits between two turns on the CPU.

The authors' small C++ program (seed 002, section IV-B, Tables VII and VIII) runs
in a loop and reports the time whenever it runs.  The interval between two
reports is the loop's own work while the process keeps its CPU, and grows by every
stretch it spends off the CPU: on a host, behind another thread's slice; in a
guest, also while the host runs something else on its vCPU's core (two-level
scheduling, :class:`~ovssim.cpu.GuestCpus`).  :func:`scheduling_gaps` runs such
loops on pools' threads, through the pools' own scheduler (:meth:`CpuPool.run`).
"""
from __future__ import annotations

import heapq

import numpy as np


def scheduling_gaps(loops, duration: float, loop: float, start: float = 0.0) -> list[np.ndarray]:
    """Report intervals (s) of CPU-bound loops of ``loop`` seconds per turn, one per ``(pool, thread)``.

    ``pool`` is the CPU the thread was placed on (a host's :class:`CpuPool` or a guest's
    :class:`GuestCpus`).  The loops run side by side from ``start`` for ``duration`` seconds of wall
    time, each turn computed in time order (the pools compute from arrival times)."""
    if not loop > 0 or not duration > 0:
        raise ValueError(f"scheduling_gaps: loop and duration must be > 0, got {loop!r}, {duration!r}")
    loops = list(loops)
    gaps: list[list[float]] = [[] for _ in loops]
    due = [(start, i) for i in range(len(loops))]
    end = start + duration
    while due:
        t, i = heapq.heappop(due)
        pool, thread = loops[i]
        done = pool.run(thread, t, loop)
        gaps[i].append(done - t)
        if done < end:
            heapq.heappush(due, (done, i))
    return [np.asarray(g) for g in gaps]
