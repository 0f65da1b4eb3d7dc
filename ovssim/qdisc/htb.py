"""htb: Hierarchical Token Bucket (Linux ``net/sched/sch_htb.c``, ``tc-htb(8)``).

A tree of classes, each with two token buckets kept as time, as the kernel
does: ``rate`` with ``burst`` (its guarantee) and ``ceil`` with ``cburst``
(its limit).  A class's mode follows ``htb_class_mode``:

* ``CANT_SEND`` -- the ceil bucket is empty;
* ``CAN_SEND``  -- the rate bucket holds tokens;
* ``MAY_BORROW`` -- over its rate but under its ceil: it may send on tokens
  its parent lends (if the parent is ``CAN_SEND``), or its grandparent, ...

Dequeue serves the lowest *level* at which a leaf can send (level 0: the
leaf sends on its own rate; level L: an ancestor of level L lends), then the
lowest ``prio`` number, and among those leaves round robin by class id with
a deficit of ``quantum`` bytes per turn (``rate / r2q`` clamped to
1000..200000 unless given).  Sending charges every class on the path:
classes at or above the lender spend rate tokens, those below only record
the borrow; everyone spends ceil tokens (``htb_charge_class``).  Leaves
root classes are level 7 and their inner children 6, 5, ... as the kernel
numbers them.  When nothing may send, ``next_wakeup`` is the earliest time a
blocked class changes mode (the kernel's wait queue and watchdog).

A leaf whose child qdisc drops inside its dequeue (CoDel, FQ-CoDel) and is
left empty leaves the active set at once, whether or not the child handed a
packet out: what ``htb_qlen_notify`` -> ``htb_deactivate`` does when the
child calls ``qdisc_tree_reduce_backlog`` (``dequeue`` checks the child's
qlen after every call, so no notify hook is needed here).

``overlimits`` (``tc -s qdisc``) counts the classes' changes to ``CANT_SEND``: ``htb_change_class_mode``
increments ``cl->overlimits`` and ``q->overlimits``, which ``htb_dump`` reports as the qdisc's (since Linux
5.2, "sch_htb: redefine htb qdisc overlimits"; before, ``htb_dequeue`` counted every dequeue that found
nothing to send).  A class kept one frame behind its bucket counts one per packet, however many arrivals
asked in between; a packet sent on a bucket that had refilled by a whole frame (a dequeue at least a frame
time late) counts none.

Packets pick a leaf by OVS ``set_queue`` / ``skb->priority`` (class id); a
packet matching no leaf goes to the ``default`` class, and if that is
missing, to the unshaped direct queue (``direct_qlen`` packets).

Approximation: round robin among borrowers is per (level, prio) by class id,
which is exact for the two-level trees Open vSwitch builds; deeper trees
with several inner classes lending at the same level interleave slightly
differently from the kernel's per-parent feed pointers.
"""
from __future__ import annotations

from collections import deque

from ..errors import ConfigError
from .base import Device, Qdisc
from . import classful, classify, defaults

CAN_SEND, MAY_BORROW, CANT_SEND = 0, 1, 2
MODE_NAMES = ("CAN_SEND", "MAY_BORROW", "CANT_SEND")
_MBUFFER = defaults.HTB_MAX_BUFFER
# Float rounding allowance for a bucket's level (seconds), a tenth of the kernel's 1 ns clock: the kernel's
# integer ns arithmetic changes a class's mode exactly at the event time it computed (htb_do_events at
# pq_key); in floats the level recomputed at that time could be 1 ulp short, and the class sent only after
# one more watchdog, 1 ns later (a third of the watchdogs in bench_batching).
_TOL = 1e-10


class HtbClass:
    __slots__ = ("classid", "parent", "children", "level", "rate", "ceil", "buffer", "cbuffer",
                 "quantum", "prio", "tokens", "ctokens", "t_c", "leaf", "deficit", "spec_qdisc",
                 "lends", "borrows", "overlimits", "bytes", "packets", "spr", "spc")

    def __init__(self, classid: int, rate: float, ceil: float, burst: float, cburst: float,
                 quantum: int, prio: int, spec_qdisc=None):
        self.classid = classid
        self.parent: HtbClass | None = None
        self.children: list[HtbClass] = []
        self.level = 0
        self.rate = rate / 8.0            # bytes/s
        self.ceil = ceil / 8.0
        self.spr = 1.0 / self.rate        # seconds per byte
        self.spc = 1.0 / self.ceil
        self.buffer = burst * self.spr    # bucket sizes in seconds (tc_calc_xmittime)
        self.cbuffer = cburst * self.spc
        self.quantum = quantum
        self.prio = prio
        self.tokens = self.buffer
        self.ctokens = self.cbuffer
        self.t_c = 0.0
        self.leaf: classful.Leaf | None = None
        self.deficit = [0] * defaults.HTB_MAXDEPTH
        self.spec_qdisc = spec_qdisc
        self.lends = 0
        self.borrows = 0
        self.overlimits = 0
        self.bytes = 0
        self.packets = 0

    def mode(self, now: float) -> int:
        """``htb_class_mode`` (hysteresis off, the kernel default)."""
        diff = now - self.t_c
        if diff > _MBUFFER:
            diff = _MBUFFER
        if self.ctokens + diff < -_TOL:
            return CANT_SEND
        if self.tokens + diff >= -_TOL:
            return CAN_SEND
        return MAY_BORROW

    def change_time(self, now: float) -> float:
        """When this class leaves its current (non CAN_SEND) mode."""
        diff = min(now - self.t_c, _MBUFFER)
        ct = self.ctokens + diff
        if ct < -_TOL:
            return now - ct
        return now - (self.tokens + diff)


class Htb(Qdisc):
    kind = "htb"
    PARAMS = {"default": lambda v: v, "r2q": classify.whole, "direct_qlen": classify.whole,
              "handle": lambda v: v, "classes": lambda v: v}
    CLASS_KEYS = {"classid", "parent", "rate", "ceil", "burst", "cburst", "quantum", "prio", "qdisc"}

    def __init__(self, classes=None, default=0, r2q: int = defaults.HTB_R2Q,
                 direct_qlen: int | None = None, handle="1:", name: str | None = None):
        super().__init__(name)
        kind = self.kind
        try:
            self.handle = classify.parse_classid(handle) & 0xFFFF0000
        except ValueError as exc:
            raise ConfigError(f"htb: bad handle: {exc}", key="qdisc.handle", fix="write e.g. handle = '1:'") from None
        self.major = self.handle >> 16
        self._check(r2q >= 1, f"htb r2q must be >= 1, got {r2q}", "qdisc.r2q", "use the default 10")
        self.r2q = r2q
        # tc parses "default" as a hexadecimal minor; an int is taken as the minor itself
        if isinstance(default, str):
            try:
                default = int(default.split(":")[-1] or "0", 16)
            except ValueError:
                raise ConfigError(f"htb default {default!r} is not a class minor", key="qdisc.default",
                                  fix="write e.g. default = '1' or '1:10' (hex, as tc)") from None
        self.defcls = int(default)
        self._direct_qlen_given = direct_qlen
        self.direct_qlen = direct_qlen if direct_qlen is not None else defaults.TXQUEUELEN
        self.direct: deque = deque()
        self.direct_packets = 0
        self.classes: dict[int, HtbClass] = {}
        for c in classful.class_table(kind, classes):
            self._add_class(c)
        self._link()
        self.active: dict[HtbClass, None] = {}
        self._ptr: dict[tuple, int] = {}
        self._leaves_sorted = sorted((c for c in self.classes.values() if not c.children),
                                     key=lambda c: c.classid)
        for c in self._leaves_sorted:
            c.leaf = classful.Leaf(self, classful.make_child(c.spec_qdisc, self.dev))
        self._wake: float | None = None
        # the kernel's near_ev_cache: until this time no active class can change mode (every one was
        # throttled when it was computed, and no class was charged or activated since)
        self._near_ev = -1.0

    # -- configuration ----------------------------------------------------------------
    def _add_class(self, c: dict) -> None:
        kind = self.kind
        classful.check_keys(kind, c, self.CLASS_KEYS)
        if "classid" not in c:
            raise ConfigError("htb class without classid", key="qdisc.classes.classid",
                              fix="give each class a classid such as '1:10'")
        cid = classful.parse_cid(kind, c["classid"], "classid")
        if cid >> 16 != self.major or not cid & 0xFFFF:
            raise ConfigError(f"htb class {classify.fmt_classid(cid)} must be {self.major:x}:<minor> "
                              f"with a non-zero minor", key="qdisc.classes.classid",
                              fix=f"class ids take the qdisc's major, e.g. '{self.major:x}:10'")
        if cid in self.classes:
            raise ConfigError(f"htb class {classify.fmt_classid(cid)} is defined twice",
                              key="qdisc.classes.classid", fix="give each class its own classid")
        rate = classful.class_key(kind, c, "rate", classify.rate, required=True)
        ceil = classful.class_key(kind, c, "ceil", classify.rate, default=rate)
        if not rate > 0:
            raise ConfigError(f"htb class {c['classid']}: rate must be > 0", key="qdisc.classes.rate",
                              fix="write e.g. rate = '10mbit'")
        if ceil < rate:
            raise ConfigError(f"htb class {c['classid']}: ceil ({ceil:.0f} bit/s) is below rate ({rate:.0f} bit/s)",
                              key="qdisc.classes.ceil", fix="make ceil >= rate, or leave ceil out (= rate)")
        # tc/q_htb.c: buffer = rate / HZ + mtu (bytes), same for cbuffer with ceil
        burst = classful.class_key(kind, c, "burst", classify.size_int,
                                   default=rate / 8.0 / defaults.HTB_HZ + defaults.HTB_MTU)
        cburst = classful.class_key(kind, c, "cburst", classify.size_int,
                                    default=ceil / 8.0 / defaults.HTB_HZ + defaults.HTB_MTU)
        if not burst > 0 or not cburst > 0:
            raise ConfigError(f"htb class {c['classid']}: burst and cburst must be > 0 bytes",
                              key="qdisc.classes.burst", fix="give at least one MTU, e.g. burst = '15k'")
        quantum = classful.class_key(kind, c, "quantum", classify.size_int)
        if quantum is None:
            quantum = int(rate / 8.0 / self.r2q)
            quantum = min(max(quantum, defaults.HTB_QUANTUM_MIN), defaults.HTB_QUANTUM_MAX)
        elif quantum < 1:
            raise ConfigError(f"htb class {c['classid']}: quantum must be >= 1 byte",
                              key="qdisc.classes.quantum", fix="leave it out to use rate / r2q")
        prio = classful.class_key(kind, c, "prio", classify.whole, default=defaults.HTB_DEFAULT_PRIO)
        if not 0 <= prio < defaults.HTB_NUMPRIO:
            raise ConfigError(f"htb class {c['classid']}: prio {prio} is outside 0..7",
                              key="qdisc.classes.prio", fix="use 0 (highest) .. 7")
        parent = c.get("parent")
        pid = None if parent in (None, "root") else classful.parse_cid(kind, parent, "parent")
        if pid is not None and pid & 0xFFFF == 0:
            pid = None                     # "1:" is the qdisc itself
        cl = HtbClass(cid, rate, ceil, burst, cburst, quantum, prio, c.get("qdisc"))
        cl.parent = pid                    # resolved in _link
        self.classes[cid] = cl

    def _link(self) -> None:
        for cl in self.classes.values():
            pid = cl.parent
            if pid is None:
                continue
            parent = self.classes.get(pid)
            if parent is None:
                raise ConfigError(f"htb class {classify.fmt_classid(cl.classid)}: parent "
                                  f"{classify.fmt_classid(pid)} does not exist", key="qdisc.classes.parent",
                                  fix="define the parent class, or use parent = '1:' for a root class")
            cl.parent = parent
            parent.children.append(cl)
        for cl in self.classes.values():      # cycle check and depth
            seen, p, depth = set(), cl, 0
            while p is not None:
                if p.classid in seen:
                    raise ConfigError(f"htb classes form a loop at {classify.fmt_classid(p.classid)}",
                                      key="qdisc.classes.parent", fix="each class needs a parent above it")
                seen.add(p.classid)
                p = p.parent
                depth += 1
            if depth > defaults.HTB_MAXDEPTH:
                raise ConfigError(f"htb tree deeper than {defaults.HTB_MAXDEPTH} levels",
                                  key="qdisc.classes", fix="flatten the class tree")

        def set_level(cl, level):
            cl.level = level if cl.children else 0
            for ch in cl.children:
                set_level(ch, level - 1)
        for cl in self.classes.values():
            if cl.parent is None:
                set_level(cl, defaults.HTB_MAXDEPTH - 1)

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        if self._direct_qlen_given is None:
            self.direct_qlen = max(1, dev.txqueuelen)
        for c in self._leaves_sorted:
            c.leaf.q.attach(dev)

    def _child_dropped(self, pkt, now, reason) -> None:
        if self.on_drop is not None:
            self.on_drop(pkt, now, reason)

    # -- classification (htb_classify) -----------------------------------------------------
    def classify(self, pkt) -> HtbClass | None:
        if pkt.priority == self.handle and pkt.queue_id is None:
            return None
        cid = classify.packet_classid(pkt, self.major)
        if cid is not None:
            cl = self.classes.get(cid)
            if cl is not None and not cl.children:
                return cl
        cl = self.classes.get(self.handle | self.defcls)
        if cl is None or cl.children:
            return None
        return cl

    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        cl = self.classify(pkt)
        if cl is None:
            if len(self.direct) >= self.direct_qlen:
                self.drop(pkt, now, "direct_qlen")
                return False
            self.direct.append(pkt)
            self._near_ev = -1.0
            st.qlen += 1
            st.backlog += pkt.size
            pkt.enqueued_at = now
            return True
        ok = cl.leaf.enqueue(pkt, now)
        if cl.leaf.qlen and cl not in self.active:
            self.active[cl] = None          # htb_activate: a new class in the rows, the cache is stale
            self._near_ev = -1.0
        return ok

    # -- dequeue ---------------------------------------------------------------------------
    @staticmethod
    def _lender_level(cl: HtbClass, now: float) -> int:
        """Level of the class whose tokens let leaf ``cl`` send now, or -1 (modes inlined)."""
        c = cl
        while c is not None:
            diff = now - c.t_c
            if diff > _MBUFFER:
                diff = _MBUFFER
            if c.ctokens + diff < -_TOL:
                return -1                   # CANT_SEND
            if c.tokens + diff >= -_TOL:
                return c.level              # CAN_SEND
            c = c.parent                    # MAY_BORROW: ask the parent
        return -1

    def dequeue(self, now: float):
        st = self.stats
        if self.direct:
            pkt = self.direct.popleft()
            st.qlen -= 1
            st.backlog -= pkt.size
            st.packets += 1
            st.bytes += pkt.size
            self.direct_packets += 1
            return pkt
        if now < self._near_ev:
            # htb_dequeue before the next class event (q->now < near_ev_cache, an empty row mask):
            # nothing can send, and the watchdog already waits for that event
            return None
        active = self.active
        lender = self._lender_level
        while active:
            if len(active) == 1:
                for cl in active:
                    pass
                level = lender(cl, now)
                if level < 0:
                    return self._throttled(now)
                best = (level, cl.prio)
            else:
                levels = {}
                best = None
                for c in active:
                    lvl = lender(c, now)
                    if lvl < 0:
                        continue
                    levels[c] = lvl
                    key = (lvl, c.prio)
                    if best is None or key < best:
                        best = key
                if best is None:
                    return self._throttled(now)
                level, prio = best
                ptr = self._ptr.get(best, 0)
                cl = first = None
                for c in self._leaves_sorted:          # round robin by class id from the pointer
                    if levels.get(c) == level and c.prio == prio:
                        if first is None:
                            first = c
                        if c.classid >= ptr:
                            cl = c
                            break
                if cl is None:
                    cl = first
            leaf = cl.leaf
            pkt = leaf.dequeue(now)
            if pkt is None:                # a child that holds packets but would not send
                if not leaf.qlen:
                    del active[cl]
                    continue
                self._ptr[best] = cl.classid + 1
                self._wake = now + 1e-6
                self._near_ev = -1.0
                return None
            if not leaf.qlen:
                del active[cl]
            size = pkt.size
            d = cl.deficit[level] - size
            if d < 0:
                d += cl.quantum
                self._ptr[best] = cl.classid + 1
            else:
                self._ptr[best] = cl.classid
            cl.deficit[level] = d
            self._near_ev = -1.0
            self._charge(cl, level, size, now)
            cl.bytes += size
            cl.packets += 1
            return pkt
        return None

    def _throttled(self, now: float):
        w = self._next_event(now)
        # no class changes mode before w: dequeues until then can skip the search
        self._near_ev = w if w is not None else -1.0
        if w is not None and w < now + 1e-9:      # the kernel's clock is in ns
            w = now + 1e-9
        self._wake = w
        return None

    def _charge(self, cl: HtbClass, level: int, size: int, now: float) -> None:
        """``htb_charge_class``: spend tokens from the leaf up to the root; a class its ceil bucket
        leaves below zero changes to ``CANT_SEND`` and counts an overlimit, its own and the qdisc's."""
        st = self.stats
        c = cl
        while c is not None:
            diff = now - c.t_c
            if diff > _MBUFFER:
                diff = _MBUFFER
            ctoks = c.ctokens + diff
            was_cant = ctoks < -_TOL       # the mode it was dequeued in (mode(): same tolerance)
            if c.level >= level:
                if c.level == level:
                    c.lends += 1
                toks = c.tokens + diff
                if toks > c.buffer:
                    toks = c.buffer
                toks -= size * c.spr
                if toks <= -_MBUFFER:
                    toks = -_MBUFFER + 1e-9
                c.tokens = toks
            else:
                c.borrows += 1
                c.tokens += diff
            if ctoks > c.cbuffer:
                ctoks = c.cbuffer
            ctoks -= size * c.spc
            if ctoks <= -_MBUFFER:
                ctoks = -_MBUFFER + 1e-9
            c.ctokens = ctoks
            c.t_c = now
            if ctoks < 0 and not was_cant:     # htb_change_class_mode -> HTB_CANT_SEND
                c.overlimits += 1
                st.overlimits += 1
            c = c.parent

    def _next_event(self, now: float) -> float | None:
        """The earliest time an active class (or an ancestor it borrows from) changes mode."""
        t = None
        for cl in self.active:
            c = cl
            while c is not None:
                m = c.mode(now)
                if m == CAN_SEND:
                    break
                w = c.change_time(now)
                if t is None or w < t:
                    t = w
                if m == CANT_SEND:
                    break
                c = c.parent
        return t

    def next_wakeup(self, now: float):
        if not self.stats.qlen:
            return None
        w = self._wake
        if w is None or w < now:
            return now
        return w

    def class_stats(self) -> dict:
        """``tc -s class show``: per class sent bytes/packets, lends, borrows, mode now."""
        out = {}
        for cid, c in sorted(self.classes.items()):
            out[classify.fmt_classid(cid)] = {
                "bytes": c.bytes, "packets": c.packets, "lended": c.lends, "borrowed": c.borrows,
                "overlimits": c.overlimits, "level": c.level,
                "qlen": c.leaf.qlen if c.leaf else 0}
        return out
