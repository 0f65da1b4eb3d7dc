"""tbf: Token Bucket Filter (Linux ``net/sched/sch_tbf.c``, ``tc-tbf(8)``).

A bucket of ``burst`` bytes fills at ``rate``; the head packet leaves when
the bucket holds its size, so a burst passes at line rate up to the bucket
size and then the output settles at ``rate``.  With ``peakrate`` a second
bucket of ``mtu`` (``minburst``) bytes filling at ``peakrate`` also has to
hold the packet.  Tokens are kept as time, as the kernel does (``buffer`` =
burst / rate).  Packets wait in an inner bfifo of ``limit`` bytes; with
``latency`` instead, ``limit = rate * latency + burst`` (capped by
``peakrate * latency + mtu``), as tc computes it.  A packet larger than the
bucket can never be sent and is dropped on arrival -- unless it is a GSO skb
whose segments each fit: then it is segmented on enqueue and each segment is
queued on its own (``tbf_segment``, net/sched/sch_tbf.c: ``skb_gso_segment``
then the child's enqueue per segment; the qdisc's packet count grows by the
segments made less one, ``qdisc_tree_reduce_backlog``).  Sizes are
``qdisc_pkt_len``: a GSO skb counts every segment's headers (``Packet.size``).

``overlimits`` counts the dequeues that found a packet but no tokens.
"""
from __future__ import annotations

from collections import deque

from ..path.gso import segment
from .base import Qdisc
from . import classify


class Tbf(Qdisc):
    kind = "tbf"
    PARAMS = {"rate": classify.rate, "burst": classify.size_int, "buffer": classify.size_int,
              "maxburst": classify.size_int, "limit": classify.size_int, "latency": classify.time,
              "peakrate": classify.rate, "mtu": classify.size_int, "minburst": classify.size_int}

    def __init__(self, rate: float | None = None, burst: int | None = None, limit: int | None = None,
                 latency: float | None = None, peakrate: float | None = None, mtu: int | None = None,
                 buffer: int | None = None, maxburst: int | None = None, minburst: int | None = None,
                 name: str | None = None):
        super().__init__(name)
        burst = burst if burst is not None else (buffer if buffer is not None else maxburst)
        mtu = mtu if mtu is not None else minburst
        chk = self._check
        chk(rate is not None and rate > 0, '"rate" is required and must be > 0', "qdisc.rate",
            "write e.g. rate = '10mbit'")
        chk(burst is not None and burst > 0, '"burst" is required (the bucket size in bytes)',
            "qdisc.burst", "write e.g. burst = '32kb'; it must hold at least one MTU-sized packet")
        chk((limit is None) != (latency is None), 'either "limit" or "latency" is required, not both',
            "qdisc.limit", "write e.g. limit = '64kb' or latency = '50ms'")
        if peakrate is not None:
            chk(mtu is not None and mtu > 0, '"mtu" (minburst) is required if "peakrate" is requested',
                "qdisc.mtu", "write e.g. mtu = 1514 with peakrate")
            chk(peakrate > rate, f"peakrate ({peakrate:.0f} bit/s) must be greater than rate ({rate:.0f} bit/s)",
                "qdisc.peakrate", "raise peakrate or leave it out")
        self.rate_Bps = rate / 8.0
        self.burst = burst
        self.peak_Bps = peakrate / 8.0 if peakrate else None
        self.mtu = mtu if peakrate else None
        if latency is not None:
            lim = self.rate_Bps * latency + burst
            if self.peak_Bps:
                lim = min(lim, self.peak_Bps * latency + mtu)
            limit = int(lim)
        chk(limit > 0, f"tbf limit must be > 0 bytes, got {limit}", "qdisc.limit", "give a positive size")
        self.limit = limit
        # tokens as time (seconds of transmission at the bucket's rate)
        self.buffer = burst / self.rate_Bps
        self.tokens = self.buffer
        self.pbuffer = (mtu / self.peak_Bps) if self.peak_Bps else 0.0
        self.ptokens = self.pbuffer
        self.max_size = min(burst, mtu) if self.peak_Bps else burst
        self.t_c = 0.0
        self._sec_per_byte = 1.0 / self.rate_Bps
        self._psec_per_byte = 1.0 / self.peak_Bps if self.peak_Bps else 0.0
        self._q: deque = deque()
        self._wake: float | None = None

    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        size = pkt.size
        if size > self.max_size:
            if pkt.gso_segs > 1 and pkt.gso_size + pkt.header_len <= self.max_size:
                return self._segment(pkt, now)
            self.drop(pkt, now, "larger than burst")
            return False
        if st.backlog + size > self.limit:          # inner bfifo
            self.drop(pkt, now, "limit")
            return False
        self._q.append(pkt)
        st.qlen += 1
        st.backlog += size
        pkt.enqueued_at = now
        return True

    def _segment(self, pkt, now: float) -> bool:
        """``tbf_segment``: queue each segment of a GSO skb larger than the bucket."""
        st = self.stats
        segs = segment(pkt)
        st.arrivals -= 1                    # each segment's enqueue counts it: the segments are the arrivals
        queued = 0
        for s in segs:
            if self.enqueue(s, now):
                queued += 1
        return queued > 0

    def dequeue(self, now: float):
        q = self._q
        if not q:
            return None
        pkt = q[0]
        size = pkt.size
        elapsed = now - self.t_c
        if elapsed > self.buffer:
            elapsed = self.buffer
        ptoks = 0.0
        if self.peak_Bps:
            ptoks = elapsed + self.ptokens
            if ptoks > self.pbuffer:
                ptoks = self.pbuffer
            ptoks -= size * self._psec_per_byte
        toks = elapsed + self.tokens
        if toks > self.buffer:
            toks = self.buffer
        toks -= size * self._sec_per_byte
        if toks >= -1e-12 and ptoks >= -1e-12:
            q.popleft()
            self.t_c = now
            self.tokens = toks
            self.ptokens = ptoks
            st = self.stats
            st.qlen -= 1
            st.backlog -= size
            st.packets += 1
            st.bytes += size
            self._wake = None
            return pkt
        self._wake = now + max(-toks, -ptoks)
        self.stats.overlimits += 1
        return None

    def next_wakeup(self, now: float):
        if not self._q:
            return None
        if self._wake is None or self._wake < now:
            return now
        return self._wake
