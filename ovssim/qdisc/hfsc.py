"""hfsc: Hierarchical Fair Service Curve (Linux ``net/sched/sch_hfsc.c``, ``tc-hfsc(7)``).

Each class may have three two-piece linear service curves ``(m1, d, m2)``
(slope ``m1`` for ``d`` seconds, then ``m2``; rates in bit/s):

* ``rt`` real-time: leaves only; guarantees the curve (hence a delay bound)
  regardless of the hierarchy.  A backlogged class gets an *eligible* time
  ``e`` and a *deadline* ``d`` from its curves; whenever some class is
  eligible (``e <= now``) the eligible class with the smallest deadline sends.
* ``ls`` link-sharing: excess capacity is shared by *virtual time*: from the
  root down, the active child with the smallest ``vt`` is chosen; ``vt``
  advances along the class's ``ls`` curve, so excess divides in proportion
  to ``m2``.
* ``ul`` upper limit: a class is skipped by link-sharing until its fit time
  ``f`` (when its ``ul`` curve allows its total service) has come.

``sc`` sets ``rt`` and ``ls`` together.  The runtime curves, ``rtsc_min``
(a new backlog period restarts the curve without giving back what the class
was owed), eligible/deadline/virtual-time updates, ``cvtmin``/``cvtoff``
and the watchdog follow the kernel's functions of the same names.  An
unclassified packet with no ``default`` class is dropped (HFSC has no direct
queue).  Curves in a class table: ``rt = "10mbit"`` (linear), ``rt = { m1 =
"20mbit", d = "10ms", m2 = "5mbit" }`` or ``rt = { umax = "1500b", dmax =
"5ms", rate = "5mbit" }`` (tc's form).

``enqueue`` and ``dequeue`` inline ``init_ed``/``init_vf``/``update_vf`` and
the runtime-curve arithmetic (the same operations in the same order as the
``RtSc`` methods, so the same floats): they run for every packet.
``tests/qdisc/test_hfsc_exact.py`` holds them to recorded per-packet traces.
Each class keeps its path to the root as a tuple (``up``; ``linup`` when all
its ls and ul curves are linear, as OVS installs them).  Two special cases
compute what the general walk would: a packet that finds the whole qdisc idle
activates every class on its path alone (no class is active, since a class is
active only under an active parent: each ``nactive`` is 0 and each parent's
``act`` empty), and a class going passive makes its ancestors passive while
each has no other active child (each is active and has an ls curve).

A leaf's child qdisc that drops inside its dequeue or peek (CoDel,
FQ-CoDel) and is left empty notifies the class (``qdisc_tree_reduce_backlog``
-> ``hfsc_qlen_notify``): if still active the class leaves link-sharing
(``update_vf(cl, 0, 0)``) and the eligible list, at once, before the packet
the child returns (if any) is charged; that charge then does not make the
class passive a second time (upstream "sch_hfsc: Don't make class passive
twice", which fixed a double ``cl_nactive`` decrement of the parent).
"""
from __future__ import annotations

import math

from ..errors import ConfigError
from .base import Device, Qdisc
from . import classful, classify

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
        self.min_concave(sc, x, y, y1)

    def min_concave(self, sc, x: float, y: float, y1: float) -> None:
        """``rtsc_min`` for a concave ``sc`` whose start (x, y) lies below this curve (``y1`` = x2y(x))."""
        sm1, d, sm2 = sc
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
                 "leaf", "act", "spec_qdisc", "bytes", "packets", "rlin", "flin", "ulin", "up", "linup")

    def __init__(self, classid: int, rsc=None, fsc=None, usc=None, spec_qdisc=None):
        self.classid = classid
        self.parent: HfscClass | None = None
        self.children: list[HfscClass] = []
        self.level = 0
        self.rsc, self.fsc, self.usc = rsc, fsc, usc
        # a linear curve (d = 0, m1 <= m2) keeps dx = dy = 0 for ever: x2y / y2x reduce to one
        # line, with the same floats (adding a zero dx / dy changes no value); a linear rt
        # curve's eligible curve is its deadline curve, so no separate one is kept
        self.rlin, self.flin, self.ulin = (c is not None and c[1] == 0 and c[0] <= c[2] for c in (rsc, fsc, usc))
        self.deadline = RtSc(rsc) if rsc else None
        self.eligible = RtSc(rsc) if rsc and not self.rlin else None
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
        self.act: dict[HfscClass, None] = {}    # active children (the vt tree and cf tree)
        self.spec_qdisc = spec_qdisc
        self.bytes = 0
        self.packets = 0
        self.up: tuple = ()     # (class, parent, virtual, ulimit, flin, ul kind) from here to the top
        self.linup: tuple | None = None     # (class, parent, virtual, ulimit) if all linear (see Hfsc)


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
        for c in self.classes.values():
            # per-class constants of the link-sharing walk, read in one unpacking per level;
            # ul kind: 0 none, 1 linear, 2 two-piece
            up, k = [], c
            while k.parent is not None:
                up.append((k, k.parent, k.virtual, k.ulimit, k.flin,
                           0 if k.usc is None else 1 if k.ulin else 2))
                k = k.parent
            c.up = tuple(up)
            # every class on the path has a linear ls curve and no or a linear ul curve
            # (what OVS's linux-hfsc installs): the per-packet paths take loops without the tests
            if all(flin and ulk != 2 for _, _, _, _, flin, ulk in up):
                c.linup = tuple(e[:4] for e in up)
        for c in self.leaves:
            c.leaf = classful.Leaf(self, classful.make_child(c.spec_qdisc, self.dev),
                                   notify=lambda c=c: self._qlen_notify(c))
        self.eltree: dict[HfscClass, None] = {}
        self._leafmap = {c.classid: c for c in self.leaves}       # classify() without the walk
        cl = self.classes.get(self.handle | self.defcls)
        self._defleaf = cl if cl is not None and not cl.children else None
        if self._defleaf is not None:       # skb->priority 0 is no class (a minor is never 0):
            self._leafmap[0] = self._defleaf        # the default, found by the one lookup
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

    def _qlen_notify(self, cl: HfscClass) -> None:
        """``hfsc_qlen_notify`` (idempotent): the child dropped its last packets; the class goes passive."""
        if cl.nactive:
            self._update_vf(cl, 0, True)
        self.eltree.pop(cl, None)

    def _update_vf(self, k: HfscClass, size: int, go_passive: bool) -> None:
        """``update_vf`` as a function (the dequeue path inlines the same steps)."""
        parent = k.parent
        while parent is not None:
            total = k.total + size
            k.total = total
            if not k.nactive or k.fsc is None:
                k = parent
                parent = k.parent
                continue
            if go_passive:
                n = k.nactive - 1
                k.nactive = n
                go_passive = not n
            rt = k.virtual
            if k.flin:
                ry = rt.y
                vt = rt.x if total <= ry else rt.x + (total - ry) / rt.sm2
            else:
                vt = rt.y2x(total)
            vt += k.vtadj
            cvtmin = parent.cvtmin
            if vt < cvtmin:
                k.vtadj += cvtmin - vt
                vt = cvtmin
            k.vt = vt
            if go_passive:
                if vt > parent.cvtoff:
                    parent.cvtoff = vt
                act = parent.act
                del act[k]
                if act:
                    _update_cfmin(parent)
                else:
                    parent.cfmin = 0.0
            else:
                if k.ulin:
                    ul = k.ulimit
                    ry = ul.y
                    k.myf = myf = ul.x if total <= ry else ul.x + (total - ry) / ul.sm2
                elif k.usc is not None:
                    k.myf = myf = k.ulimit.y2x(total)
                else:
                    myf = k.myf
                cfmin = k.cfmin
                f = myf if myf > cfmin else cfmin
                if f != k.f:
                    k.f = f
                    _update_cfmin(parent)
            k = parent
            parent = k.parent

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

    # The per-packet paths below inline the runtime-curve arithmetic of RtSc.x2y / y2x /
    # min_with (same operations in the same order, so the same floats): they run for every
    # packet, and a Python call costs more than the arithmetic.
    def enqueue(self, pkt, now: float) -> bool:
        st = self.stats
        st.arrivals += 1
        q = pkt.queue_id                            # classify(): a leaf of ours, else the default
        cl = self._leafmap.get(pkt.priority if q is None else (self.major << 16) | (q + 1))
        if cl is None:
            cl = self._defleaf
            if cl is None:
                self.unclassified += 1
                self.drop(pkt, now, "unclassified")
                return False
        leaf = cl.leaf
        fifo = leaf._fifo
        size = pkt.size
        if fifo is not None:                        # Leaf.enqueue into its pfifo, inlined
            lq = leaf.q
            cs = lq.stats
            cs.arrivals += 1
            if cs.qlen >= lq.limit:
                lq.drop(pkt, now, "limit")
                st.drops += 1
                return False
            if fifo:                                # not the first packet: the class is active
                fifo.append(pkt)
                cs.qlen += 1
                cs.backlog += size
                pkt.enqueued_at = now
                st.qlen += 1
                st.backlog += size
                return True
            fifo.append(pkt)
            cs.qlen += 1
            cs.backlog += size
            pkt.enqueued_at = now
            st.qlen += 1
            st.backlog += size
        else:
            first = leaf.qlen == 0
            if not leaf.enqueue(pkt, now):
                return False
            if not first:
                return True
        if cl.rlin:                                 # init_ed, linear curve (the eligible curve is this one)
            cumul = cl.cumul
            dl = cl.deadline
            rx = dl.x
            ry = dl.y
            if (ry + (now - rx) * dl.sm2 if now > rx else ry) >= cumul:
                dl.x = rx = now                     # min_with: restart at (now, cumul)
                dl.y = ry = cumul
                cl.e = now
            else:
                cl.e = rx if cumul <= ry else rx + (cumul - ry) / dl.sm2
            y = cumul + size
            cl.d = rx if y <= ry else rx + (y - ry) / dl.sm2
            self.eltree[cl] = None
        elif cl.rsc is not None:
            self._init_ed(cl, size, now)
        lin = cl.linup
        if lin is not None and not self.root.act:
            # init_vf when the qdisc was idle (no class active: a class is active only under an
            # active parent) and the curves are linear: every class on the path joins
            # link-sharing alone (nactive 0, no active sibling, the parent's nactive 0)
            for cl, parent, rt, ul in lin:
                cl.nactive = 1
                cl.vt = vt = parent.cvtoff
                parent.cvtmin = 0.0
                total = cl.total
                rx = rt.x                           # rt.min_with(cl.fsc, vt, total)
                ry = rt.y
                if (ry + (vt - rx) * rt.sm2 if vt > rx else ry) >= total:
                    rt.x = vt
                    rt.y = total
                cl.vtadj = 0.0
                cl.vtperiod += 1
                cl.parentperiod = parent.vtperiod + 1
                parent.act[cl] = None
                if ul is not None:                  # ul.min_with(usc, now, total); myf = ul.y2x(total)
                    rx = ul.x
                    ry = ul.y
                    if (ry + (now - rx) * ul.sm2 if now > rx else ry) >= total:
                        ul.x = now
                        ul.y = total
                        cl.myf = myf = now
                    else:
                        cl.myf = myf = rx if total <= ry else rx + (total - ry) / ul.sm2
                else:
                    myf = cl.myf
                cfmin = cl.cfmin
                cl.f = f = myf if myf > cfmin else cfmin
                parent.cfmin = f                    # update_cfmin(parent): its only active child
            return True
        if cl.fsc is None:
            return True
        # init_vf: the class, and ancestors that were idle, join link-sharing (one level per
        # entry of cl.up); from the first class that was already active on, only fit times
        # change (the loop below the for)
        for cl, parent, rt, ul, flin, ulk in cl.up:
            n = cl.nactive
            cl.nactive = n + 1
            if n:
                break
            act = parent.act
            if act:
                vt = -_INF
                for c in act:                       # rb_last(vt_tree): the largest vt
                    if c.vt > vt:
                        vt = c.vt
                cvtmin = parent.cvtmin
                if cvtmin != 0:
                    vt = (cvtmin + vt) / 2
                if parent.vtperiod != cl.parentperiod or vt > cl.vt:
                    cl.vt = vt
                vt = cl.vt
                alone = False
            else:
                cl.vt = vt = parent.cvtoff
                parent.cvtmin = 0.0
                alone = True
            total = cl.total
            if flin:                                # rt.min_with(cl.fsc, vt, total)
                rx = rt.x
                ry = rt.y
                if (ry + (vt - rx) * rt.sm2 if vt > rx else ry) >= total:
                    rt.x = vt
                    rt.y = total
            else:
                rt.min_with(cl.fsc, vt, total)
            cl.vtadj = 0.0
            cl.vtperiod += 1
            cl.parentperiod = parent.vtperiod + (not parent.nactive)
            act[cl] = None
            if ulk == 1:                            # ul.min_with(usc, now, total); myf = ul.y2x(total)
                rx = ul.x
                ry = ul.y
                if (ry + (now - rx) * ul.sm2 if now > rx else ry) >= total:
                    ul.x = now                      # restarted at (now, total): fit now
                    ul.y = total
                    cl.myf = myf = now
                else:
                    cl.myf = myf = rx if total <= ry else rx + (total - ry) / ul.sm2
            elif ulk:
                ul.min_with(cl.usc, now, total)
                cl.myf = myf = ul.y2x(total)
            else:
                myf = cl.myf
            cfmin = cl.cfmin
            cl.f = f = myf if myf > cfmin else cfmin
            if alone:                               # update_cfmin(parent): cl is its only active child
                parent.cfmin = f
            else:
                m = _INF
                for c in act:
                    if c.f < m:
                        m = c.f
                parent.cfmin = 0.0 if m == _INF else m
        else:
            return True
        while True:                                 # cl was active already: its fit time, upwards
            myf, cfmin = cl.myf, cl.cfmin
            f = myf if myf > cfmin else cfmin
            if f == cl.f:
                return True                         # nothing changes further up
            cl.f = f
            _update_cfmin(parent)
            cl = parent
            parent = cl.parent
            if parent is None:
                return True

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

    # -- link-sharing -------------------------------------------------------------------------
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
        eltree = self.eltree
        for c in eltree:                            # eltree_get_mindl
            if c.e <= now and c.d < best_d:
                cl, best_d = c, c.d
        if cl is not None:
            realtime = True
        else:
            realtime = False
            root = self.root
            # _get_minvt, whose first test (the root's fit time has not come) is inlined
            cl = None if root.cfmin > now else self._get_minvt(now)
            if cl is None:
                st.overlimits += 1
                t = None                            # _watchdog_time(now), inlined
                for c in eltree:
                    e = c.e
                    if t is None or e < t:
                        t = e
                cf = root.cfmin
                if cf:
                    t = cf if t is None or cf < t else t
                if t is not None and t < now + 1e-9:
                    t = now + 1e-9
                self._wake = t
                return None
        leaf = cl.leaf
        fifo = leaf._fifo
        if fifo is not None:                        # Leaf.dequeue from its pfifo, inlined
            if not fifo:
                self._wake = now + 1e-6
                return None
            pkt = fifo.popleft()
            size = pkt.size
            cs = leaf.q.stats
            cs.qlen -= 1
            cs.backlog -= size
            cs.packets += 1
            cs.bytes += size
            st.qlen -= 1
            st.backlog -= size
            st.packets += 1
            st.bytes += size
            qlen = len(fifo)
        else:
            pkt = leaf.dequeue(now)                 # a child that drops may notify (_qlen_notify)
            if pkt is None:                         # the kernel returns NULL (qdisc_warn_nonwc)
                self._wake = now + 1e-6
                return None
            size = pkt.size
            qlen = leaf.qlen
        cl.bytes += size
        cl.packets += 1
        # update_vf: charge the bytes up the tree; classes left idle leave link-sharing
        # (a class the child's qlen_notify already made passive is not made passive twice)
        k = cl
        if not qlen and cl.nactive:
            # going passive, one level per entry of cl.up, while the class left has no
            # active child: every class reached here is active (nactive >= 1: it counts
            # the child that was) and has an ls curve (an inner class, or cl)
            lin = cl.linup
            if lin is not None:                     # the loop below, for linear curves (cl has ls)
                for k, parent, rt, ul in lin:
                    k.total = total = k.total + size
                    n = k.nactive - 1
                    k.nactive = n
                    ry = rt.y                       # vt = rt.y2x(total) + k.vtadj
                    vt = (rt.x if total <= ry else rt.x + (total - ry) / rt.sm2) + k.vtadj
                    cvtmin = parent.cvtmin
                    if vt < cvtmin:
                        k.vtadj += cvtmin - vt
                        vt = cvtmin
                    k.vt = vt
                    if n:
                        if ul is not None:
                            ry = ul.y
                            k.myf = myf = ul.x if total <= ry else ul.x + (total - ry) / ul.sm2
                        else:
                            myf = k.myf
                        cfmin = k.cfmin
                        f = myf if myf > cfmin else cfmin
                        if f != k.f:
                            k.f = f
                            _update_cfmin(parent)
                        k = parent
                        break
                    if vt > parent.cvtoff:
                        parent.cvtoff = vt
                    act = parent.act
                    del act[k]
                    if act:
                        _update_cfmin(parent)
                    else:
                        parent.cfmin = 0.0
                else:
                    k = None
            elif cl.fsc is not None:
                for k, parent, rt, ul, flin, ulk in cl.up:
                    total = k.total + size
                    k.total = total
                    n = k.nactive - 1
                    k.nactive = n
                    if flin:                        # vt = rt.y2x(total) + k.vtadj
                        ry = rt.y
                        vt = (rt.x if total <= ry else rt.x + (total - ry) / rt.sm2) + k.vtadj
                    else:
                        vt = rt.y2x(total) + k.vtadj
                    cvtmin = parent.cvtmin
                    if vt < cvtmin:
                        k.vtadj += cvtmin - vt
                        vt = cvtmin
                    k.vt = vt
                    if n:                           # still active: only its fit time changes
                        if ulk == 1:                # k.myf = ul.y2x(total)
                            ry = ul.y
                            k.myf = myf = ul.x if total <= ry else ul.x + (total - ry) / ul.sm2
                        elif ulk:
                            k.myf = myf = ul.y2x(total)
                        else:
                            myf = k.myf
                        cfmin = k.cfmin
                        f = myf if myf > cfmin else cfmin
                        if f != k.f:
                            k.f = f
                            _update_cfmin(parent)
                        k = parent
                        break
                    if vt > parent.cvtoff:
                        parent.cvtoff = vt
                    act = parent.act
                    del act[k]
                    if act:
                        _update_cfmin(parent)
                    else:
                        parent.cfmin = 0.0
                else:
                    k = None
        if k is not None:                           # the classes above stay active
            parent = k.parent
            while parent is not None:
                total = k.total + size
                k.total = total
                if not k.nactive or k.fsc is None:
                    k = parent
                    parent = k.parent
                    continue
                rt = k.virtual                      # vt = rt.y2x(total) + k.vtadj
                if k.flin:
                    ry = rt.y
                    vt = rt.x if total <= ry else rt.x + (total - ry) / rt.sm2
                else:
                    vt = rt.y2x(total)
                vt += k.vtadj
                cvtmin = parent.cvtmin
                if vt < cvtmin:
                    k.vtadj += cvtmin - vt
                    vt = cvtmin
                k.vt = vt
                if k.ulin:                          # k.myf = ul.y2x(total)
                    ul = k.ulimit
                    ry = ul.y
                    k.myf = myf = ul.x if total <= ry else ul.x + (total - ry) / ul.sm2
                elif k.usc is not None:
                    k.myf = myf = k.ulimit.y2x(total)
                else:
                    myf = k.myf
                cfmin = k.cfmin
                f = myf if myf > cfmin else cfmin
                if f != k.f:
                    k.f = f
                    _update_cfmin(parent)
                k = parent
                parent = k.parent
        if realtime:
            cl.cumul += size
        if cl.rsc is not None:
            if qlen:
                nxt = fifo[0] if fifo is not None else leaf.peek(now)
                if nxt is None:                     # the child dropped everything it held (notified)
                    eltree.pop(cl, None)
                elif cl.rlin:                       # d = deadline.y2x(cumul + next_len); e = eligible.y2x(cumul)
                    dl = cl.deadline
                    rx, ry, sm2 = dl.x, dl.y, dl.sm2
                    cumul = cl.cumul
                    y = cumul + nxt.size
                    cl.d = rx if y <= ry else rx + (y - ry) / sm2
                    if realtime:
                        cl.e = rx if cumul <= ry else rx + (cumul - ry) / sm2
                else:
                    cl.d = cl.deadline.y2x(cl.cumul + nxt.size)
                    if realtime:
                        cl.e = cl.eligible.y2x(cl.cumul)
            else:
                eltree.pop(cl, None)
        return pkt

    def _watchdog_time(self, now: float) -> float | None:
        t = None
        for c in self.eltree:                       # the first eligible time
            e = c.e
            if t is None or e < t:
                t = e
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
