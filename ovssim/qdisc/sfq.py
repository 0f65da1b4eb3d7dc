"""sfq: Stochastic Fairness Queueing (Linux ``net/sched/sch_sfq.c``, since 3.3).

Flows are hashed into ``divisor`` buckets (1024); each active bucket owns a
slot (at most ``flows`` = 128 slots) holding a FIFO of at most ``depth``
packets (127).  Active slots form a ring served by deficit round robin with
a ``quantum`` of one ``psched_mtu`` (1514 bytes): the slot at the head
sends while its allotment is positive, then moves to the tail with another
quantum.  When the qdisc holds more than ``limit`` packets (127) a packet is
dropped from the *longest* slot (its tail, or its head with ``headdrop``);
when all slots hold one packet, the slot next in turn loses its packet.
``perturb`` (seconds, 0 = never) re-seeds the hash and re-files every queued
packet (``sfq_rehash``).

Hashing uses :class:`classify.FlowHasher` (CRC-32 of the 5-tuple) seeded by
``seed`` so runs are reproducible.
"""
from __future__ import annotations

import random
from collections import deque

from .base import Device, Qdisc
from . import classify, defaults


class _Slot:
    __slots__ = ("q", "allot", "bucket")

    def __init__(self, bucket: int):
        self.q: deque = deque()
        self.allot = 0
        self.bucket = bucket


class Sfq(Qdisc):
    kind = "sfq"
    PARAMS = {"limit": classify.whole, "quantum": classify.size_int, "perturb": classify.time,
              "divisor": classify.whole, "flows": classify.whole, "depth": classify.whole,
              "headdrop": classify.flag, "seed": classify.whole}

    def __init__(self, limit: int | None = None, quantum: int | None = None,
                 perturb: float = defaults.SFQ_PERTURB, divisor: int = defaults.SFQ_DEFAULT_DIVISOR,
                 flows: int = defaults.SFQ_DEFAULT_FLOWS, depth: int = defaults.SFQ_MAX_DEPTH,
                 headdrop: bool = False, seed: int = 0, name: str | None = None):
        super().__init__(name)
        chk = self._check
        chk(divisor >= 1 and divisor <= 65536 and divisor & (divisor - 1) == 0,
            f"sfq divisor must be a power of two up to 65536, got {divisor}", "qdisc.divisor",
            "use e.g. divisor = 1024 (tc: 'divisor must be a power of 2')")
        chk(1 <= flows <= defaults.SFQ_MAX_FLOWS, f"sfq flows must be 1..{defaults.SFQ_MAX_FLOWS}, got {flows}",
            "qdisc.flows", "use e.g. flows = 128")
        chk(1 <= depth <= defaults.SFQ_MAX_DEPTH, f"sfq depth must be 1..{defaults.SFQ_MAX_DEPTH}, got {depth}",
            "qdisc.depth", "per-flow depth is at most 127 packets")
        chk(limit is None or limit >= 1, f"sfq limit must be >= 1 packet, got {limit}", "qdisc.limit",
            "use e.g. limit = 127")
        chk(quantum is None or quantum >= 1, f"sfq quantum must be >= 1 byte, got {quantum}",
            "qdisc.quantum", "leave it out to use one MTU (1514 bytes)")
        chk(perturb >= 0, f"sfq perturb must be >= 0 s, got {perturb}", "qdisc.perturb", "0 disables re-hashing")
        # sfq_change: a given limit is capped by depth * flows and caps the flows in turn
        self.limit = defaults.SFQ_LIMIT if limit is None else min(limit, depth * flows)
        self.depth = depth
        self.maxflows = min(flows, divisor) if limit is None else min(flows, divisor, self.limit)
        self.divisor = divisor
        self._quantum_given = quantum
        self.quantum = quantum if quantum is not None else defaults.PSCHED_MTU
        self.headdrop = headdrop
        self.perturb_period = perturb
        self._rng = random.Random(seed)
        self.hasher = classify.FlowHasher(divisor, self._rng.getrandbits(32) if perturb else 0)
        self._next_perturb = perturb if perturb else float("inf")
        self.ht: dict[int, _Slot] = {}        # bucket -> active slot
        self.ring: deque[_Slot] = deque()      # ring[0] is next in turn, ring[-1] the tail
        self.dep: list[dict] = [dict() for _ in range(depth + 2)]  # depth -> slots (insertion order)
        self.cur_depth = 0

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        if self._quantum_given is None:
            self.quantum = dev.psched_mtu

    # -- depth bookkeeping (sfq_inc / sfq_dec) ----------------------------------
    def _inc(self, slot: _Slot, n: int) -> None:          # n = new length
        dep = self.dep
        if n > 1:
            del dep[n - 1][slot]
        dep[n][slot] = None
        if n > self.cur_depth:
            self.cur_depth = n

    def _dec(self, slot: _Slot, n: int) -> None:          # n = new length
        dep = self.dep
        del dep[n + 1][slot]
        if n:
            dep[n][slot] = None
        if n + 1 == self.cur_depth and not dep[n + 1]:
            self.cur_depth = n

    # -- contract ------------------------------------------------------------------
    def enqueue(self, pkt, now: float) -> bool:
        if now >= self._next_perturb:
            self._perturb(now)
        st = self.stats
        st.arrivals += 1
        b = self.hasher.bucket(pkt.flow)
        slot = self.ht.get(b)
        if slot is None:
            if len(self.ht) >= self.maxflows:
                self.drop(pkt, now, "flows")
                return False
            slot = _Slot(b)
            self.ht[b] = slot
        q = slot.q
        if len(q) >= self.depth:
            if not self.headdrop:
                self.drop(pkt, now, "depth")
                return False
            head = q.popleft()
            self._dec(slot, len(q))
            self.drop(head, now, "depth", queued=True)
        q.append(pkt)
        n = len(q)
        self._inc(slot, n)
        st.qlen += 1
        st.backlog += pkt.size
        pkt.enqueued_at = now
        if n == 1:                       # a new flow joins the ring behind the tail
            self.ring.append(slot)
            slot.allot = self.quantum
        if st.qlen <= self.limit:
            return True
        before = len(q)
        self._drop_longest(now)
        return before == len(q)          # NET_XMIT_CN when our own flow lost a packet

    def _drop_longest(self, now: float) -> None:
        d = self.cur_depth
        if d > 1:
            slot = next(reversed(self.dep[d]))          # most recently grown to depth d
            pkt = slot.q.popleft() if self.headdrop else slot.q.pop()
            self._dec(slot, len(slot.q))
        else:                                            # every slot holds one packet
            slot = self.ring.popleft()
            pkt = slot.q.pop()
            self._dec(slot, 0)
            del self.ht[slot.bucket]
        self.drop(pkt, now, "limit", queued=True)

    def dequeue(self, now: float):
        if now >= self._next_perturb:
            self._perturb(now)
        ring = self.ring
        if not ring:
            return None
        slot = ring[0]
        while slot.allot <= 0:
            slot.allot += self.quantum
            ring.rotate(-1)
            slot = ring[0]
        pkt = slot.q.popleft()
        n = len(slot.q)
        self._dec(slot, n)
        slot.allot -= pkt.size
        if not n:
            ring.popleft()
            del self.ht[slot.bucket]
        st = self.stats
        st.qlen -= 1
        st.backlog -= pkt.size
        st.packets += 1
        st.bytes += pkt.size
        return pkt

    # -- perturbation (sfq_perturbation + sfq_rehash) ---------------------------------
    def _perturb(self, now: float) -> None:
        period = self.perturb_period
        while self._next_perturb <= now:
            self._next_perturb += period
        self.hasher.perturb(self._rng.getrandbits(32))
        if not self.ring:
            return
        queued = []
        for slot in self.ring:
            queued.extend(slot.q)
        self.ht.clear()
        self.ring.clear()
        self.dep = [dict() for _ in range(self.depth + 2)]
        self.cur_depth = 0
        for pkt in queued:
            b = self.hasher.bucket(pkt.flow)
            slot = self.ht.get(b)
            if slot is None:
                if len(self.ht) >= self.maxflows:
                    self.drop(pkt, now, "rehash", queued=True)
                    continue
                slot = self.ht[b] = _Slot(b)
            if len(slot.q) >= self.depth:
                self.drop(pkt, now, "rehash", queued=True)
                continue
            slot.q.append(pkt)
            self._inc(slot, len(slot.q))
            if len(slot.q) == 1:
                self.ring.append(slot)
                slot.allot = self.quantum
