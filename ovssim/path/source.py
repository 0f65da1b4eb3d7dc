"""A packet source for building your own experiments: constant-rate or Poisson.

``Source(env, out, rate="20mbit", size=1470)`` emits UDP frames of ``size``
bytes (the L2 frame a qdisc counts) into ``out`` at an average of ``rate`` bit/s,
evenly spaced (``arrivals="cbr"``) or as a Poisson process (``"poisson"``, a seeded
``numpy`` generator), from ``start`` until ``stop`` or ``count`` packets.  Each
packet carries its creation time, so a :class:`~ovssim.path.base.Sink` with
``keep=True`` gives its one-way delays.  ``flows=N`` spreads the packets over N
flows (packet *i* uses source port ``sport + i % N``): with N at least the
packet count, every packet opens a new flow, an OVS flow-setup storm.  ``tos`` and ``priority`` (skb->priority,
which names an HTB/HFSC class or a pfifo_fast band) are stamped on every packet.  One timed callback per packet, no
generator process (see ``ovssim.sched``).
"""
from __future__ import annotations

import math

import numpy as np

from .. import units
from ..errors import ConfigError
from ..packet import FlowKey, Packet
from ..sched import call_at

ARRIVALS = ("cbr", "poisson")


class Source:
    def __init__(self, env, out=None, *, rate, size=1470, arrivals: str = "poisson",
                 flow: FlowKey | None = None, start=0.0, stop=None, count: int | None = None,
                 rng: np.random.Generator | int | None = None, tos: int = 0, priority: int = 0,
                 flows: int = 1):
        if arrivals not in ARRIVALS:
            raise ConfigError(f"unknown arrival process {arrivals!r}", key="arrivals",
                              fix=f"use one of: {', '.join(ARRIVALS)}")
        self.env = env
        self.out = out
        self.rate = units.positive(units.rate(rate), "rate")
        self.size = int(units.positive(units.size(size), "size"))
        self.arrivals = arrivals
        self.flow = flow if flow is not None else FlowKey("src", "dst", 5000, 5001, "udp")
        self.stop = math.inf if stop is None else units.time(stop)
        self.count = count
        if isinstance(flows, bool) or not isinstance(flows, int) or not 1 <= flows <= 65535:
            raise ConfigError(f"flows must be a whole number 1..65535, got {flows!r}", key="flows",
                              fix="write e.g. flows=1000 (packet i uses source port sport + i % flows)")
        self.flows = flows
        self.tos = tos
        self.priority = priority
        self.mean_gap = self.size * 8.0 / self.rate
        self._rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.sent = 0
        self.bytes = 0
        call_at(env, units.time(start), self._emit)

    def _emit(self, _arg=None) -> None:
        now = self.env.now
        if now >= self.stop or (self.count is not None and self.sent >= self.count):
            return
        flow = self.flow
        if self.flows > 1:
            flow = flow._replace(sport=(flow.sport + self.sent % self.flows) % 65536)
        pkt = Packet(flow, self.size, now, self.size, self.sent, None, self.priority, self.tos)
        self.sent += 1
        self.bytes += self.size
        self.out.put(pkt)
        gap = self.mean_gap if self.arrivals == "cbr" else self._rng.exponential(self.mean_gap)
        call_at(self.env, now + gap, self._emit)
