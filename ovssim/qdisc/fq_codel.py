"""fq_codel: Fair Queueing with CoDel (Linux ``net/sched/sch_fq_codel.c``, RFC 8290).

Packets are hashed into ``flows`` queues (1024).  A queue that becomes
active joins the *new flows* list with a deficit of one ``quantum`` (1514);
dequeue serves new flows before old ones, deficit round robin: a flow whose
deficit is spent gets another quantum and moves to the tail of the old
list.  Each flow's head goes through CoDel (:mod:`codel_core`; target 5 ms,
interval 100 ms, ECN on by default, the MTU guard on the *whole* qdisc
backlog as the kernel passes ``sch->qstats.backlog``).  A flow found empty
moves from the new list to the old one (so a sparse flow cannot starve the
others) and is forgotten when found empty on the old list.

When more than ``limit`` packets (10240) are queued, or the packets' memory
(``skb->truesize``) passes ``memory_limit`` (32 MB), the fattest flow (most
bytes) loses packets from its head: up to ``drop_batch_size`` (64) or until
half its backlog is gone; its CoDel ``count`` is raised by the number dropped.
"""
from __future__ import annotations

from collections import deque

from .base import Device, Qdisc
from . import classify, defaults
from .codel_core import CodelParams, CodelStats, CodelVars, codel_dequeue


class _Flow:
    __slots__ = ("q", "deficit", "cvars", "backlog", "listed", "dropped", "idx")

    def __init__(self, idx: int):
        self.q: deque = deque()
        self.deficit = 0
        self.cvars = CodelVars()
        self.backlog = 0
        self.listed = False       # on new_flows or old_flows
        self.dropped = 0
        self.idx = idx


class FqCodel(Qdisc):
    kind = "fq_codel"
    PARAMS = {"limit": classify.whole, "flows": classify.whole, "quantum": classify.size_int,
              "target": classify.time, "interval": classify.time, "ecn": classify.flag,
              "ce_threshold": classify.time, "memory_limit": classify.size_int,
              "drop_batch": classify.whole, "drop_batch_size": classify.whole, "seed": classify.whole}

    def __init__(self, limit: int = defaults.FQ_CODEL_LIMIT, flows: int = defaults.FQ_CODEL_FLOWS,
                 quantum: int | None = None, target: float = defaults.CODEL_TARGET,
                 interval: float = defaults.CODEL_INTERVAL, ecn: bool = defaults.FQ_CODEL_ECN,
                 ce_threshold: float | None = None, memory_limit: int = defaults.FQ_CODEL_MEMORY_LIMIT,
                 drop_batch: int | None = None, drop_batch_size: int = defaults.FQ_CODEL_DROP_BATCH,
                 seed: int = 0, name: str | None = None):
        super().__init__(name)
        chk = self._check
        chk(1 <= flows <= defaults.FQ_CODEL_MAX_FLOWS, f"fq_codel flows must be 1..65536, got {flows}",
            "qdisc.flows", "use e.g. flows = 1024")
        chk(limit >= 1, f"fq_codel limit must be >= 1 packet, got {limit}", "qdisc.limit",
            "use e.g. limit = 10240")
        chk(target > 0, f"fq_codel target must be > 0, got {target}", "qdisc.target", "write e.g. '5ms'")
        chk(interval > 0, f"fq_codel interval must be > 0, got {interval}", "qdisc.interval", "write e.g. '100ms'")
        chk(memory_limit >= 1, f"fq_codel memory_limit must be >= 1 byte, got {memory_limit}",
            "qdisc.memory_limit", "write e.g. '32mb'")
        if drop_batch is not None:
            drop_batch_size = drop_batch
        chk(drop_batch_size >= 1, f"fq_codel drop_batch must be >= 1, got {drop_batch_size}",
            "qdisc.drop_batch", "use e.g. 64")
        self.limit = limit
        self.flows_cnt = flows
        self._quantum_given = quantum
        self.quantum = max(defaults.FQ_CODEL_QUANTUM_MIN, quantum) if quantum else defaults.PSCHED_MTU
        self.memory_limit = min(memory_limit, 1 << 31)
        self.drop_batch_size = drop_batch_size
        self.params = CodelParams(target, interval, defaults.PSCHED_MTU, ecn, ce_threshold)
        self.cstats = CodelStats()
        self.hasher = classify.FlowHasher(flows, seed)
        self.flows: dict[int, _Flow] = {}
        self.active: dict[_Flow, None] = {}     # flows holding packets (for the fat-flow search)
        self.new_flows: deque[_Flow] = deque()
        self.old_flows: deque[_Flow] = deque()
        self.memory_usage = 0
        self.drop_overlimit = 0
        self.drop_overmemory = 0
        self.new_flow_count = 0
        self._cur: _Flow | None = None
        self._now = 0.0

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        self.params.mtu = dev.psched_mtu
        if self._quantum_given is None:
            self.quantum = dev.psched_mtu

    # -- enqueue ----------------------------------------------------------------------
    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        idx = self.hasher.bucket(pkt.flow)
        flow = self.flows.get(idx)
        if flow is None:
            flow = self.flows[idx] = _Flow(idx)
        flow.q.append(pkt)
        size = pkt.size
        if not flow.backlog:
            self.active[flow] = None
        flow.backlog += size
        st.backlog += size
        st.qlen += 1
        pkt.enqueued_at = now
        if not flow.listed:
            flow.listed = True
            self.new_flows.append(flow)
            self.new_flow_count += 1
            flow.deficit = self.quantum
        self.memory_usage += size + defaults.SKB_TRUESIZE_OVERHEAD
        memory_limited = self.memory_usage > self.memory_limit
        if st.qlen <= self.limit and not memory_limited:
            return True
        fat = self._drop_fattest(now)
        if memory_limited:
            self.drop_overmemory += 1
        return fat is not flow

    def _drop_fattest(self, now: float):
        flow = max(self.active, key=_backlog_of)
        threshold = flow.backlog >> 1
        q = flow.q
        dropped_len = 0
        i = 0
        while True:
            pkt = q.popleft()
            dropped_len += pkt.size
            self.memory_usage -= pkt.size + defaults.SKB_TRUESIZE_OVERHEAD
            self.drop(pkt, now, "overlimit", queued=True)
            i += 1
            if i >= self.drop_batch_size or dropped_len >= threshold or not q:
                break
        flow.cvars.count += i
        flow.dropped += i
        flow.backlog -= dropped_len
        if not flow.backlog:
            del self.active[flow]
        self.drop_overlimit += i
        return flow

    # -- dequeue --------------------------------------------------------------------------
    def _pop(self):
        flow = self._cur
        q = flow.q
        if not q:
            return None
        pkt = q.popleft()
        size = pkt.size
        flow.backlog -= size
        if not flow.backlog:
            del self.active[flow]
        self.memory_usage -= size + defaults.SKB_TRUESIZE_OVERHEAD
        st = self.stats
        st.qlen -= 1
        st.backlog -= size
        return pkt

    def _drop(self, pkt) -> None:
        self._cur.dropped += 1
        self.drop(pkt, self._now, "codel")

    def dequeue(self, now: float):
        new, old = self.new_flows, self.old_flows
        self._now = now
        while True:
            if new:
                head = new
            elif old:
                head = old
            else:
                return None
            flow = head[0]
            if flow.deficit <= 0:
                flow.deficit += self.quantum
                head.popleft()
                old.append(flow)
                continue
            self._cur = flow
            marks = self.cstats.ecn_mark
            pkt = codel_dequeue(flow.cvars, self.params, self.cstats, self.stats, now, self._pop, self._drop)
            if self.cstats.ecn_mark != marks:
                self.stats.ecn_marks += self.cstats.ecn_mark - marks
            if pkt is None:
                head.popleft()
                if head is new and old:
                    old.append(flow)           # force a pass through old_flows
                else:
                    flow.listed = False
                continue
            flow.deficit -= pkt.size
            st = self.stats
            st.packets += 1
            st.bytes += pkt.size
            return pkt


def _backlog_of(flow: _Flow) -> int:
    return flow.backlog
