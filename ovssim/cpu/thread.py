"""A schedulable thread: what a core's run queue holds.

Kinds (``THREAD_KINDS``) name who the thread is, so run-queue delay can be
reported per kind: application threads (iperf, netperf, ping), ``ksoftirqd``,
backend threads (``vhost``, ``netback``), OVS threads (``ovs-handler``,
``ovs-revalidator``, ``ovs-vswitchd`` -- the netdev datapath's main thread --,
``pmd``), ``vcpu`` (a guest vCPU as the host sees it) and ``background`` (a
CPU-bound load thread, ``busy``: always runnable).
"""
from __future__ import annotations

THREAD_KINDS = ("app", "ksoftirqd", "vhost", "netback", "ovs-handler", "ovs-revalidator", "ovs-vswitchd",
                "pmd", "vcpu", "background")


class Thread:
    """One thread: its kind, the cores it may run on (``taskset``; None = any), whether it never sleeps.

    The pool sets ``core`` (and ``key``, the core key of the thread's own keyed work) when the thread is
    placed and keeps its accounting
    here: ``free`` (when its last work completes), ``ran`` (CPU seconds run),
    ``waited`` / ``wakeups`` (run-queue delay: time from wake-up to running).
    """

    __slots__ = ("name", "kind", "affinity", "busy", "duty", "core", "key", "free", "ran", "waited", "wakeups",
                 "used")

    def __init__(self, name: str, kind: str = "app", *, affinity=None, busy: bool = False, duty=None):
        if kind not in THREAD_KINDS:
            raise ValueError(f"thread {name}: unknown kind {kind!r}; kinds are {', '.join(THREAD_KINDS)}")
        self.name = name
        self.kind = kind
        self.affinity = None if affinity is None else tuple(sorted(set(affinity)))
        if self.affinity == ():
            raise ValueError(f"thread {name}: empty affinity; give at least one core (taskset -c LIST)")
        self.busy = busy
        # a CPU-bound thread that runs in bursts: (period, on, phase) -- busy for ``on`` seconds from
        # ``phase`` in every ``period`` (a dom0 / housekeeping job); None: always busy
        if duty is not None and not (busy and 0 < duty[1] <= duty[0]):
            raise ValueError(f"thread {name}: duty needs busy=True and 0 < on <= period, got {duty!r}")
        self.duty = duty
        self.core: int | None = None
        self.key: int | None = None     # the core key of its own softirq work (its connection's), if any
        self.free = 0.0
        self.ran = 0.0
        self.waited = 0.0
        self.wakeups = 0
        self.used = 0.0             # CPU run in its current slice (EEVDF: until its deadline)

    def active_until(self, t: float) -> float:
        """When this CPU-bound thread's current burst ends (t itself if it is idle at t; inf: always busy)."""
        if self.duty is None:
            return float("inf")
        period, on, phase = self.duty
        k, into = divmod(t - phase, period)
        return t - into + on if into < on else t

    def __repr__(self):
        return f"Thread({self.name!r}, {self.kind!r}, core={self.core})"
