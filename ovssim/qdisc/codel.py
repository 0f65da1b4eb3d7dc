"""codel: Controlled Delay AQM on a single FIFO (Linux ``net/sched/sch_codel.c``, RFC 8289).

Enqueue tail-drops only when ``limit`` packets are queued (default 1000);
the AQM acts at dequeue through the shared state machine in
:mod:`codel_core` (target 5 ms, interval 100 ms, ECN off by default, the
"more than one MTU queued" guard with MTU = ``psched_mtu``).  Drops made by
the control law count as qdisc drops and as ``overlimits`` is not touched,
as in the kernel; ECN marks are counted in ``stats.ecn_marks``.
"""
from __future__ import annotations

from collections import deque

from .base import Device, Qdisc
from . import classify, defaults
from .codel_core import CodelParams, CodelStats, CodelVars, codel_dequeue


class Codel(Qdisc):
    kind = "codel"
    PARAMS = {"limit": classify.whole, "target": classify.time, "interval": classify.time,
              "ecn": classify.flag, "ce_threshold": classify.time}

    def __init__(self, limit: int = defaults.CODEL_LIMIT, target: float = defaults.CODEL_TARGET,
                 interval: float = defaults.CODEL_INTERVAL, ecn: bool = defaults.CODEL_ECN,
                 ce_threshold: float | None = None, name: str | None = None):
        super().__init__(name)
        self._check(limit >= 1, f"codel limit must be >= 1 packet, got {limit}", "qdisc.limit",
                    "give a positive number of packets")
        self._check(target > 0, f"codel target must be > 0, got {target}", "qdisc.target",
                    "write e.g. target = '5ms'")
        self._check(interval > 0, f"codel interval must be > 0, got {interval}", "qdisc.interval",
                    "write e.g. interval = '100ms'")
        self.limit = limit
        self.params = CodelParams(target, interval, defaults.PSCHED_MTU, ecn, ce_threshold)
        self.vars = CodelVars()
        self.cstats = CodelStats()
        self.drop_overlimit = 0
        self._q: deque = deque()
        self._now = 0.0

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        self.params.mtu = dev.psched_mtu

    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        if st.qlen >= self.limit:
            self.drop_overlimit += 1
            self.drop(pkt, now, "limit")
            return False
        self._q.append(pkt)
        st.qlen += 1
        st.backlog += pkt.size
        pkt.enqueued_at = now
        return True

    def _pop(self):
        q = self._q
        if not q:
            return None
        pkt = q.popleft()
        st = self.stats
        st.qlen -= 1
        st.backlog -= pkt.size
        return pkt

    def _drop(self, pkt) -> None:
        self.drop(pkt, self._now, "codel")

    def dequeue(self, now: float):
        if not self._q:
            self.vars.dropping = False
            return None
        self._now = now
        marks = self.cstats.ecn_mark
        pkt = codel_dequeue(self.vars, self.params, self.cstats, self.stats, now, self._pop, self._drop)
        if self.cstats.ecn_mark != marks:
            self.stats.ecn_marks += self.cstats.ecn_mark - marks
        if pkt is not None:
            st = self.stats
            st.packets += 1
            st.bytes += pkt.size
        return pkt
