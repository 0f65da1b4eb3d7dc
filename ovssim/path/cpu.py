"""A host's CPU cores as a shared resource.

Per-packet work -- the datapath's fast path, a veth hop's softirq, vhost /
netback copying, the traffic tools' own send/receive -- takes service time
from one of the host's cores.  Work items are served first come, first served
by the earliest-free core (the Kiefer-Wolfowitz recursion of a FIFO G/G/c
queue), computed directly from arrival times: no SimPy event is spent, the
caller learns when its work is done and schedules from there.

``backlog_limit`` bounds the work waiting for a core, like the per-CPU input
queue ``net.core.netdev_max_backlog`` (default 1000, net/core/dev.c); work
arriving to a full backlog is refused (the packet is dropped) and counted.
When more busy flows than cores compete, waits grow and the backlog
overflows, which is how throughput degrades (seed 003, veth pairs).
"""
from __future__ import annotations

import heapq
from bisect import bisect_right, insort

NETDEV_MAX_BACKLOG = 1000


class CpuPool:
    def __init__(self, env, cores: int = 1, name: str = "cpu", *,
                 backlog_limit: int | None = NETDEV_MAX_BACKLOG, speed: float = 1.0):
        if cores < 1:
            raise ValueError(f"{name}: a host needs at least one core, got {cores}")
        if not speed > 0:
            raise ValueError(f"{name}: speed must be > 0, got {speed}")
        self.env = env
        self.name = name
        self.cores = cores
        self.speed = speed
        self.backlog_limit = backlog_limit
        self._free = [(0.0, i) for i in range(cores)]
        self._starts: list[float] = []      # sorted start times of work not yet started
        self.busy = [0.0] * cores
        self.jobs = 0
        self.refused = 0

    def serve(self, t: float, work: float) -> float | None:
        """Run ``work`` seconds of CPU arriving at ``t``; return completion time, or None if refused."""
        work = work / self.speed
        heap = self._free
        free_at, core = heap[0]
        start = t if t > free_at else free_at
        lim = self.backlog_limit
        if lim is not None and start > t:
            # Work waiting at time t = work reserved to start after t.  Callers may run
            # ahead of env.now (lookahead) and out of time order, so count by time, not
            # by order of calls; what started before env.now can never be waiting again.
            starts = self._starts
            if starts and starts[0] <= self.env._now:
                del starts[:bisect_right(starts, self.env._now)]
            if len(starts) - bisect_right(starts, t) >= lim:
                self.refused += 1
                return None
            insort(starts, start)
        done = start + work
        heapq.heapreplace(heap, (done, core))
        self.busy[core] += work
        self.jobs += 1
        return done

    def waiting(self, t: float) -> int:
        """Work items reserved to start after ``t`` (waiting at ``t``)."""
        return len(self._starts) - bisect_right(self._starts, t)

    def utilisation(self, duration: float) -> list[float]:
        """Busy fraction of each core over ``duration`` seconds."""
        if duration <= 0:
            return [0.0] * self.cores
        return [min(1.0, b / duration) for b in self.busy]
