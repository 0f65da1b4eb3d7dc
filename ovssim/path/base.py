"""Conventions shared by the path elements.

Lookahead time.  ``Packet.t`` is when the packet reaches the element it is
handed to; ``put`` is called at ``env.now <= pkt.t``.  A *pure delay* element
adds its delay to ``pkt.t`` and, when ``lookahead`` is on, hands the packet on
at once -- no SimPy event at all.  A *contention point* (a queue, a link, a CPU
with a backlog limit) first waits until ``pkt.t`` (one cheap timed callback),
then acts.  With ``lookahead=False`` (the default for an element used alone in
a user's environment) a pure delay element delivers at ``pkt.t`` in real
simulated time, so downstream code that reads ``env.now`` sees the right time.
The topology builder turns lookahead on between ovssim elements.

Stale times are harmless: elements use ``max(pkt.t, env.now)``.
"""
from __future__ import annotations

from ..sched import call_at


class Sink:
    """Counts packets and bytes; with ``keep=True`` also keeps them and their arrival times.

    ``delays()`` gives each kept packet's one-way delay (arrival minus creation), in seconds.
    """

    def __init__(self, env, keep: bool = False):
        self.env = env
        self.keep = keep
        self.packets: list = []
        self.count = 0
        self.bytes = 0
        self.arrival_times: list[float] = []

    def put(self, pkt) -> None:
        self.count += 1
        self.bytes += pkt.size
        if self.keep:
            now = self.env._now
            self.packets.append(pkt)
            self.arrival_times.append(pkt.t if pkt.t > now else now)

    def delays(self):
        """One-way delays of the kept packets (seconds, numpy array; needs ``keep=True``)."""
        import numpy as np
        if not self.keep:
            raise ValueError("Sink(keep=False) keeps no packets: build it with keep=True to get delays")
        return np.subtract(self.arrival_times, [p.created for p in self.packets])


class DelayElement:
    """Base of pure-delay elements: ``delay(pkt)`` seconds, no process per packet."""

    stage = "delay"

    def __init__(self, env, out=None, *, lookahead: bool = False):
        self.env = env
        self.out = out
        self.lookahead = lookahead
        self.packets = 0
        self.bytes = 0

    def delay(self, pkt) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        if pkt.stamps is not None:
            pkt.stamps[self.stage] = t
        self.packets += 1
        self.bytes += pkt.size
        t += self.delay(pkt)
        pkt.t = t
        self.forward(pkt)

    def forward(self, pkt) -> None:
        """Hand ``pkt`` on at ``pkt.t`` (at once with lookahead, else at that time)."""
        if self.lookahead or pkt.t <= self.env._now:
            self.out.put(pkt)
        else:
            call_at(self.env, pkt.t, self.out.put, pkt)
