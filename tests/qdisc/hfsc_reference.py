"""Frozen reference HFSC: ``ovssim/qdisc/hfsc.py`` as of commit fda1d2f, before it was optimised.

The straightforward model (linear scans over the eligible and virtual-time
sets, as written from ``net/sched/sch_hfsc.c``).  ``test_hfsc_exact.py``
runs it side by side with ``ovssim.qdisc.hfsc`` and requires the same
dequeue order and the same times, float for float.  Do not edit it to
follow changes of the model: a deliberate change of behaviour must change
the recorded traces (``data/hfsc_traces.json``) and this file together.

Deliberate change since fda1d2f (marked "qlen_notify" below): a child qdisc
that drops inside its dequeue/peek and is left empty notifies the class as
the kernel's ``qdisc_tree_reduce_backlog`` -> ``hfsc_qlen_notify`` does
(``update_vf(cl, 0, 0)`` if still active, eltree removal), and the charge
of a packet the child returned does not make the class passive twice.
Only scenarios with codel / fq_codel leaves change.
"""
from __future__ import annotations

import math

from ovssim.errors import ConfigError
from ovssim.qdisc.base import Device, Qdisc
from ovssim.qdisc import classful, classify

_INF = math.inf


class RtSc:
    """A runtime service curve anchored at ``(x, y)`` (``struct runtime_sc``): bytes vs seconds."""
    __slots__ = ("x", "y", "sm1", "dx", "dy", "sm2")

    def __init__(self, sc, x: float = 0.0, y: float = 0.0):
        sm1, d, sm2 = sc
        self.x, self.y = x, y
        self.sm1, self.dx, self.dy, self.sm2 = sm1, d, sm1 * d, sm2

    def copy(self) -> "RtSc":
        r = RtSc.__new__(RtSc)
        r.x, r.y, r.sm1, r.dx, r.dy, r.sm2 = self.x, self.y, self.sm1, self.dx, self.dy, self.sm2
        return r

    def y2x(self, y: float) -> float:
        if y < self.y:
            return self.x
        if y <= self.y + self.dy:
            if self.dy == 0:
                return self.x + self.dx
            return self.x + (y - self.y) / self.sm1
        if self.sm2 <= 0:
            return _INF
        return self.x + self.dx + (y - self.y - self.dy) / self.sm2

    def x2y(self, x: float) -> float:
        if x <= self.x:
            return self.y
        if x <= self.x + self.dx:
            return self.y + (x - self.x) * self.sm1
        return self.y + self.dy + (x - self.x - self.dx) * self.sm2

    def min_with(self, sc, x: float, y: float) -> None:
        """``rtsc_min``: the lower of this curve and ``sc`` started at (x, y)."""
        sm1, d, sm2 = sc
        # y1 = x2y(x), inlined: this runs for every packet that starts a backlog period
        if x <= self.x:
            y1 = self.y
        elif x <= self.x + self.dx:
            y1 = self.y + (x - self.x) * self.sm1
        else:
            y1 = self.y + self.dy + (x - self.x - self.dx) * self.sm2
        if sm1 <= sm2:                       # convex
            if y1 < y:
                return
            self.x, self.y = x, y
            return
        if y1 <= y:                          # concave
            return
        y2 = self.x2y(x + d)
        if y2 >= y + sm1 * d:
            self.x, self.y, self.dx, self.dy = x, y, d, sm1 * d
            return
        dx = (y1 - y) / (sm1 - sm2)
        if self.x + self.dx > x:
            dx += self.x + self.dx - x
        self.x, self.y, self.dx, self.dy = x, y, dx, dx * sm1


class HfscClass:
    __slots__ = ("classid", "parent", "children", "level", "rsc", "fsc", "usc", "deadline",
                 "eligible", "virtual", "ulimit", "cumul", "total", "e", "d", "vt", "vtadj",
                 "vtperiod", "parentperiod", "nactive", "cvtmin", "cvtoff", "f", "myf", "cfmin",
                 "leaf", "in_el", "act", "spec_qdisc", "bytes", "packets")

    def __init__(self, classid: int, rsc=None, fsc=None, usc=None, spec_qdisc=None):
        self.classid = classid
        self.parent: HfscClass | None = None
        self.children: list[HfscClass] = []
        self.level = 0
        self.rsc, self.fsc, self.usc = rsc, fsc, usc
        self.deadline = RtSc(rsc) if rsc else None
        self.eligible = RtSc(rsc) if rsc else None
        self.virtual = RtSc(fsc) if fsc else None
        self.ulimit = RtSc(usc) if usc else None
        self.cumul = 0.0
        self.total = 0.0
        self.e = self.d = 0.0
        self.vt = self.vtadj = 0.0
        self.vtperiod = self.parentperiod = 0
        self.nactive = 0
        self.cvtmin = self.cvtoff = 0.0
        self.f = self.myf = self.cfmin = 0.0
        self.leaf: classful.Leaf | None = None
        self.in_el = False
        self.act: dict[HfscClass, None] = {}    # active children (the vt tree and cf tree)
        self.spec_qdisc = spec_qdisc
        self.bytes = 0
        self.packets = 0


def _curve(kind: str, cid, name: str, v):
    """A curve spec -> (m1, d, m2) in bytes/s, s, bytes/s; None if absent."""
    if v is None:
        return None
    try:
        if isinstance(v, (str, int, float)):
            return (0.0, 0.0, classify.rate(v) / 8.0)
        if not isinstance(v, dict):
            raise ValueError("write a rate or a table {m1, d, m2} / {umax, dmax, rate}")
        keys = set(v)
        if keys <= {"m1", "d", "m2"} and "m2" in keys:
            m1 = classify.rate(v.get("m1", 0)) / 8.0
            d = classify.time(v.get("d", 0))
            m2 = classify.rate(v["m2"]) / 8.0
            return (m1, d, m2)
        if keys <= {"umax", "dmax", "rate"} and "rate" in keys:
            rate = classify.rate(v["rate"]) / 8.0
            umax = classify.size(v.get("umax", 0))
            dmax = classify.time(v.get("dmax", 0))
            if umax and not dmax:
                raise ValueError('"dmax" is required with "umax"')
            if dmax and math.ceil(umax / dmax) > rate:      # concave
                return (math.ceil(umax / dmax), dmax, rate)
            if not rate:
                raise ValueError("rate must be > 0 with umax/dmax")
            return (0.0, max(0.0, dmax - umax / rate), rate)
        raise ValueError(f"unknown curve keys {sorted(keys)}; use m1/d/m2 or umax/dmax/rate")
    except ValueError as exc:
        raise ConfigError(f"hfsc class {cid}: bad {name} curve: {exc}", key=f"qdisc.classes.{name}",
                          fix='write e.g. ls = "10mbit" or rt = { m1 = "20mbit", d = "10ms", m2 = "5mbit" }') from None


def _update_cfmin(cl: HfscClass) -> None:
    """``update_cfmin``: the smallest fit time among the active children (0 if none)."""
    act = cl.act
    if len(act) == 1:
        for c in act:
            cl.cfmin = c.f
        return
    m = _INF
    for c in act:
        if c.f < m:
            m = c.f
    cl.cfmin = 0.0 if m == _INF else m


class Hfsc(Qdisc):
    kind = "hfsc"
    PARAMS = {"default": lambda v: v, "handle": lambda v: v, "classes": lambda v: v}
    CLASS_KEYS = {"classid", "parent", "rt", "ls", "ul", "sc", "qdisc"}

    def __init__(self, classes=None, default=0, handle="1:", name: str | None = None):
        super().__init__(name)
        try:
            self.handle = classify.parse_classid(handle) & 0xFFFF0000
        except ValueError as exc:
            raise ConfigError(f"hfsc: bad handle: {exc}", key="qdisc.handle", fix="write e.g. handle = '1:'") from None
        self.major = self.handle >> 16
        if isinstance(default, str):
            try:
                default = int(default.split(":")[-1] or "0", 16)
            except ValueError:
                raise ConfigError(f"hfsc default {default!r} is not a class minor", key="qdisc.default",
                                  fix="write e.g. default = '1' or '1:10' (hex, as tc)") from None
        self.defcls = int(default)
        self.root = HfscClass(self.handle)
        self.classes: dict[int, HfscClass] = {}
        for c in classful.class_table(self.kind, classes):
            self._add_class(c)
        self._link()
        self.leaves = [c for c in self.classes.values() if not c.children]
        for c in self.leaves:
            c.leaf = classful.Leaf(self, classful.make_child(c.spec_qdisc, self.dev),
                                   notify=lambda c=c: self._qlen_notify(c))     # qlen_notify
        self.eltree: dict[HfscClass, None] = {}
        self._wake: float | None = None
        self.unclassified = 0

    def _add_class(self, c: dict) -> None:
        kind = self.kind
        classful.check_keys(kind, c, self.CLASS_KEYS)
        if "classid" not in c:
            raise ConfigError("hfsc class without classid", key="qdisc.classes.classid",
                              fix="give each class a classid such as '1:10'")
        cid = classful.parse_cid(kind, c["classid"], "classid")
        name = c["classid"]
        if cid >> 16 != self.major or not cid & 0xFFFF:
            raise ConfigError(f"hfsc class {name} must be {self.major:x}:<non-zero minor>",
                              key="qdisc.classes.classid", fix=f"e.g. '{self.major:x}:10'")
        if cid in self.classes:
            raise ConfigError(f"hfsc class {name} is defined twice", key="qdisc.classes.classid",
                              fix="give each class its own classid")
        sc = _curve(kind, name, "sc", c.get("sc"))
        rsc = _curve(kind, name, "rt", c.get("rt")) or sc
        fsc = _curve(kind, name, "ls", c.get("ls")) or sc
        usc = _curve(kind, name, "ul", c.get("ul"))
        if rsc is None and fsc is None:
            raise ConfigError(f"hfsc class {name} has neither a real-time nor a link-sharing curve",
                              key="qdisc.classes", fix='give rt, ls or sc, e.g. sc = "10mbit"')
        if usc is not None and fsc is None:
            raise ConfigError(f"hfsc class {name}: an upper-limit curve needs a link-sharing curve",
                              key="qdisc.classes.ul", fix="add ls (or sc) to the class")
        for nm, cv in (("rt", rsc), ("ls", fsc), ("ul", usc)):
            if cv is not None and cv[0] == 0 and cv[2] == 0:
                raise ConfigError(f"hfsc class {name}: {nm} curve is all zero", key=f"qdisc.classes.{nm}",
                                  fix="give a positive m2 (rate)")
        cl = HfscClass(cid, rsc, fsc, usc, c.get("qdisc"))
        parent = c.get("parent")
        pid = None if parent in (None, "root") else classful.parse_cid(kind, parent, "parent")
        cl.parent = pid if pid is not None and pid & 0xFFFF else None
        self.classes[cid] = cl

    def _link(self) -> None:
        for cl in self.classes.values():
            pid = cl.parent
            if pid is None:
                cl.parent = self.root
            else:
                parent = self.classes.get(pid)
                if parent is None:
                    raise ConfigError(f"hfsc class {classify.fmt_classid(cl.classid)}: parent "
                                      f"{classify.fmt_classid(pid)} does not exist", key="qdisc.classes.parent",
                                      fix="define the parent, or use parent = '1:' for a top class")
                cl.parent = parent
            cl.parent.children.append(cl)
        for cl in self.classes.values():
            seen, p = set(), cl
            while p is not None:
                if p.classid in seen:
                    raise ConfigError("hfsc classes form a loop", key="qdisc.classes.parent",
                                      fix="each class needs a parent above it")
                seen.add(p.classid)
                p = p.parent
            if cl.children and cl.fsc is None:
                raise ConfigError(f"hfsc class {classify.fmt_classid(cl.classid)} has children but no "
                                  "link-sharing curve", key="qdisc.classes.ls",
                                  fix="give the inner class ls or sc")

        def level(cl):
            cl.level = 1 + max(level(ch) for ch in cl.children) if cl.children else 0
            return cl.level
        level(self.root)

    def attach(self, dev: Device) -> None:
        super().attach(dev)
        for c in self.leaves:
            c.leaf.q.attach(dev)

    def _child_dropped(self, pkt, now, reason) -> None:
        if self.on_drop is not None:
            self.on_drop(pkt, now, reason)

    # -- classification -----------------------------------------------------------------------
    def classify(self, pkt) -> HfscClass | None:
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
            self.unclassified += 1
            self.drop(pkt, now, "unclassified")
            return False
        first = cl.leaf.qlen == 0
        ok = cl.leaf.enqueue(pkt, now)
        if ok and first:
            if cl.rsc is not None:
                self._init_ed(cl, pkt.size, now)
            if cl.fsc is not None:
                self._init_vf(cl, now)
        return ok

    # -- real-time ----------------------------------------------------------------------------
    def _init_ed(self, cl: HfscClass, next_len: int, now: float) -> None:
        dl = cl.deadline
        dl.min_with(cl.rsc, now, cl.cumul)
        el = cl.eligible
        el.x, el.y, el.sm1, el.sm2 = dl.x, dl.y, dl.sm1, dl.sm2
        if cl.rsc[0] <= cl.rsc[2]:
            el.dx = el.dy = 0.0
        else:
            el.dx, el.dy = dl.dx, dl.dy
        cl.e = el.y2x(cl.cumul)
        cl.d = dl.y2x(cl.cumul + next_len)
        self.eltree[cl] = None
        cl.in_el = True

    # -- link-sharing -------------------------------------------------------------------------
    def _init_vf(self, cl: HfscClass, now: float) -> None:
        """``init_vf``: the class (and ancestors that were idle) join link-sharing."""
        go_active = True
        parent = cl.parent
        while parent is not None:
            if go_active:
                go_active = cl.nactive == 0
                cl.nactive += 1
            if go_active:
                act = parent.act
                if act:
                    vt = -_INF
                    for c in act:                   # rb_last(vt_tree): the largest vt
                        if c.vt > vt:
                            vt = c.vt
                    if parent.cvtmin != 0:
                        vt = (parent.cvtmin + vt) / 2
                    if parent.vtperiod != cl.parentperiod or vt > cl.vt:
                        cl.vt = vt
                else:
                    cl.vt = parent.cvtoff
                    parent.cvtmin = 0.0
                cl.virtual.min_with(cl.fsc, cl.vt, cl.total)
                cl.vtadj = 0.0
                cl.vtperiod += 1
                cl.parentperiod = parent.vtperiod + (1 if parent.nactive == 0 else 0)
                cl.f = 0.0
                act[cl] = None
                if cl.usc is not None:
                    ul = cl.ulimit
                    ul.min_with(cl.usc, now, cl.total)
                    cl.myf = ul.y2x(cl.total)
            f = cl.myf if cl.myf > cl.cfmin else cl.cfmin
            if f == cl.f and not go_active:
                break                               # nothing changes further up
            cl.f = f
            _update_cfmin(parent)
            cl = parent
            parent = cl.parent

    def _qlen_notify(self, cl: HfscClass) -> None:
        """qlen_notify: ``hfsc_qlen_notify`` -- the child dropped its last packets."""
        if cl.nactive:
            self._update_vf(cl, 0)
        self.eltree.pop(cl, None)
        cl.in_el = False

    def _update_vf(self, cl: HfscClass, length: int) -> None:
        """``update_vf``: charge ``length`` bytes up the tree; idle classes leave link-sharing."""
        # qlen_notify: a class already made passive by its child's notify is not made passive twice
        go_passive = cl.fsc is not None and cl.leaf.qlen == 0 and cl.nactive > 0
        parent = cl.parent
        while parent is not None:
            cl.total += length
            if cl.fsc is None or cl.nactive == 0:
                cl = parent
                parent = cl.parent
                continue
            if go_passive:
                cl.nactive -= 1
                go_passive = cl.nactive == 0
            vt = cl.virtual.y2x(cl.total) + cl.vtadj
            cvtmin = parent.cvtmin
            if vt < cvtmin:
                cl.vtadj += cvtmin - vt
                vt = cvtmin
            cl.vt = vt
            if go_passive:
                if vt > parent.cvtoff:
                    parent.cvtoff = vt
                del parent.act[cl]
                _update_cfmin(parent)
            else:
                if cl.usc is not None:
                    cl.myf = cl.ulimit.y2x(cl.total)
                f = cl.myf if cl.myf > cl.cfmin else cl.cfmin
                if f != cl.f:
                    cl.f = f
                    _update_cfmin(parent)
            cl = parent
            parent = cl.parent

    def _get_minvt(self, now: float) -> HfscClass | None:
        cl = self.root
        if cl.cfmin > now:
            return None
        while cl.level > 0:
            best = None
            for c in cl.act:                        # vttree_firstfit: smallest vt whose f has come
                if c.f <= now and (best is None or c.vt < best.vt):
                    best = c
            if best is None:
                return None
            if cl.cvtmin < best.vt:
                cl.cvtmin = best.vt
            cl = best
        return cl

    # -- dequeue ------------------------------------------------------------------------------
    def dequeue(self, now: float):
        st = self.stats
        if not st.qlen:
            return None
        cl = None
        best_d = _INF
        for c in self.eltree:                       # eltree_get_mindl
            if c.e <= now and c.d < best_d:
                cl, best_d = c, c.d
        realtime = cl is not None
        if not realtime:
            cl = self._get_minvt(now)
            if cl is None:
                st.overlimits += 1
                self._wake = self._watchdog_time(now)
                return None
        leaf = cl.leaf
        pkt = leaf.dequeue(now)
        if pkt is None:
            self._wake = now + 1e-6
            return None
        size = pkt.size
        cl.bytes += size
        cl.packets += 1
        self._update_vf(cl, size)
        if realtime:
            cl.cumul += size
        if cl.rsc is not None:
            if leaf.qlen:
                nxt = leaf.peek(now)
                next_len = nxt.size if nxt is not None else 0
                if nxt is None:                     # the child dropped everything it held
                    self.eltree.pop(cl, None)
                    cl.in_el = False
                elif realtime:
                    cl.e = cl.eligible.y2x(cl.cumul)
                    cl.d = cl.deadline.y2x(cl.cumul + next_len)
                else:
                    cl.d = cl.deadline.y2x(cl.cumul + next_len)
            else:
                self.eltree.pop(cl, None)
                cl.in_el = False
        return pkt

    def _watchdog_time(self, now: float) -> float | None:
        t = min((c.e for c in self.eltree), default=None)
        cf = self.root.cfmin
        if cf:
            t = cf if t is None or cf < t else t
        if t is not None and t < now + 1e-9:
            t = now + 1e-9
        return t

    def next_wakeup(self, now: float):
        if not self.stats.qlen:
            return None
        w = self._wake
        if w is None or w < now:
            return now
        return w

    def class_stats(self) -> dict:
        return {classify.fmt_classid(cid): {"bytes": c.bytes, "packets": c.packets,
                                            "qlen": c.leaf.qlen if c.leaf else 0, "level": c.level}
                for cid, c in sorted(self.classes.items())}
