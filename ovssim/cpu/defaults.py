"""Kernel scheduler and softirq defaults the CPU model uses, in one place (seconds).

Sources (Linux 6.x):

- ``kernel/sched/fair.c``: ``sysctl_sched_base_slice`` = 0.75 ms (EEVDF's request
  size; it was ``sysctl_sched_min_granularity`` under CFS), scaled at boot by
  ``get_update_sysctl_factor()``: with the default ``SCHED_TUNABLESCALING_LOG`` the
  factor is ``1 + ilog2(min(online cpus, 8))`` -- 1.5 ms on 2 CPUs, 2.25 ms on 4,
  3 ms on 8 or more.
- ``kernel/softirq.c``: ``__do_softirq`` runs pending softirqs for at most
  ``MAX_SOFTIRQ_TIME`` (2 ms) or ``MAX_SOFTIRQ_RESTART`` (10) rounds, then wakes
  the CPU's ``ksoftirqd``, an ordinary fair-class thread; it stops after one
  round when a thread waits for the CPU (``!need_resched()`` in the restart test).
- ``net/core/dev.c``: ``netdev_max_backlog`` = 1000 packets per CPU;
  ``netdev_budget`` = 300 packets per ``net_rx_action`` round (one softirq round).

The context-switch cost is not a kernel constant: ~2 us is the order lmbench's
``lat_ctx`` reports for two small processes on current x86 (direct cost only; cache
refill after a switch comes on top and is not modelled).
"""
from __future__ import annotations

import math

SCHED_BASE_SLICE = 0.75e-3          # normalized_sysctl_sched_base_slice
SCHED_FACTOR_MAX_CPUS = 8           # get_update_sysctl_factor: cpus = min(num_online_cpus(), 8)
MAX_SOFTIRQ_TIME = 2e-3             # kernel/softirq.c
NETDEV_MAX_BACKLOG = 1000           # net/core/dev.c
NETDEV_BUDGET = 300                 # net/core/dev.c netdev_budget: packets per net_rx_action round
# the scheduler tick: one jiffy at CONFIG_HZ=250 (this machine's kernel config); without HRTICK the fair
# class preempts a CPU-bound task whose slice has run out only here (sched_tick -> task_tick_fair)
TICK = 4e-3
# a core idle this long has stopped its tick (kernel/time/tick-sched.c, NOHZ idle) and, in a KVM guest,
# halted long enough for the host to schedule its vCPU out: one jiffy
IDLE_EXIT_AFTER = TICK
CONTEXT_SWITCH = 2e-6               # direct cost of switching threads on a core (lmbench lat_ctx order)


def base_slice(ncpus: int, normalized: float = SCHED_BASE_SLICE) -> float:
    """The boot-time EEVDF base slice on ``ncpus`` CPUs (fair.c ``update_sysctl``, log scaling)."""
    if ncpus < 1:
        raise ValueError(f"base_slice: need at least one CPU, got {ncpus}")
    return normalized * (1 + int(math.log2(min(ncpus, SCHED_FACTOR_MAX_CPUS))))
