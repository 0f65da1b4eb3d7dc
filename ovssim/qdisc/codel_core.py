"""The CoDel state machine shared by ``codel`` and ``fq_codel``.

Follows ``include/net/codel.h`` and ``include/net/codel_impl.h`` (RFC 8289):

* ``should_drop``: the sojourn time of the head packet (now - enqueue time)
  is above ``target`` and more than one MTU is still queued; once that has
  lasted ``interval``, it is "ok to drop".
* dropping state: the next drop is due at ``drop_next``; each drop raises
  ``count`` and schedules ``drop_next += interval / sqrt(count)`` (the control
  law), with 1/sqrt(count) kept by the kernel's 16-bit fixed-point Newton step.
* entering dropping again soon after leaving it (``now - drop_next <
  16 * interval``) resumes with ``count = count - lastcount`` instead of 1.
* with ``ecn`` an ECN-capable packet is CE-marked instead of dropped.

Times are floats in seconds; the kernel counts in 1.024 us units, a
difference far below anything the simulation resolves.
"""
from __future__ import annotations

_SHIFT = 16                     # REC_INV_SQRT_SHIFT = 32 - REC_INV_SQRT_BITS
_U64 = (1 << 64) - 1
_REC_ONE = 0xFFFF               # ~0U >> REC_INV_SQRT_SHIFT: 1/sqrt(1)
_SCALE = 1.0 / (1 << 32)


def newton_step(count: int, rec_inv_sqrt: int) -> int:
    """One fixed-point Newton iteration of 1/sqrt(count) (``codel_Newton_step``)."""
    invsqrt = (rec_inv_sqrt << _SHIFT) & 0xFFFFFFFF
    invsqrt2 = (invsqrt * invsqrt) >> 32
    val = ((3 << 32) - count * invsqrt2) & _U64
    val >>= 2
    val = ((val * invsqrt) >> (32 - 2 + 1)) & _U64
    return (val >> _SHIFT) & 0xFFFF


def control_law(t: float, interval: float, rec_inv_sqrt: int) -> float:
    """``t + interval / sqrt(count)`` with the kernel's reciprocal (``codel_control_law``)."""
    return t + interval * ((rec_inv_sqrt << _SHIFT) * _SCALE)


class CodelParams:
    __slots__ = ("target", "interval", "mtu", "ecn", "ce_threshold")

    def __init__(self, target: float, interval: float, mtu: int, ecn: bool,
                 ce_threshold: float | None = None):
        self.target = target
        self.interval = interval
        self.mtu = mtu
        self.ecn = ecn
        self.ce_threshold = ce_threshold


class CodelVars:
    """Per-queue CoDel state (``struct codel_vars``)."""
    __slots__ = ("count", "lastcount", "dropping", "rec_inv_sqrt", "first_above_time",
                 "drop_next", "ldelay")

    def __init__(self):
        self.count = 0
        self.lastcount = 0
        self.dropping = False
        self.rec_inv_sqrt = 0
        self.first_above_time = 0.0
        self.drop_next = 0.0
        self.ldelay = 0.0


class CodelStats:
    __slots__ = ("drop_count", "drop_len", "ecn_mark", "ce_mark", "maxpacket")

    def __init__(self):
        self.drop_count = 0
        self.drop_len = 0
        self.ecn_mark = 0
        self.ce_mark = 0
        self.maxpacket = 0


def _should_drop(pkt, v: CodelVars, p: CodelParams, cs: CodelStats, backlog: int, now: float) -> bool:
    if pkt is None:
        v.first_above_time = 0.0
        return False
    v.ldelay = now - pkt.enqueued_at
    if pkt.size > cs.maxpacket:
        cs.maxpacket = pkt.size
    if v.ldelay < p.target or backlog <= p.mtu:
        v.first_above_time = 0.0
        return False
    if v.first_above_time == 0.0:
        v.first_above_time = now + p.interval
        return False
    return now > v.first_above_time


def _set_ce(pkt) -> bool:
    """``INET_ECN_set_ce``: ECT(0)/ECT(1) become CE; CE stays CE; not-ECT cannot be marked."""
    if pkt.ecn:
        pkt.ecn = 3
        return True
    return False


def codel_dequeue(v: CodelVars, p: CodelParams, cs: CodelStats, stats, now: float, pop, drop):
    """One CoDel dequeue.  ``pop()`` removes the head packet (and its backlog from
    ``stats.backlog``) or returns None; ``drop(pkt)`` discards a popped packet."""
    pkt = pop()
    if pkt is None:
        v.dropping = False
        return None
    ok = _should_drop(pkt, v, p, cs, stats.backlog, now)
    if v.dropping:
        if not ok:
            v.dropping = False
        elif now >= v.drop_next:
            while v.dropping and now >= v.drop_next:
                v.count += 1
                v.rec_inv_sqrt = newton_step(v.count, v.rec_inv_sqrt)
                if p.ecn and _set_ce(pkt):
                    cs.ecn_mark += 1
                    v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt)
                    return _ce_threshold(pkt, v, p, cs)
                cs.drop_len += pkt.size
                cs.drop_count += 1
                drop(pkt)
                pkt = pop()
                if not _should_drop(pkt, v, p, cs, stats.backlog, now):
                    v.dropping = False
                else:
                    v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt)
    elif ok:
        if p.ecn and _set_ce(pkt):
            cs.ecn_mark += 1
        else:
            cs.drop_len += pkt.size
            cs.drop_count += 1
            drop(pkt)
            pkt = pop()
            _should_drop(pkt, v, p, cs, stats.backlog, now)
        v.dropping = True
        delta = (v.count - v.lastcount) & 0xFFFFFFFF
        if delta > 1 and now - v.drop_next < 16 * p.interval:
            v.count = delta
            v.rec_inv_sqrt = newton_step(v.count, v.rec_inv_sqrt)
        else:
            v.count = 1
            v.rec_inv_sqrt = _REC_ONE
        v.lastcount = v.count
        v.drop_next = control_law(now, p.interval, v.rec_inv_sqrt)
    if pkt is not None and p.ce_threshold is not None:
        return _ce_threshold(pkt, v, p, cs)
    return pkt


def _ce_threshold(pkt, v, p, cs):
    if p.ce_threshold is not None and v.ldelay > p.ce_threshold and _set_ce(pkt):
        cs.ce_mark += 1
    return pkt
