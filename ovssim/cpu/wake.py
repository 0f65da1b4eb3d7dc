"""Where a thread that sleeps in ``poll()`` between its passes runs the next one: its wake-up placement.

ovs-vswitchd's main thread does the userspace ``netdev`` datapath's work for every non-PMD port
(``dpif_netdev_run``, lib/dpif-netdev.c, reads each AF_PACKET port's receive queue in the main loop) and
sleeps in ``poll_block()`` (lib/poll-loop.c) when none has a frame.  It is an ordinary fair-class task,
not pinned to a CPU (only PMD threads get an affinity, ``pmd_thread_main`` ->
``ovs_numa_thread_setaffinity_core``).  A frame queued on one of its sockets (``packet_rcv`` ->
``sock_def_readable``, net/packet/af_packet.c and net/core/sock.c) wakes it with a synchronous wake-up
(``wake_up_interruptible_sync_poll`` -> ``pollwake`` -> ``try_to_wake_up``), in the context of whoever
sent the frame -- a container's sending task, in its ``sendto()``.  ``select_task_rq_fair``
(kernel/sched/fair.c) then picks its CPU: ``wake_affine`` names a target, and ``select_idle_sibling``
keeps the target if it is idle, else the thread's previous CPU if that is idle, else any idle CPU of the
cache domain (``select_idle_cpu``) -- on this machine's 2 cores, the other one.  The waker's CPU is not
idle: the sender is running on it, and a sender that runs to completion (a bulk TCP or UDP sender,
:meth:`~ovssim.cpu.pool.CpuPool.add_sender`) goes on sending after the wake-up.  So a datagram blaster
and ovs-vswitchd run on different cores in parallel, each at its own rate, where a thread pinned to the
sender's core would alternate with it datagram by datagram.

A thread that is still running when the frame arrives (its last pass, or the rest of its main-loop run,
not over) is not woken: it reads the frame in a later pass, on the core it runs on.

:class:`WakePlacement` applies this to work served on a :class:`~ovssim.cpu.pool.CpuPool` by core key
(the pool's softirq mode, hosts that do not schedule threads).  Its home is the core it was keyed to
before (``thread_key``), with which the profiles were fitted: while that core is idle at its wake-ups
it runs there, so a thread that was never contended keeps its core, and with it its wake-up latency and
CPU cost.  It leaves its home only where the model knows the home core busy at the wake-up: work queued
on it past the frame's arrival, or the waking sender running there -- known where the frame is carried
in the sender's own ``sendto()`` (``CpuPool.tx_ctx``, :meth:`~ovssim.workloads.udp.IperfUdp._carry`); a
TCP segment reaches the socket after the stack's delays, which are not CPU work, and tells nothing of
its sender.
"""
from __future__ import annotations

_NEVER = float("-inf")


class WakePlacement:
    """The core of one sleeping-and-polling thread (ovs-vswitchd's) on ``pool``; its home is ``key % cores``.

    :meth:`place` at each frame's arrival gives the core its pass runs on; :meth:`ran` records when the
    thread is busy until (its pass and the rest of its main-loop run).  ``moves`` counts wake-ups that
    put it on another core than its last."""

    __slots__ = ("pool", "home", "core", "until", "moves")

    def __init__(self, pool, key: int):
        self.pool = pool
        self.home = self.core = key % pool.cores
        self.until = _NEVER
        self.moves = 0

    def place(self, t: float, waker: int | None = None) -> int:
        """The core of the pass that reads a frame reaching the thread at ``t``; ``waker``: the core of the
        sending task whose ``sendto()`` queued the frame and which is still running there (None: not known
        -- the frame came after delays that are not CPU work, or from a thread's own pass).

        Asleep, it wakes on its home core if that is idle (the core the calibrated profiles were fitted
        with it on, where they are told nothing of the waker), else on its last core if that is idle
        (``select_idle_sibling``'s ``prev``), else on another idle core (``select_idle_cpu``), else it
        queues on its last core."""
        pool = self.pool
        core = self.core
        if t < self.until or pool.cores == 1:
            return core                  # running: a later pass reads it, where the thread is
        home = self.home
        if not self._busy(home, t, waker):
            c = home
        elif core != home and not self._busy(core, t, waker):
            c = core
        else:
            c = core
            for k in range(pool.cores):
                if k != core and k != home and not self._busy(k, t, waker):
                    c = k
                    break
        if c != core:
            self.core = c
            self.moves += 1
        return c

    def _busy(self, c: int, t: float, waker: int | None) -> bool:
        """Whether core ``c`` is not idle at ``t``: work queued on it past ``t``, or the waker running on it
        -- a run-to-completion sender (:meth:`~ovssim.cpu.pool.CpuPool.add_sender`) goes on sending after
        the wake-up, its next ``sendto()`` at once."""
        return self.pool.free[c] > t or (c == waker and self.pool.sending[c] > 0)

    def ran(self, until: float) -> None:
        """The thread is busy (not in ``poll()``) until ``until``."""
        if until > self.until:
            self.until = until
