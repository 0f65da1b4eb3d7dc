"""A host's CPU cores as a shared resource.

Per-packet work -- the datapath's fast path, a veth hop's softirq, vhost /
netback copying, the traffic tools' own send/receive -- takes service time
from one of the host's cores.  Work pinned to a core (a flow's packets, as
RSS/RPS pin them; a backend thread) is served FIFO on that core; unpinned work
goes to the earliest-free core (the Kiefer-Wolfowitz recursion of a FIFO G/G/c
queue).  Completion times are computed directly from arrival times: no SimPy
event is spent, the caller learns when its work is done and schedules from
there.

``backlog_limit`` bounds the work waiting for a core, like the per-CPU input
queue ``net.core.netdev_max_backlog`` (default 1000, net/core/dev.c); work
arriving to a full backlog is refused (the packet is dropped) and counted.
When more busy flows than cores compete, waits grow and the backlog
overflows, which is how throughput degrades (seed 003, veth pairs).
"""
from __future__ import annotations

import zlib
from bisect import bisect_right, insort

NETDEV_MAX_BACKLOG = 1000


_FLOW_KEYS: dict = {}


def flow_key(flow) -> int:
    """A stable integer for a flow (CRC-32 of its 5-tuple), to pin its work to one core.

    Linux keeps a flow's packets on one CPU (RSS / RPS hash the 5-tuple), so a flow
    is never reordered by being processed on two cores at once.  Stable across
    processes (no salted ``hash()``), cached per flow.
    """
    k = _FLOW_KEYS.get(flow)
    if k is None:
        if len(_FLOW_KEYS) > 100_000:
            _FLOW_KEYS.clear()
        k = _FLOW_KEYS[flow] = zlib.crc32(repr(tuple(flow)).encode())
    return k


_CONN_KEYS: dict = {}


def conn_key(flow) -> int:
    """A connection's core key: the same for both directions of a 5-tuple.

    Softirq work follows the connection, not the direction: on a path of veths
    and bridges the data and the ACKs it triggers are processed in the same
    softirq run, on one CPU (run to completion, :mod:`ovssim.path.endpoint`).
    For frames from a NIC this is an approximation: default Toeplitz RSS is not
    symmetric, so the two directions may land on different queues.  Stable
    across processes, cached per flow."""
    k = _CONN_KEYS.get(flow)
    if k is None:
        if len(_CONN_KEYS) > 100_000:
            _CONN_KEYS.clear()
        a, b = (flow[0], flow[2]), (flow[1], flow[3])
        lo, hi = (a, b) if repr(a) <= repr(b) else (b, a)
        k = _CONN_KEYS[flow] = zlib.crc32(repr((lo, hi, flow[4])).encode())
    return k


class CpuPool:
    """``cores`` cores; ``serve(t, work, key)`` returns when the work is done (or None if refused).

    ``key`` pins work to core ``key % cores`` (a flow's softirq work by its RSS
    hash, a backend thread by its identity); without a key the earliest-free core
    takes it.  Each core has its own backlog bound, as ``netdev_max_backlog`` is
    per CPU.
    """

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
        self.free = [0.0] * cores
        self._starts: list[list[float]] = [[] for _ in range(cores)]   # per core, sorted
        self.busy = [0.0] * cores
        self.jobs = 0
        self.refused = 0

    def serve(self, t: float, work: float, key: int | None = None) -> float | None:
        """Run ``work`` seconds of CPU arriving at ``t``; return completion time, or None if refused."""
        if self.speed != 1.0:
            work = work / self.speed
        free = self.free
        if key is not None:
            core = key % self.cores
        elif self.cores == 1:
            core = 0
        else:
            core = free.index(min(free))
        free_at = free[core]
        start = t if t > free_at else free_at
        lim = self.backlog_limit
        if lim is not None and start > t:
            # Work waiting at time t = work reserved to start after t.  Callers may run
            # ahead of env.now (lookahead) and out of time order, so count by time, not
            # by order of calls; what started before env.now can never be waiting again.
            starts = self._starts[core]
            now = self.env._now
            if starts and starts[0] <= now:
                del starts[:bisect_right(starts, now)]
            if len(starts) - bisect_right(starts, t) >= lim:
                self.refused += 1
                return None
            insort(starts, start)
        done = start + work
        free[core] = done
        self.busy[core] += work
        self.jobs += 1
        return done

    def waiting(self, t: float) -> int:
        """Work items reserved to start after ``t`` (waiting at ``t``), over all cores."""
        return sum(len(s) - bisect_right(s, t) for s in self._starts)

    def utilisation(self, duration: float) -> list[float]:
        """Busy fraction of each core over ``duration`` seconds."""
        if duration <= 0:
            return [0.0] * self.cores
        return [min(1.0, b / duration) for b in self.busy]
