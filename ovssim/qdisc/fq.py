"""fq: Fair Queue packet scheduler with pacing (Linux ``net/sched/sch_fq.c``).

The qdisc BBR is usually paired with.  What it models:

* One queue per flow (a socket: here a flow key), at most ``flow_limit`` packets (100);
  the qdisc holds at most ``limit`` packets (10000) -- beyond either the packet is dropped.
* Deficit round robin over the flows with ``quantum`` bytes (2 x psched_mtu); a flow that
  becomes active -- new, or idle longer than ``refill_delay`` (40 ms) -- starts with
  ``initial_quantum`` (10 x psched_mtu) of credit and is served from the *new flows* list
  before the old ones (``fq_enqueue``/``fq_dequeue``).
* Pacing by earliest departure time (EDT, since 4.20): a packet whose ``tstamp`` (set by
  a paced TCP sender, ``tcp_update_skb_after_send``) is in the future waits in its flow,
  and the flow is throttled until then; a packet more than ``horizon`` (10 s) ahead is
  dropped (``horizon_drop``).  Packets without a timestamp are paced only by ``maxrate``
  (``flow_max_rate``): the flow's next packet waits ``len / maxrate`` (at least a quantum's
  worth when above ``low_rate_threshold``).
* ``next_wakeup`` is the earliest throttled flow's time (the qdisc watchdog).

Not modelled: the three priority bands of 6.7+ (all traffic is in band 1 here, as with the
default priomap for priority 0), the fast path for unthrottled flows (same order), CE
marking (``ce_threshold``), ``timer_slack``, hashing of orphaned packets into 1024
pseudo-flows (each flow key is its own flow).
"""
from __future__ import annotations

from bisect import insort
from collections import deque

from .base import Device, Qdisc
from . import classify, defaults

INF = float("inf")


class _Flow:
    __slots__ = ("q", "credit", "time_next", "age", "where", "key")

    def __init__(self, key):
        self.key = key
        self.q: deque = deque()       # (time_to_send, seq, pkt) in time order
        self.credit = 0
        self.time_next = 0.0          # f->time_next_packet
        self.age = -INF               # when it last became idle (detached)
        self.where = None             # "new", "old", "throttled" or None (detached)


class Fq(Qdisc):
    kind = "fq"
    PARAMS = {"limit": classify.whole, "flow_limit": classify.whole, "quantum": classify.size_int,
              "initial_quantum": classify.size_int, "maxrate": classify.rate,
              "refill_delay": classify.time, "horizon": classify.time, "horizon_drop": classify.flag,
              "low_rate_threshold": classify.rate}

    def __init__(self, limit: int = defaults.FQ_LIMIT, flow_limit: int = defaults.FQ_FLOW_LIMIT,
                 quantum: int | None = None, initial_quantum: int | None = None,
                 maxrate: float | None = None, refill_delay: float = defaults.FQ_REFILL_DELAY,
                 horizon: float = defaults.FQ_HORIZON, horizon_drop: bool = True,
                 low_rate_threshold: float = defaults.FQ_LOW_RATE_THRESHOLD, name: str | None = None):
        super().__init__(name)
        chk = self._check
        chk(limit >= 1, f"fq limit must be >= 1 packet, got {limit}", "qdisc.limit", "e.g. limit = 10000")
        chk(flow_limit >= 1, f"fq flow_limit must be >= 1 packet, got {flow_limit}", "qdisc.flow_limit",
            "e.g. flow_limit = 100")
        chk(quantum is None or quantum >= 1, f"fq quantum must be >= 1 byte, got {quantum}", "qdisc.quantum",
            "leave it out for 2 x MTU")
        chk(maxrate is None or maxrate > 0, f"fq maxrate must be > 0, got {maxrate}", "qdisc.maxrate",
            'e.g. maxrate = "10mbit"')
        self.limit = limit
        self.flow_limit = flow_limit
        self._quantum_given, self._iq_given = quantum, initial_quantum
        self.quantum = quantum or 2 * defaults.PSCHED_MTU
        self.initial_quantum = initial_quantum or 10 * defaults.PSCHED_MTU
        self.maxrate = maxrate / 8 if maxrate else None        # bytes/s
        self.refill_delay = refill_delay
        self.horizon = horizon
        self.horizon_drop = horizon_drop
        self.low_rate_threshold = low_rate_threshold / 8
        self.flows: dict = {}
        self.new_flows: deque[_Flow] = deque()
        self.old_flows: deque[_Flow] = deque()
        self.throttled: list = []            # sorted (time_next, id, flow)
        self._seq = 0
        # tc -s qdisc show dev X (fq): counters beyond the base ones
        self.flows_plimit = 0
        self.horizon_drops = 0
        self.throttled_count = 0

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        if self._quantum_given is None:
            self.quantum = 2 * dev.psched_mtu
        if self._iq_given is None:
            self.initial_quantum = 10 * dev.psched_mtu

    # -- enqueue ------------------------------------------------------------------------
    def enqueue(self, pkt, now: float) -> bool:
        self.stats.arrivals += 1
        if self.stats.qlen >= self.limit:
            self.drop(pkt, now, "limit")
            return False
        t = pkt.tstamp
        if t > now + self.horizon:
            if self.horizon_drop:
                self.horizon_drops += 1
                self.drop(pkt, now, "horizon")
                return False
            t = now + self.horizon
        if t < now:
            t = now
        f = self.flows.get(pkt.flow)
        if f is None:
            f = self.flows[pkt.flow] = _Flow(pkt.flow)
        if len(f.q) >= self.flow_limit:
            self.flows_plimit += 1
            self.drop(pkt, now, "flow_limit")
            return False
        if f.where is None:
            # a new or long-idle flow starts with the initial quantum (fq_enqueue)
            if now - f.age > self.refill_delay:
                f.credit = max(f.credit, self.initial_quantum)
            f.where = "new"
            self.new_flows.append(f)
        self._seq += 1
        item = (t, self._seq, pkt)
        if not f.q or f.q[-1][0] <= t:
            f.q.append(item)
        else:
            insort(f.q, item)                   # an out-of-order EDT: the flow's rb-tree
        self._accounted_in(pkt, now)
        return True

    # -- dequeue ------------------------------------------------------------------------
    def _unthrottle(self, now: float) -> None:
        """``fq_check_throttled``: flows whose time has come go back to the old list."""
        th = self.throttled
        while th and th[0][0] <= now:
            _, _, f = th.pop(0)
            f.where = "old"
            self.old_flows.append(f)

    def dequeue(self, now: float):
        self._unthrottle(now)
        while True:
            if self.new_flows:
                head, f = self.new_flows, self.new_flows[0]
            elif self.old_flows:
                head, f = self.old_flows, self.old_flows[0]
            else:
                return None
            if f.credit <= 0:
                f.credit += self.quantum
                head.popleft()
                f.where = "old"
                self.old_flows.append(f)
                continue
            if not f.q:
                head.popleft()
                if head is self.new_flows and self.old_flows:
                    f.where = "old"             # keep its place a round (fq_dequeue)
                    self.old_flows.append(f)
                else:
                    f.where = None
                    f.age = now
                continue
            t_send = f.q[0][0]
            if f.time_next > t_send:
                t_send = f.time_next
            if now < t_send:
                head.popleft()
                f.where = "throttled"
                f.time_next = t_send
                self.throttled_count += 1
                self._seq += 1
                insort(self.throttled, (t_send, self._seq, f))
                continue
            _, _, pkt = f.q.popleft()
            plen = pkt.size
            f.credit -= plen
            if self.maxrate is not None:
                rate = self.maxrate
                if not pkt.tstamp:
                    if rate <= self.low_rate_threshold:
                        f.credit = 0
                    else:
                        plen = max(plen, self.quantum)
                        if f.credit > 0:
                            return self._accounted_out(pkt)
                delay = plen / rate
                if delay > 1.0:
                    delay = 1.0
                f.time_next = now + delay
            return self._accounted_out(pkt)

    def next_wakeup(self, now: float) -> float | None:
        if self.new_flows or self.old_flows or not self.throttled:
            return None
        return self.throttled[0][0]
