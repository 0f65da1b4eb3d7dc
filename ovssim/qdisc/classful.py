"""What HTB and HFSC share: a leaf class's own qdisc, class-table parsing.

A leaf class holds a child qdisc (pfifo of ``txqueuelen`` packets unless
the class table gives ``qdisc = {...}``), as ``qdisc_create_dflt`` does in
``htb_change_class`` / ``hfsc_change_class``.  The parent's counters follow
the child's (``qdisc_tree_reduce_backlog``): every packet the child drops is
a drop of the parent, and the parent's backlog is the children's.
``peek`` dequeues into a one-packet stash (``qdisc_peek_dequeued``), which is
how HFSC learns the next packet's length from any child.

A child that drops inside its dequeue (CoDel, FQ-CoDel) reports the drops
with ``qdisc_tree_reduce_backlog`` (``net/sched/sch_api.c``), which calls the
parent's ``qlen_notify`` for the class when the child is left empty
(``hfsc_qlen_notify``: the class leaves link-sharing and the eligible list;
``htb_qlen_notify``: ``htb_deactivate``).  :attr:`Leaf.notify` is that hook:
called, inside the child's dequeue, when the child dropped packets and holds
none.  A peek that stashes a packet does not notify (the child is not empty:
the stash counts in its ``qlen``, as ``qdisc_peek_dequeued`` restores it).
"""
from __future__ import annotations

from ..errors import ConfigError
from . import classify


class Leaf:
    """A leaf class's queue with parent-side accounting.

    The default child, a pfifo, takes a fast path (same behaviour, no
    counter deltas): it is what almost every HTB/HFSC leaf holds."""

    __slots__ = ("q", "stash", "owner", "_fifo", "notify")

    def __init__(self, owner, child, notify=None):
        from .pfifo import PFifo  # noqa: PLC0415
        self.owner = owner
        self.q = child
        self.stash = None
        self.notify = notify        # the parent's qlen_notify for this class (no argument), or None
        self._fifo = child._q if type(child) is PFifo else None
        child.on_drop = owner._child_dropped

    @property
    def qlen(self) -> int:
        if self._fifo is not None:
            return len(self._fifo)
        return self.q.stats.qlen + (1 if self.stash is not None else 0)

    def enqueue(self, pkt, now: float) -> bool:
        fifo = self._fifo
        if fifo is not None:
            q = self.q
            cs = q.stats
            cs.arrivals += 1
            if cs.qlen >= q.limit:
                q.drop(pkt, now, "limit")
                self.owner.stats.drops += 1
                return False
            fifo.append(pkt)
            size = pkt.size
            cs.qlen += 1
            cs.backlog += size
            pkt.enqueued_at = now
            st = self.owner.stats
            st.qlen += 1
            st.backlog += size
            return True
        cs = self.q.stats
        q0, b0, d0 = cs.qlen, cs.backlog, cs.drops
        ok = self.q.enqueue(pkt, now)
        st = self.owner.stats
        st.qlen += cs.qlen - q0
        st.backlog += cs.backlog - b0
        st.drops += cs.drops - d0
        if ok:
            pkt.enqueued_at = now
        return ok

    def _pull(self, now: float, peeking: bool = False):
        """The child's dequeue; its counter changes reach the parent (``qdisc_tree_reduce_backlog``)."""
        cs = self.q.stats
        q0, b0, d0 = cs.qlen, cs.backlog, cs.drops
        pkt = self.q.dequeue(now)
        st = self.owner.stats
        st.qlen += cs.qlen - q0
        st.backlog += cs.backlog - b0
        if cs.drops != d0:
            st.drops += cs.drops - d0
            # the child dropped and is left empty: the parent's qlen_notify (a packet
            # stashed by a peek keeps the child non-empty)
            if not cs.qlen and (pkt is None or not peeking) and self.notify is not None:
                self.notify()
        return pkt

    def peek(self, now: float):
        fifo = self._fifo
        if fifo is not None:
            return fifo[0] if fifo else None
        if self.stash is None:
            pkt = self._pull(now, True)
            if pkt is not None:
                st = self.owner.stats
                st.qlen += 1
                st.backlog += pkt.size
                self.stash = pkt
        return self.stash

    def dequeue(self, now: float):
        fifo = self._fifo
        if fifo is not None:
            if not fifo:
                return None
            pkt = fifo.popleft()
            size = pkt.size
            cs = self.q.stats
            cs.qlen -= 1
            cs.backlog -= size
            cs.packets += 1
            cs.bytes += size
            st = self.owner.stats
            st.qlen -= 1
            st.backlog -= size
            st.packets += 1
            st.bytes += size
            return pkt
        pkt = self.stash
        st = self.owner.stats
        if pkt is not None:
            self.stash = None
            st.qlen -= 1
            st.backlog -= pkt.size
        else:
            pkt = self._pull(now)
            if pkt is None:
                return None
        st.packets += 1
        st.bytes += pkt.size
        return pkt


def make_child(spec, dev):
    from .registry import make_qdisc  # noqa: PLC0415 - avoid an import cycle
    from .pfifo import PFifo  # noqa: PLC0415
    child = PFifo() if spec is None else make_qdisc(spec)
    child.attach(dev)
    return child


def class_table(kind: str, classes) -> list[dict]:
    """Validate the ``classes`` list of a classful qdisc's table."""
    if classes is None:
        return []
    if not isinstance(classes, (list, tuple)) or not all(isinstance(c, dict) for c in classes):
        raise ConfigError(f"{kind} classes must be a list of tables",
                          key="qdisc.classes", fix='write classes = [{ classid = "1:1", rate = "10mbit" }]')
    return [dict(c) for c in classes]


def class_key(kind: str, c: dict, key: str, conv, default=None, required: bool = False):
    """Read one key of a class table with a tc-like error naming the class."""
    cid = c.get("classid", "?")
    for k in (key, key.replace("_", "-")):
        if k in c:
            try:
                return conv(c[k])
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"{kind} class {cid}: bad {key}: {exc}", key=f"qdisc.classes.{key}",
                                  fix=f"see `man tc-{kind}`") from None
    if required:
        raise ConfigError(f'{kind} class {cid}: "{key}" is required', key=f"qdisc.classes.{key}",
                          fix=f"give {key} for class {cid}")
    return default


def check_keys(kind: str, c: dict, allowed: set) -> None:
    unknown = [k for k in c if k.replace("-", "_") not in allowed]
    if unknown:
        raise ConfigError(f"{kind} class {c.get('classid', '?')}: unknown parameter(s) {', '.join(unknown)}",
                          key="qdisc.classes", fix=f"{kind} classes take: {', '.join(sorted(allowed))}")


def parse_cid(kind: str, value, what: str) -> int:
    try:
        return classify.parse_classid(value)
    except ValueError as exc:
        raise ConfigError(f"{kind}: bad {what}: {exc}", key=f"qdisc.classes.{what}",
                          fix="write class ids as tc does, e.g. '1:10'") from None
