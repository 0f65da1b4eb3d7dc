"""A host's CPU cores: softirq work served analytically, threads scheduled only where they contend.

Per-packet work -- the datapath's fast path, a veth hop's softirq, vhost /
netback copying, the traffic tools' own send/receive -- takes service time
from one of the host's cores.  Work pinned to a core (a flow's packets, as
RSS/RPS pin them; a backend thread) is served FIFO on that core; unpinned work
goes to the earliest-free core (the Kiefer-Wolfowitz recursion of a FIFO G/G/c
queue) -- of the cores idle by its arrival, one no run-to-completion sender holds
(:meth:`CpuPool.add_sender`).  Completion times are computed directly from arrival times: no SimPy
event is spent, the caller learns when its work is done and schedules from
there.

A core that has been idle for ``idle_exit_after`` or longer starts its next work ``idle_exit`` late (a
sampler: each exit draws its own): it comes out of its idle state first.  Measured on this machine (a
2-vCPU KVM guest whose cpuidle driver is ``haltpoll`` with ``guest_halt_poll_ns`` = 0, so an idle vCPU
halts at once and the host takes the core): pings over one veth pair, everything on the sender's core in
softirq, took 4 us when sent every 0.1-0.3 ms, 12 us every 1 ms, 17 us every 3 ms and 55-57 us every
10-30 ms, min 29 and max 89 us with 10 us mean deviation at 10 ms (``ping -i``, 28 Nov); the collector's
spaced-ping benchmark records the step per campaign (:mod:`ovssim.collect.state`).  Work that keeps a
core busy -- a bulk flow, back-to-back requests -- never pays it.  It is latency, not CPU work: ``busy``
does not count it.  The work that follows runs slower at first (``cold_factor`` times, for its first
``cold_work`` seconds as a warm core would run them): the idle state lost the core's caches and TLBs, so a
packet's path after a long idle costs more per element than the same path on a busy core.  Measured on this
machine (``validation/chain_ping/probe.sh``, data/local/2026-11-28-chainping): each bridge + veth hop added
1.2 us per direction to pings 0.2 ms apart and 3.8 us to pings 10 ms apart.  That part is CPU work: ``busy``
counts it.

Idle states, as cpuidle has them (drivers/cpuidle: each state has a target residency and an exit latency,
and the governor, menu.c or teo.c, picks the deepest state whose residency the expected idle time covers):
besides the deep state above, an optional shallow one (``shallow_after`` up to ``idle_exit_after``) with its
own ``shallow_exit`` latency and ``shallow_cold_factor``.  A periodic load, whose next event the governor
predicts well, finds the state its gap selects.  Measured on this machine (chain-ping probe at 13 spacings,
data/local/2026-11-28-chainping/ping_gaps.txt): the 1-bridge ping's RTT steps from 7-8 us (gaps up to
0.5 ms) to 10-14 us (1-3 ms), 15-25 us (4-8 ms) and 58-72 us (10 ms and more).

``idle_busy``: CPU time a core spends on each of its ways into and out of idle that work arriving
meanwhile does not wait for -- the first ``idle_busy`` of every idle gap counts as busy (``busy``), and
nothing is delayed.  A user-mode-Linux instance (issue 22) accounts that much per wake-up: its one CPU is
a host process, and a wake-up from idle is a host signal into it (arch/um/os-Linux/signal.c), the switch
through ptrace to the woken UML process and back (arch/um/os-Linux/skas/process.c ``userspace``) and the
idle loop's host sleep again (``um_idle_sleep``, arch/um/kernel/process.c).  Measured inside UML by
:mod:`ovssim.collect.uml.cpucost` (a process woken by its timer doing nothing else): 0.04 ms a wake-up every
1 ms, 0.06-0.08 ms every 2 ms, 0.06-0.25 ms every 10 ms -- one value stands for the gaps of the load at hand;
each of those wake-ups includes the process's own clock_nanosleep(), a system call that ``app.syscall``
counts apart (below), so ovssim/validate/uml.py takes the 1 ms figure less that run's getppid() (20 us).
That packets do not wait for it is inferred, not measured: charged as blocking work after each wake-up
(0.1-0.2 ms) it put FQ-CoDel's new-flow ping at 0.73-0.97 ms against 0.54 measured.  0 (the default)
everywhere else.

:meth:`CpuPool.account`: the same kind of busy time per system call of an application (profile
``app.syscall``, charged by the tools that count their calls: :mod:`ovssim.workloads.iperf_tcp`,
:mod:`~ovssim.workloads.ping`, :mod:`~ovssim.workloads.udp`).  In a UML instance each guest system call is a
ptrace round trip between the process's host process and the UML kernel's (PTRACE_SYSEMU stop, wait4,
the registers read and written, the process continued: arch/um/os-Linux/skas/process.c ``userspace``):
14-51 us of host CPU for a getppid() that costs 0.17 us natively (:mod:`ovssim.collect.uml.cpucost`).  It
delays no packet: the kernel takes its interrupts and runs its softirqs meanwhile -- 200 pings between the
instance's namespaces beside a getppid() loop took the same time as alone (data/uml/2026-11-28/uml-cpucost,
``contend``).  0 (the default) everywhere else.

``backlog_limit`` bounds the work waiting for a core, like the per-CPU input
queue ``net.core.netdev_max_backlog`` (default 1000, net/core/dev.c); work
arriving to a full backlog is refused (the packet is dropped) and counted.

Threads (:class:`~ovssim.cpu.thread.Thread`) are placed on cores
(:meth:`CpuPool.add_thread`) and run their work with :meth:`CpuPool.run`.  While
every core holds at most one thread and none is CPU-bound, ``run`` is exactly
``serve`` on the thread's core: the scheduler costs nothing where nothing
contends.  Where threads share a core it applies the fair class's behaviour
(kernel/sched/fair.c, EEVDF) analytically, see :mod:`ovssim.cpu.scheduler`.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

from .defaults import (CONTEXT_SWITCH, IDLE_EXIT_AFTER, MAX_SOFTIRQ_TIME, NETDEV_BUDGET, NETDEV_MAX_BACKLOG,
                       base_slice)
from .keys import pinned_key
from .scheduler import fair_run, ksoftirqd_stretch
from .thread import Thread

_INF = float("inf")


class CpuPool:
    """``cores`` cores; ``serve(t, work, key)`` returns when the work is done (or None if refused).

    ``key`` pins work to core ``key % cores`` (a flow's softirq work by its RSS
    hash, a backend thread by its identity); without a key the earliest-free core
    takes it.  Each core has its own backlog bound, as ``netdev_max_backlog`` is
    per CPU.  ``slice`` is the scheduler's base slice (default: fair.c's for this
    many CPUs), ``context_switch`` the cost of switching threads on a core.
    """

    def __init__(self, env, cores: int = 1, name: str = "cpu", *,
                 backlog_limit: int | None = NETDEV_MAX_BACKLOG, speed: float = 1.0,
                 slice: float | None = None, context_switch: float = CONTEXT_SWITCH,
                 idle_exit=None, idle_exit_after: float = IDLE_EXIT_AFTER, cold_factor: float = 1.0,
                 cold_work: float = 0.0, shallow_exit=None, shallow_after: float | None = None,
                 shallow_cold_factor: float = 1.0, idle_busy: float = 0.0):
        if cores < 1:
            raise ValueError(f"{name}: a host needs at least one core, got {cores}")
        if not speed > 0:
            raise ValueError(f"{name}: speed must be > 0, got {speed}")
        if not idle_exit_after > 0.0:
            raise ValueError(f"{name}: idle_exit_after must be > 0 seconds, got {idle_exit_after!r}")
        # a long-idle core's way out of its idle state (latency): a Sampler (.next()), or None for none
        self.idle_exit = idle_exit if idle_exit is not None and not idle_exit.const == 0.0 else None
        self.idle_exit_after = idle_exit_after
        self.idle_exits = 0
        if not cold_factor >= 1.0 or not shallow_cold_factor >= 1.0 or not cold_work >= 0.0:
            raise ValueError(f"{name}: cold_factor and shallow_cold_factor must be >= 1 and cold_work >= 0 "
                             f"seconds, got {cold_factor!r}, {shallow_cold_factor!r} and {cold_work!r}")
        # a shallower idle state, entered for idles of shallow_after up to idle_exit_after: its own exit
        # latency and cold start (None: every idle shorter than idle_exit_after costs nothing)
        if shallow_after is not None and not 0.0 < shallow_after < idle_exit_after:
            raise ValueError(f"{name}: shallow_after must be > 0 and below idle_exit_after "
                             f"({idle_exit_after!r} s), got {shallow_after!r}")
        self.shallow_after = _INF if shallow_after is None else shallow_after
        self.shallow_exit = shallow_exit if shallow_exit is not None and not shallow_exit.const == 0.0 else None
        self.shallow_exits = 0
        # after an idle exit the core's first cold_work seconds of work run cold_factor (deep) or
        # shallow_cold_factor times slower
        self.cold_factor = cold_factor
        self.shallow_cold_factor = shallow_cold_factor
        self.cold_work = cold_work if max(cold_factor, shallow_cold_factor) > 1.0 else 0.0
        self._cold_left = [0.0] * cores   # per core, the (warm) work still to run cold
        self._cold_slow = [cold_factor] * cores   # per core, the slowdown of that cold start
        if not idle_busy >= 0.0:
            raise ValueError(f"{name}: idle_busy must be >= 0 seconds, got {idle_busy!r}")
        self.idle_busy = idle_busy        # busy time per idle gap that delays nothing (see the module's text)
        self.idle_busy_time = 0.0         # its sum over the run, counted in busy
        self.call_busy_time = 0.0         # busy time account() added (system calls' host share), counted in busy
        self.served_start = 0.0           # when the work serve() accepted last started
        self.env = env
        self.name = name
        self.cores = cores
        self.speed = speed
        self.backlog_limit = backlog_limit
        # reservations a core holds before serve() counts its backlog (and forgets what started
        # before now): below the bound nothing can be refused; at most 64, which bounds the list
        self._count_at = 64 if backlog_limit is None or backlog_limit > 64 else backlog_limit
        self.free = [0.0] * cores
        # whose work ends at free[core]: its key (softirq / keyed work) or its Thread (:meth:`_held`)
        self._free_by: list = [None] * cores
        self._keyed: dict[int, int] = {}  # the core each key's keyed work last ran on (:meth:`run`)
        self._starts: list[list[float]] = [[] for _ in range(cores)]   # per core, sorted
        self.busy = [0.0] * cores
        self.jobs = 0
        self.refused = 0
        self.slice = base_slice(cores) if slice is None else slice
        self.context_switch = context_switch
        self.threads: list[Thread] = []
        self.on_core: list[list[Thread]] = [[] for _ in range(cores)]
        self.hogs = [0] * cores           # CPU-bound (always runnable) threads per core
        self.hog_threads: list[list[Thread]] = [[] for _ in range(cores)]
        self.last = [None] * cores        # the thread that ran last on each core
        self.contended = False            # some core holds a CPU-bound thread or two threads
        # the tools' own processes and backend threads as schedulable threads (app_thread); off, they
        # are keyed work, as the calibrated profiles were fitted with
        self.schedule_threads = False
        self.ksoftirqd_free = [0.0] * cores   # when each core's ksoftirqd has drained what it was handed
        self.deferred = 0                 # softirq work items run by ksoftirqd (behind threads)
        self.migrations = 0               # threads moved to an idle core at wake-up
        self.rtc_senders: list[list] = [[] for _ in range(cores)]   # run-to-completion senders per core (turns)
        self.sending = [0] * cores        # run-to-completion senders per core (any host): see serve()
        # work booked ahead of env.now (a lookahead caller): (start, done, arrival) per core, by start,
        # so that work arriving earlier but booked later can use the idle time before it (_fit)
        self._ahead: list[list[tuple]] = [[] for _ in range(cores)]
        self._free_now = [0.0] * cores    # when each core finishes the work booked at its arrival time
        self._ahead_arrival = [-1.0] * cores    # latest arrival among each core's booked-ahead work (or above)
        self.senders = 0                  # their sum (serve asks on every unkeyed call)
        # connection keys pinned elsewhere (pin(): a tool under taskset), and the keys their work takes instead
        self.key_core: dict[int, int] = {}
        # a datagram being carried through the softirq work of its sending task (IperfUdp._carry): [key,
        # done] while open -- serve() raises done for the work of that key (_carried) -- else None
        self.tx_ctx = None

    # --- softirq / keyed work -------------------------------------------------------------
    def pin(self, key: int, affinity) -> int:
        """Keep the work of connection ``key`` on ``affinity``'s cores (a traffic tool under ``taskset -c``:
        its sends' softirq work runs in its own context, and what its peer's packets cost is processed
        where it reads them): the key that work takes from now on (:func:`~ovssim.cpu.keys.pinned_key`).
        A connection's path work has one core on a host (:func:`~ovssim.cpu.keys.conn_key`): where both of
        its ends are pinned here, the first (the client, which connects first) places it."""
        if affinity is None:
            return key
        pinned = pinned_key(key, self._allowed(affinity, f"connection {key}"), self.cores)
        if pinned != key and key not in self.key_core:
            self.key_core[key] = pinned
        return pinned

    def core_of(self, key: int) -> int:
        """The core that keyed work of ``key`` runs on."""
        if self.key_core:
            key = self.key_core.get(key, key)
        return key % self.cores

    def serve(self, t: float, work: float, key: int | None = None, thread: Thread | None = None,
              arrival: float | None = None) -> float | None:
        """Run ``work`` seconds of CPU arriving at ``t``; return completion time, or None if refused.

        ``thread``: the work is that thread's (from :meth:`run`), not softirq work.  ``arrival``: when
        the work arrived, if it cannot start before a later ``t`` (a sleeping thread's wake-up): work
        arriving after it still queues behind it."""
        if self.speed != 1.0:
            work = work / self.speed
        free = self.free
        if key is not None:
            if self.key_core:
                key = self.key_core.get(key, key)
            core = key % self.cores
        elif self.cores == 1:
            core = 0
        else:
            core = free.index(min(free))
            if free[core] <= t and self.senders:
                # several cores idle by t: the scheduler wakes the work on one that no sending task keeps
                # busy (select_idle_sibling looks for an idle CPU).  A run-to-completion sender's core
                # looks free between its sends, and work booked there ahead of time (lookahead) would
                # hold the sender's next send back until it, which no kernel does.
                for c, f in enumerate(free):
                    if f <= t and not self.sending[c]:
                        core = c
                        break
        free_at = free[core]
        now = self.env._now
        ahead = self._ahead[core]
        early = False                 # runs before work booked for later arrivals (_fit)
        arr = t if arrival is None else arrival
        cold = None                   # the core's cold-start budget after this work, once it is accepted
        if t >= free_at:
            start = t
            idle = t - free_at
            if self.idle_busy and idle > 0.0:
                # the way out of this idle gap and back into it: busy, but delaying no work
                extra = min(self.idle_busy, idle)
                self.busy[core] += extra
                self.idle_busy_time += extra
            left = self._cold_left[core]
            slow = self._cold_slow[core]
            if idle >= self.idle_exit_after:          # the deep state: a long idle
                if self.idle_exit is not None:
                    start = t + self.idle_exit.next()     # the core comes out of its idle state first
                    self.idle_exits += 1
                slow = self.cold_factor
                left = self.cold_work if slow > 1.0 else 0.0
            elif idle >= self.shallow_after:
                if self.shallow_exit is not None:
                    start = t + self.shallow_exit.next()
                    self.shallow_exits += 1
                slow = self.shallow_cold_factor
                left = self.cold_work if slow > 1.0 else 0.0
            if left:
                work, cold = self._cold(work, left, slow)
                cold = (cold, slow)
            done = start + work
        elif ahead and not self.contended and arr < self._ahead_arrival[core]:
            # some booked-ahead work arrived after this: maybe a gap before it (else all arrived
            # before this work, which queues behind them, below).  Such work does not take the
            # core's cold start: it ran in a gap that the work booked before it had already warmed.
            start, done, early = self._fit(core, t, work, now, arr)
        else:
            start = free_at
            if self._cold_left[core]:
                slow = self._cold_slow[core]
                work, cold = self._cold(work, self._cold_left[core], slow)
                cold = (cold, slow)
            done = start + work
        starts = self._starts[core]
        waiting = 0
        if (start > t or (self.contended and self.ksoftirqd_free[core] > t)) and (
                self.contended or len(starts) >= self._count_at):
            # Work waiting at time t = work reserved to start after t.  Callers may run
            # ahead of env.now (lookahead) and out of time order, so count by time, not
            # by order of calls; what started before env.now can never be waiting again.
            # Counted only where it can matter: fewer reservations than the bound leave
            # fewer waiting (and the contended branch below needs the count).
            if starts and starts[0] <= now:
                del starts[:bisect_right(starts, now)]
            waiting = len(starts) - bisect_right(starts, t)
            lim = self.backlog_limit
            if lim is not None and waiting >= lim:
                self.refused += 1
                return None
        if cold is not None:
            self._cold_left[core], self._cold_slow[core] = cold
        self.served_start = start
        if self.contended and thread is None:
            n = self._runnable(core, t, thread)
            ks = self.ksoftirqd_free[core]
            if n and (ks > t or waiting >= NETDEV_BUDGET or start - t > MAX_SOFTIRQ_TIME):
                # __do_softirq (kernel/softirq.c) stops with work pending once a thread waits for the
                # core (need_resched) after a net_rx_action round (netdev_budget) or after 2 ms: the
                # rest is ksoftirqd's, a fair thread beside the core's n runnable threads
                kstart = max(t, ks, start)        # behind the backlog already queued
                done = self.ksoftirqd_free[core] = kstart + ksoftirqd_stretch(work, n)
                if kstart > t:
                    insort(starts, kstart)
                self.deferred += 1
                self.busy[core] += work
                self.jobs += 1
                if self.tx_ctx is not None:
                    self._carried(key, done)
                return done
        if start > t:
            insort(starts, start)
        if done > free_at:
            free[core] = done
            if thread is None:
                self._free_by[core] = key
                if key is not None:
                    self._keyed[key] = core
            else:
                self._free_by[core] = thread
        if arr > now:                 # booked ahead: later calls may arrive before it
            if ahead and ahead[0][1] <= now:
                self._prune(ahead, now)
            if not ahead:
                self._ahead_arrival[core] = -1.0
            if arr > self._ahead_arrival[core]:
                self._ahead_arrival[core] = arr
            if early:
                insort(ahead, (start, done, arr))
            else:
                ahead.append((start, done, arr))
        elif done > self._free_now[core]:
            self._free_now[core] = done
        self.busy[core] += work
        self.jobs += 1
        if self.tx_ctx is not None and thread is None:
            self._carried(key, done)
        return done

    @staticmethod
    def _cold(work: float, left: float, factor: float) -> tuple[float, float]:
        """``work`` as it runs on a core with ``left`` of its cold start to go, and what is left after it:
        that much of the work runs ``factor`` times slower (the caches and TLBs the idle state lost refill as
        the work runs)."""
        slow = work if work < left else left
        return work + slow * (factor - 1.0), left - slow

    def _carried(self, key: int | None, done: float) -> None:
        """Softirq work of the sending task's flow (``key``) while a datagram is carried: its sendto() ends
        no earlier than ``done`` (:attr:`tx_ctx`, IperfUdp._carry)."""
        ctx = self.tx_ctx
        if key == ctx[0] and done > ctx[1]:
            ctx[1] = done

    @staticmethod
    def _prune(ahead: list, now: float) -> None:
        """Drop the booked-ahead work that is done by ``now``: booked work never overlaps, so of what
        started by ``now`` only the last can still be running."""
        k = bisect_right(ahead, (now, _INF))
        if k and ahead[k - 1][1] > now:
            k -= 1
        del ahead[:k]

    def _fit(self, core: int, t: float, work: float, now: float, arrival: float) -> tuple[float, float, bool]:
        """Start and completion of work arriving at ``arrival``, ready at ``t``, on a core holding work
        booked ahead for later arrivals (a lookahead element reserves the core when it runs, which can
        be before the event that brings this earlier work), and whether it ran before some of that
        work.  A core serves its work in arrival order: this work waits for what arrived by then, not
        for what arrives after it -- it runs in the first idle gap between the work already booked
        that it fits whole (the later work keeps the times already handed out, and no work is split
        around another), else after all of it.  First fit, not the first gap only: a sending task's
        next sendto() arrives long before the receiver's recvmsg() calls booked for the datagrams it
        sent, and a gap too short for it must not put it behind every one of them."""
        ahead = self._ahead[core]
        if ahead[0][1] <= now:
            self._prune(ahead, now)
        cur = self._free_now[core]
        if cur < t:
            cur = t
        # the core's booked work never overlaps, so sorted by start it is sorted by end too: what arrived
        # by then and ends last is the last such entry, and only the work running at t and after matters
        lo = bisect_left(ahead, (t,))
        lo = lo - 1 if lo else 0
        j = len(ahead) - 1
        while j >= lo and ahead[j][2] > arrival:
            j -= 1
        if j >= lo and ahead[j][1] > cur:
            cur = ahead[j][1]          # served after what arrived by then
        # then the first idle gap between the later arrivals' work that this work fits whole
        for k in range(j + 1 if j >= lo else lo, len(ahead)):
            s, d, _a = ahead[k]
            if d <= cur:
                continue
            if s >= cur + work:
                return cur, cur + work, True
            cur = d
        free_at = self.free[core]
        start = cur if cur > free_at else free_at
        return start, start + work, False

    def add_sender(self, core: int) -> None:
        """A sending task that runs its packets to completion on ``core`` (a container's TCP or UDP sender):
        unkeyed work avoids that core while another is idle (:meth:`serve`)."""
        self.sending[core] += 1
        self.senders += 1

    def remove_sender(self, core: int) -> None:
        """The sending task left ``core`` (it joined another task's thread)."""
        self.sending[core] -= 1
        self.senders -= 1

    def _runnable(self, core: int, t: float, thread=None) -> int:
        """Threads on ``core`` other than ``thread`` that are runnable at ``t`` (need the core)."""
        return sum(1 for th in self.on_core[core] if th is not thread and
                   (th.active_until(t) > t if th.busy else th.free > t))

    # --- threads --------------------------------------------------------------------------
    def add_thread(self, thread: Thread, key: int | None = None) -> Thread:
        """Place ``thread`` on a core: within its affinity, ``key % cores`` if that core holds no
        thread yet (where its flow's softirq runs), else the core with fewest threads (the idlest,
        as select_task_rq_fair's wake-up balancing picks)."""
        allowed = self._allowed(thread.affinity, f"thread {thread.name}")
        if key is not None and key % self.cores in allowed and not self.on_core[key % self.cores]:
            core = key % self.cores
        else:
            # a CPU-bound thread weighs twice (counted in hogs and in on_core): its load is a whole core
            core = min(allowed, key=lambda c: (self.hogs[c] + len(self.on_core[c]), c))
        thread.core = core
        thread.key = key if key is None or not self.key_core else self.key_core.get(key, key)
        self.threads.append(thread)
        self.on_core[core].append(thread)
        if thread.busy:
            self.hogs[core] += 1
            self.hog_threads[core].append(thread)
        self.contended = any(self.hogs) or any(len(q) > 1 for q in self.on_core)
        return thread

    def _allowed(self, affinity, who: str):
        """The cores ``affinity`` (``taskset -c``'s list; None = any) lets ``who`` run on, each checked
        against this host's."""
        if affinity is None:
            return range(self.cores)
        bad = [c for c in affinity if not 0 <= c < self.cores]
        if bad:
            raise ValueError(f"{self.name}: {who} is pinned to core(s) {bad}, "
                             f"but the host has cores 0..{self.cores - 1}")
        return affinity

    def account(self, seconds: float, key: int | None = None, thread: Thread | None = None) -> None:
        """Count ``seconds`` of CPU as busy on the core of ``thread`` (if placed), else of ``key`` (``key %
        cores``), else the least busy core, delaying no work: the host's share of an application's system
        calls in a user-mode-Linux instance (``app.syscall``, see the module's text)."""
        if seconds <= 0.0:
            return
        if thread is not None and thread.core is not None:
            core = thread.core
        elif key is not None:
            core = self.core_of(key)
        else:
            core = self.busy.index(min(self.busy))
        self.busy[core] += seconds
        self.call_busy_time += seconds

    def app_thread(self, name: str, key: int | None = None, kind: str = "app", affinity=None) -> Thread | None:
        """A traffic tool's or backend's thread placed on this host (None unless ``schedule_threads``)."""
        if not self.schedule_threads:
            return None
        return self.add_thread(Thread(name, kind, affinity=affinity), key=key)

    def add_background(self, n: int, affinity=None, *, period: float | None = None,
                       on: float | None = None) -> list[Thread]:
        """``n`` CPU-bound background threads (``stress -c n``), spread over the allowed cores; with
        ``period`` and ``on``, each runs ``on`` seconds in every ``period`` (phases spread evenly)."""
        duty = (lambda i: None) if period is None else (lambda i: (period, on, i * period / n))
        return [self.add_thread(Thread(f"{self.name}.load{i}", "background", affinity=affinity, busy=True,
                                       duty=duty(i)))
                for i in range(n)]

    def run(self, thread: Thread, t: float, work: float) -> float | None:
        """Run ``work`` seconds of ``thread``'s CPU, woken at ``t``; return when it completes.

        Uncontended (its core holds only this thread): exactly :meth:`serve` on that core.
        Contended: :func:`ovssim.cpu.scheduler.fair_run`, the thread waiting for the running
        thread's slice, sharing the core slice by slice and paying a context switch.  On a contended
        host an unpinned thread first goes where the scheduler's wake-up would put it
        (:meth:`_wake_idle`): off its core if another thread runs or waits there, or -- woken, its
        own work done -- if other work holds it (:meth:`_held`), unless its own key's work (a sending
        task's packets, run in its context) runs there.
        """
        core = thread.core
        if core is None:
            raise ValueError(f"{self.name}: thread {thread.name} was never placed (add_thread)")
        if self.contended and (thread.affinity is None or len(thread.affinity) > 1):
            if self._busy_at(core, t, thread):
                core = self._wake_idle(thread, t)
            elif t > thread.free and self._held(core, t, thread) and (
                    thread.key is None or self._keyed.get(thread.key) != core):
                # woken to a core other work holds; a sending task's own thread (its key's packets run
                # there) stays with them
                core = self._wake_idle(thread, t, senders=False)
        if not self.contended or (not self.hogs[core] and len(self.on_core[core]) == 1):
            done = self.serve(t, work, core, thread)
            if done is None:          # refused, as serve refuses it (a full backlog)
                return None
            start = self.served_start
            thread.waited += start - t if start > t else 0.0
            work = done - start       # what it ran, a cold start's slowdown included
        else:
            if self.speed != 1.0:
                work = work / self.speed
            start, done, cpu = self._fair_run(thread, t, work)
            self._free_by[core] = thread
            thread.waited += start - t
            self.jobs += 1
            self.busy[core] += cpu
            work = cpu
        thread.wakeups += 1
        thread.ran += work
        thread.free = done
        self.last[core] = thread
        return done

    def _busy_at(self, core: int, t: float, thread: Thread) -> bool:
        """Whether another thread runs or waits on ``core`` at ``t`` (a burst, or work not yet done)."""
        return self._runnable(core, t, thread) > 0

    def _held(self, core: int, t: float, thread: Thread) -> bool:
        """Whether other work holds ``core`` at ``t``, so it is not idle to ``thread`` woken then: work queued
        on it past ``t``, or another task's work ending at ``t`` on a core where a run-to-completion sender
        runs (:meth:`add_sender`).  The latter is the waker: a wake-up at the instant a core's work ends
        comes from that work -- a sending task's ``sendto()`` / ``tcp_sendmsg()`` carrying its packet
        through veth to a socket (``sock_def_readable`` -> ``try_to_wake_up``) -- and the sender is still on
        the CPU when ``select_task_rq_fair`` runs, so ``available_idle_cpu`` is false for it; it goes on with
        its next packet."""
        f = self.free[core]
        if f < t or self._free_by[core] is thread:
            return False
        return f > t or self.sending[core] > 0

    def _wake_idle(self, thread: Thread, t: float, senders: bool = True) -> int:
        """Wake-up balancing (``select_idle_sibling``, kernel/sched/fair.c): a thread that wakes to a busy core
        moves to an allowed core that is idle at ``t``, if there is one; returns its core.

        ``select_idle_sibling(p, prev, target)`` returns ``target`` (the waker's CPU or ``prev``, as
        ``wake_affine`` chose) if ``available_idle_cpu(target)``, else ``prev`` if it is idle, else an idle
        CPU of the cache domain (``select_idle_cpu``), else ``target``.  A CPU is idle only if it runs its
        idle task (``idle_cpu``: ``rq->curr == rq->idle``, nothing queued): not while a thread runs or
        waits there, nor while a task runs its softirq work there (:meth:`_held`).  So a busy thread --
        ovs-vswitchd's netdev datapath thread, woken by each frame -- and a sending task keep to different
        cores while one is idle, as measured on this 2-core machine (27 Nov, iperf 2 -P 1 through 4
        veth-linked bridges, unpinned: one core 56-66 % busy, the other 9-18 %).

        ``senders=False`` (the thread leaves a core that softirq work holds): only to a core where no
        run-to-completion sender runs.  A sender's core idle between its sends is not idle for long -- its
        ACKs wake it there again, and its keyed work cannot move as the sending task would -- so a thread
        leaving one sender's packets would only meet another's (:meth:`serve` keeps unkeyed work off those
        cores alike)."""
        allowed = range(self.cores) if thread.affinity is None else thread.affinity
        sending = self.sending
        for c in allowed:
            if c != thread.core and (not sending[c] or senders) and self.free[c] <= t and \
                    not self._busy_at(c, t, thread):
                self.on_core[thread.core].remove(thread)
                self.on_core[c].append(thread)
                thread.core = c
                thread.used = 0.0
                self.migrations += 1
                self.contended = any(self.hogs) or any(len(q) > 1 for q in self.on_core)
                return c
        return thread.core

    def _fair_run(self, thread: Thread, t: float, work: float) -> tuple[float, float, float]:
        """(start, done, cpu) of a contended core's thread work (:func:`~ovssim.cpu.scheduler.fair_run`)."""
        return fair_run(self, thread, t, work)

    # --- reports --------------------------------------------------------------------------
    def waiting(self, t: float) -> int:
        """Work items reserved to start after ``t`` (waiting at ``t``), over all cores."""
        return sum(len(s) - bisect_right(s, t) for s in self._starts)

    def utilisation(self, duration: float) -> list[float]:
        """Busy fraction of each core over ``duration`` seconds (a core with a CPU-bound thread: 1)."""
        if duration <= 0:
            return [0.0] * self.cores
        out = []
        for b, hogs in zip(self.busy, self.hog_threads):
            bursts = sum(1.0 if h.duty is None else h.duty[1] / h.duty[0] for h in hogs)
            out.append(min(1.0, b / duration + bursts))     # bursty load: its share of the idle time, approx.
        return out

    def run_queue_delay(self) -> dict[str, tuple[float, int]]:
        """Per thread kind: (mean wait from wake-up to running, in seconds; wake-ups)."""
        out: dict[str, list] = {}
        for th in self.threads:
            if th.wakeups:
                acc = out.setdefault(th.kind, [0.0, 0])
                acc[0] += th.waited
                acc[1] += th.wakeups
        return {k: (w / n, n) for k, (w, n) in out.items()}
