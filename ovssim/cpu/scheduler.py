"""The fair class's behaviour on one core, computed analytically (no events).

Modelled from kernel/sched/fair.c (Linux 6.x, EEVDF):

- A woken thread is placed with its lag (``place_entity``), so a thread that
  slept is eligible at once -- but the running thread keeps the CPU until its
  current request (one base slice) is served: ``RUN_TO_PARITY`` /
  ``protect_slice`` in ``pick_eevdf``.  A thread waking on a core where a
  CPU-bound thread runs therefore waits for the rest of that thread's slice.
  CPU-bound threads run back-to-back slices from the moment the core's other
  work ended, so the wait is where the wake-up falls in that slice.
- A thread whose own work runs past its slice is preempted at the slice's end
  (``update_curr`` -> ``resched_curr`` when its deadline passes) and waits while
  each of the ``n`` CPU-bound threads runs a slice: sharing a core with one
  CPU-bound thread, a CPU-bound thread gets half of it over a slice.
- Every switch between threads costs ``pool.context_switch`` of CPU.

Softirq work is not a thread: it preempts threads (``irq_exit`` or
``local_bh_enable`` -> ``__do_softirq``).  ``__do_softirq`` (kernel/softirq.c)
restarts while work is pending only ``if (time_before(jiffies, end) &&
!need_resched() && --max_restart)``: after 2 ms (``MAX_SOFTIRQ_TIME``), 10
rounds, or -- when a thread waits for the core -- after the first round that
leaves work pending (``net_rx_action`` stops at ``netdev_budget`` packets), it
wakes ``ksoftirqd``, a fair-class thread that drains the rest beside the core's
runnable threads (:func:`ksoftirqd_stretch`) and takes its share of the core
from them while it does (:func:`fair_run` counts it).
"""
from __future__ import annotations

import math


def fair_run(pool, thread, t: float, work: float) -> tuple[float, float, float]:
    """``thread`` gets ``work`` seconds of CPU from ``t`` on its contended core: (start, done, cpu charged)."""
    core = thread.core
    S = pool.slice
    free_at = pool.free[core]
    burst_end = 0.0                  # when the last CPU-bound thread running at t stops (bursty load)
    anchor = free_at                 # CPU-bound threads run back-to-back slices from here
    n = 0
    for h in pool.hog_threads[core]:
        if h is not thread:
            end = h.active_until(t)
            if end > t:
                n += 1
                burst_end = end if end > burst_end else burst_end
                if h.duty is not None and end - h.duty[1] > anchor:
                    anchor = end - h.duty[1]          # its burst began after the core's last work
    ks = pool.ksoftirqd_free[core]
    if ks > t:
        n += 1                       # ksoftirqd drains deferred softirq work: one more fair thread
        burst_end = ks if ks > burst_end else burst_end
    start = t if t > free_at else free_at
    woke = t > thread.free           # it slept (no work left) before t: a wake-up, not a continued run
    if not woke and thread.free > start:
        start = thread.free              # its own earlier work first
    if woke and n > 0 and t >= free_at:
        # a CPU-bound thread holds the core; it keeps it to the end of its slice (RUN_TO_PARITY)
        k = math.ceil((t - anchor) / S)
        start = anchor + k * S
        if burst_end < start:
            start = burst_end            # ... or to the end of its burst
    switch = pool.context_switch if pool.last[core] is not None and pool.last[core] is not thread else 0.0
    used = 0.0 if woke else thread.used
    if n > 0:
        crossings = int((used + work) // S)
        thread.used = used + work - crossings * S
    else:
        # alone on the core its requests renew slice after slice (no one to yield to): only the part
        # of the current slice carries over, not a debt of slices run while nothing contended
        crossings = 0
        thread.used = (used + work) % S
    cpu = work + switch + crossings * pool.context_switch
    wait = crossings * n * S
    if burst_end < wait + start + cpu:
        # the CPU-bound threads' bursts end before their slices would: they give the core back then
        wait = max(burst_end - start - cpu, 0.0) if burst_end > t else 0.0
    done = start + cpu + wait
    # softirq preempts threads: the core's FIFO (which softirq work queues on) takes only this thread's CPU
    # time, not its wait for other threads' slices
    pool.free[core] = (t if t > free_at else free_at) + cpu
    return start, done, cpu


def ksoftirqd_stretch(work: float, n: int) -> float:
    """Wall time for ``work`` of softirq run by ksoftirqd beside ``n`` CPU-bound threads.

    ksoftirqd is one more fair-class thread: per round of ``(n + 1)`` slices it
    runs one, so its backlog drains at ``1 / (n + 1)`` of the core."""
    return work * (n + 1)
