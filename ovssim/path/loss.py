"""Random packet loss: each packet is dropped independently with probability ``p``.

The Bernoulli loss of ``tc qdisc ... netem loss random P%`` (net/sched/sch_netem.c
with the default independent-loss model), as a pure element: no SimPy event,
a seeded ``numpy.random.Generator`` drawn in blocks for speed.  ``pattern``
(a set of 0-based arrival indices) drops exactly those packets instead,
for reproducible loss patterns in tests.  ``kinds`` limits drops to packets
of those kinds (e.g. ``{"data"}`` to spare ACKs).
"""
from __future__ import annotations

import numpy as np

_BLOCK = 4096


class RandomLoss:
    def __init__(self, env, p: float = 0.0, out=None, *, rng: np.random.Generator | None = None,
                 seed: int | None = None, pattern=None, kinds=None, name: str = "loss"):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name}: loss probability must be in [0, 1], got {p}")
        self.env = env
        self.p = p
        self.out = out
        self.name = name
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.pattern = frozenset(pattern) if pattern is not None else None
        self.kinds = frozenset(kinds) if kinds is not None else None
        self._draws = np.empty(0)
        self._i = 0
        self.arrived = 0
        self.dropped = 0
        self.forwarded = 0

    def _lost(self) -> bool:
        if self.pattern is not None:
            return (self.arrived - 1) in self.pattern
        if self.p == 0.0:
            return False
        if self._i >= len(self._draws):
            self._draws = self.rng.random(_BLOCK)
            self._i = 0
        u = self._draws[self._i]
        self._i += 1
        return u < self.p

    def put(self, pkt) -> None:
        self.arrived += 1
        if (self.kinds is None or pkt.kind in self.kinds) and self._lost():
            self.dropped += 1
            return
        self.forwarded += 1
        self.out.put(pkt)
