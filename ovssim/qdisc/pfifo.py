"""pfifo: a tail-drop FIFO limited in packets (Linux ``net/sched/sch_fifo.c``).

``limit`` defaults to the device's ``txqueuelen`` (1000), as ``fifo_init``
does when no limit is given.  An arriving packet that finds ``limit`` packets
queued is dropped.
"""
from __future__ import annotations

from collections import deque

from .base import Device, Qdisc
from . import classify, defaults


def _int(v) -> int:
    return classify.whole(v)


class PFifo(Qdisc):
    kind = "pfifo"
    PARAMS = {"limit": _int}

    def __init__(self, limit: int | None = None, name: str | None = None):
        super().__init__(name)
        self._check(limit is None or limit >= 1, f"pfifo limit must be >= 1, got {limit}",
                    "qdisc.limit", "give a positive number of packets")
        self._limit_given = limit
        self.limit = limit if limit is not None else defaults.TXQUEUELEN
        self._q: deque = deque()

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        if self._limit_given is None:
            self.limit = max(1, dev.txqueuelen)

    #: the port may compute departures analytically (plain FIFO, tail drop)
    analytic_fifo = True

    def full_for(self, pkt) -> bool:
        """Tail-drop test for an arriving packet (used by the port's analytic FIFO)."""
        return self.stats.qlen >= self.limit

    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        if self.full_for(pkt):
            self.drop(pkt, now, "limit")
            return False
        self._q.append(pkt)
        st.qlen += 1
        st.backlog += pkt.size
        pkt.enqueued_at = now
        return True

    can_bypass = True                              # fifo_init: TCQ_F_CAN_BYPASS

    def bypass(self, pkt, now: float) -> bool:
        """An empty FIFO: the packet goes to the device at once, counted as enqueued and sent -- unless
        the empty queue's limit already refuses it (bfifo: a packet larger than ``limit``)."""
        if self.full_for(pkt):
            return False
        return self._accounted_through(pkt, now)

    def dequeue(self, now: float):
        if not self._q:
            return None
        pkt = self._q.popleft()
        st = self.stats
        st.qlen -= 1
        st.backlog -= pkt.size
        st.packets += 1
        st.bytes += pkt.size
        return pkt
