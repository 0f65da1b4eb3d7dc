"""bfifo: a tail-drop FIFO limited in bytes (Linux ``net/sched/sch_fifo.c``).

``limit`` defaults to ``txqueuelen * psched_mtu`` bytes (1000 * 1514), as
``fifo_init`` computes it.  A packet is dropped if its bytes would take the
backlog over ``limit``.
"""
from __future__ import annotations

from .. import units
from .base import Device
from .pfifo import PFifo
from . import defaults


class BFifo(PFifo):
    kind = "bfifo"
    PARAMS = {"limit": lambda v: int(units.size(v))}

    def __init__(self, limit: int | None = None, name: str | None = None):
        super().__init__(None, name)
        self._check(limit is None or limit >= 1, f"bfifo limit must be >= 1 byte, got {limit}",
                    "qdisc.limit", "give a size such as '150kb'")
        self._limit_given = limit
        self.limit = limit if limit is not None else defaults.TXQUEUELEN * defaults.PSCHED_MTU

    def attach(self, dev: Device) -> None:
        self.dev = dev
        if self._limit_given is None:
            self.limit = max(1, dev.txqueuelen) * dev.psched_mtu

    def full_for(self, pkt) -> bool:
        return self.stats.backlog + pkt.size > self.limit

