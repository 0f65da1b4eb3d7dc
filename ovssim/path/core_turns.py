"""A busy-polling thread that shares its core with other CPU-bound threads: it runs in turns.

An OVS PMD thread never sleeps (``pmd_thread_main``, lib/dpif-netdev.c), so the scheduler sees a
CPU-bound task.  Pinned to a core that other CPU-bound tasks are pinned to as well -- the PMDs of
other ovs-vswitchd instances: without ``other_config:pmd-cpu-mask`` each instance puts its one PMD on
the same core (``dpif-netdev/pmd-rxq-show``: ``core_id 1``, ``isolated : false`` for every private
OVS of the namespace testbed on this 2-core machine) -- the fair class (kernel/sched/fair.c,
EEVDF) gives each of the equal-weight tasks the core in turn.  The running task is preempted only
when ``update_curr`` finds its deadline passed, and without ``HRTICK`` (off by default) a
userspace loop reaches ``update_curr`` at the scheduler tick (``sched_tick`` -> ``task_tick_fair``).
A request of one base slice (1.5 ms on 2 CPUs, :func:`ovssim.cpu.defaults.base_slice`) therefore
runs to the first tick after it: a turn is a whole number of ticks (4 ms at CONFIG_HZ=250), and
between two turns the thread waits while each of the ``others`` runs one.

:class:`CoreTurns` is that schedule, seen from the one thread: when it next holds the core
(:meth:`on_at`) and when work of a given length, started at some time, is done (:meth:`run`:
work that reaches the end of a turn resumes at the next).  A frame reaching the PMD's rx ring
while the PMD is off its core waits for its next turn, a whole number of ticks for a frame sent
just after a tick -- the ping RTTs of 4.0, 8.0, 12 and 16 ms measured through AF_XDP ports while
three OVS testbeds were up (``data/local/2026-11-25-quiet/local-afxdp``).
"""
from __future__ import annotations

import math

from ..cpu.defaults import TICK

EPS = 1e-12         # a picosecond: what is left of a turn below this is float rounding, not time to run


class CoreTurns:
    """One thread's turns on a core shared round robin with ``others`` CPU-bound threads.

    ``turn``: how long each holds the core at a time; ``phase``: where the thread's own turns start
    (its turns are ``[phase + k * cycle, phase + k * cycle + turn)``, ``cycle = (others + 1) * turn``)."""

    def __init__(self, others: int, turn: float, phase: float = 0.0):
        if others < 0 or int(others) != others:
            raise ValueError(f"others must be a whole number >= 0, got {others!r}")
        if not turn > 0:
            raise ValueError(f"turn must be > 0, got {turn!r}")
        self.others = int(others)
        self.turn = float(turn)
        self.cycle = (self.others + 1) * self.turn
        self.phase = float(phase) % self.cycle

    @classmethod
    def of_scheduler(cls, others: int, slice_: float, tick: float = TICK, phase: float = 0.0) -> "CoreTurns":
        """Turns as the fair class gives them to CPU-bound threads: a base slice ``slice_``, enforced at the
        first tick after it (no HRTICK), so a turn is ``ceil(slice_ / tick)`` ticks."""
        return cls(others, max(1, math.ceil(slice_ / tick - 1e-9)) * tick, phase)

    @property
    def share(self) -> float:
        """The thread's share of the core."""
        return 1.0 / (self.others + 1)

    def _where(self, t: float) -> tuple[float, float]:
        """(cycle number, time into it) of ``t``; a time a rounding error short of a cycle's end is its end."""
        k, x = divmod(t - self.phase, self.cycle)
        if x > self.cycle - EPS:
            return k + 1, 0.0
        return k, x

    def on_at(self, t: float) -> float:
        """The first time at or after ``t`` the thread holds the core."""
        if self.others == 0:
            return t
        k, x = self._where(t)
        return t if x < self.turn - EPS else self.phase + (k + 1) * self.cycle

    def run(self, t: float, work: float) -> float:
        """When ``work`` seconds of the thread's CPU, started at ``t``, are done."""
        if self.others == 0 or work <= 0.0:
            return t + work
        t = self.on_at(t)
        k, x = self._where(t)
        left = self.turn - x                  # what remains of the current turn
        if work <= left + EPS:
            return t + work
        work -= left
        full, rest = divmod(work, self.turn)
        base = self.phase + (k + 1) * self.cycle      # the next turn's start
        if rest < EPS:
            return base + (full - 1) * self.cycle + self.turn
        return base + full * self.cycle + rest
