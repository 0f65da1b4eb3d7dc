"""noop: the qdisc that discards everything (Linux ``noop_qdisc``, sch_generic.c).

A device that is down, or whose qdisc was deleted while it has no default,
has ``noop``: every packet is dropped.  (Open vSwitch's ``linux-noop`` QoS
type is something else -- "leave the device's qdisc alone" -- and is handled
in :mod:`ovs_qos`.)
"""
from __future__ import annotations

from .base import Qdisc


class Noop(Qdisc):
    kind = "noop"
    PARAMS: dict = {}

    def enqueue(self, pkt, now: float) -> bool:
        self.stats.arrivals += 1
        self.drop(pkt, now, "noop")
        return False

    def dequeue(self, now: float):
        return None

    def peek(self, now: float = 0.0):
        return None
