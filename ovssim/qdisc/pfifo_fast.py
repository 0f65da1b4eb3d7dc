"""pfifo_fast: the Linux default qdisc, three FIFO bands in strict priority.

Models ``pfifo_fast`` of ``net/sched/sch_generic.c``: a packet goes to band
``priomap[skb->priority & 15]`` (default map ``1 2 2 2 1 2 0 0 1 1 1 1 1 1 1
1``, see :mod:`defaults`); dequeue always serves the lowest non-empty band.
Since Linux 4.16 each band is a ring of ``txqueuelen`` packets (``limit``
here), so a full band drops arriving packets while other bands still accept
(before 4.16 the limit was on the total; set ``shared_limit = true``).

``skb->priority`` is :attr:`Packet.priority`.  A socket that sets ``IP_TOS``
gets ``rt_tos2priority(tos)`` (use :func:`classify.tos_to_priority` when
generating packets); a packet forwarded from a VM through a bridge keeps
priority 0 (band 1) unless OVS ``set_queue`` changed it.
"""
from __future__ import annotations

from collections import deque

from .base import Device, Qdisc
from . import classify, defaults


def _priomap(v) -> tuple:
    m = tuple(classify.whole(x) for x in v)
    if len(m) != 16 or any(not 0 <= b < defaults.PFIFO_FAST_BANDS for b in m):
        raise ValueError("priomap needs 16 band numbers, each 0, 1 or 2")
    return m


class PfifoFast(Qdisc):
    kind = "pfifo_fast"
    PARAMS = {"limit": classify.whole, "priomap": _priomap, "shared_limit": classify.flag}

    def __init__(self, limit: int | None = None, priomap=defaults.PFIFO_FAST_PRIOMAP,
                 shared_limit: bool = False, name: str | None = None):
        super().__init__(name)
        self._check(limit is None or limit >= 1, f"pfifo_fast limit must be >= 1, got {limit}",
                    "qdisc.limit", "give a positive number of packets (txqueuelen)")
        self._limit_given = limit
        self.limit = limit if limit is not None else defaults.TXQUEUELEN
        self.priomap = tuple(priomap)
        self.shared_limit = shared_limit
        self.bands = tuple(deque() for _ in range(defaults.PFIFO_FAST_BANDS))
        self._band_of = tuple(self.bands[b] for b in self.priomap)    # skb->priority & 15 -> band

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        if self._limit_given is None:
            self.limit = max(1, dev.txqueuelen)

    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        band = self._band_of[pkt.priority & 15]
        if (st.qlen if self.shared_limit else len(band)) >= self.limit:
            self.drop(pkt, now, "limit")
            return False
        band.append(pkt)
        st.qlen += 1
        st.backlog += pkt.size
        pkt.enqueued_at = now
        return True

    can_bypass = True                              # pfifo_fast_init: TCQ_F_CAN_BYPASS (with NOLOCK)

    def bypass(self, pkt, now: float) -> bool:
        """An empty pfifo_fast: the packet goes to the device at once (every band is empty and holds
        ``limit`` >= 1, so ``enqueue`` could not drop it), counted as enqueued and sent."""
        return self._accounted_through(pkt, now)

    def dequeue(self, now: float):
        st = self.stats
        if not st.qlen:
            return None
        b0, b1, b2 = self.bands
        pkt = (b0 or b1 or b2).popleft()           # the lowest non-empty band
        st.qlen -= 1
        st.backlog -= pkt.size
        st.packets += 1
        st.bytes += pkt.size
        return pkt

    def peek(self, now: float = 0.0):
        for band in self.bands:
            if band:
                return band[0]
        return None
