"""The contract every qdisc keeps, modelled on Linux ``struct Qdisc_ops``.

A qdisc is not an element: it is the queue a port's transmitter asks for the
next packet (``include/net/sch_generic.h``).  The port calls

* ``enqueue(pkt, now) -> bool``: accept or drop (``NET_XMIT_SUCCESS`` /
  ``NET_XMIT_DROP``).  A qdisc may also drop *other* packets here (SFQ drops
  from the longest flow, FQ-CoDel from the fattest) -- every drop goes through
  :meth:`Qdisc.drop` so it is counted and reported.
* ``dequeue(now) -> Packet | None``: the next packet to transmit, or ``None``.
  A shaping qdisc (TBF, HTB, HFSC) may return ``None`` while it still holds
  packets; it then answers ``next_wakeup(now)`` with the time its watchdog
  would fire (``qdisc_watchdog_schedule_ns``), and the port asks again then.
* ``next_wakeup(now) -> float | None``.

Counters are those ``tc -s qdisc show`` prints: ``Sent B bytes P pkt
(dropped D, overlimits O requeues R) backlog Bb Np``.  Bytes are ``skb->len``
(the L2 frame, :attr:`Packet.size`).  Conservation: packets enqueued =
sent + dropped + qlen, always.

``attach(dev)`` tells the qdisc about the device it sits on (its MTU and
rate, as ``qdisc_dev()`` does), for defaults such as SFQ's quantum.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from ..errors import ConfigError
from ..packet import Packet


@dataclass
class QdiscStats:
    """What ``tc -s qdisc show`` reports, plus arrivals for conservation checks."""
    bytes: int = 0          # Sent ... bytes
    packets: int = 0        # Sent ... pkt
    drops: int = 0          # dropped
    overlimits: int = 0     # overlimits (shaper said "not yet", or AQM marked/dropped)
    requeues: int = 0       # requeues
    backlog: int = 0        # backlog bytes
    qlen: int = 0           # backlog packets
    arrivals: int = 0       # packets offered to enqueue
    ecn_marks: int = 0      # CE marks (CoDel/FQ-CoDel with ecn)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Device:
    """What a qdisc may know about its device (``struct net_device``)."""
    name: str = "eth0"
    mtu: int = 1500
    hard_header_len: int = 14
    rate_bps: float | None = None       # link speed; None for virtual devices
    txqueuelen: int = 1000

    @property
    def psched_mtu(self) -> int:
        """``psched_mtu()``: MTU plus link-layer header (1514 on Ethernet)."""
        return self.mtu + self.hard_header_len


class Qdisc:
    """Base class: counters, drop accounting and the contract's default methods."""

    kind = "base"

    def __init__(self, name: str | None = None):
        self.name = name or self.kind
        self.stats = QdiscStats()
        self.dev = Device()
        self.on_drop: Callable[[Packet, float, str], None] | None = None

    # -- wiring -------------------------------------------------------------
    def attach(self, dev: Device) -> None:
        """Called by the port before the first packet; recompute device-derived defaults."""
        self.dev = dev

    # -- the contract ---------------------------------------------------------
    def enqueue(self, pkt: Packet, now: float) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def dequeue(self, now: float) -> Packet | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def next_wakeup(self, now: float) -> float | None:
        """Time at which a throttled qdisc can release a packet (work-conserving: None)."""
        return None

    #: ``TCQ_F_CAN_BYPASS`` (include/net/sch_generic.h): a work-conserving FIFO whose empty queue a packet
    #: may skip -- ``__dev_xmit_skb`` hands it straight to the idle device (``sch_direct_xmit``), counted
    #: as sent (``qdisc_bstats_update``).  Such a qdisc implements :meth:`bypass`.
    can_bypass = False

    def bypass(self, pkt: Packet, now: float) -> bool:
        """The packet passes the *empty* qdisc to the idle device: the counters and the packet end as
        ``enqueue`` then ``dequeue`` would leave them, without the queue (the caller checked
        ``qlen == 0``).  False: it must be enqueued after all (a limit the empty queue already fails)."""
        raise NotImplementedError(f"{self.kind} cannot be bypassed")

    def _accounted_through(self, pkt: Packet, now: float) -> bool:
        """A bypassing packet counted as enqueued and sent at ``now`` (``qdisc_bstats_update``)."""
        st = self.stats
        st.arrivals += 1
        st.packets += 1
        st.bytes += pkt.size
        pkt.enqueued_at = now
        return True

    # -- helpers for subclasses ----------------------------------------------
    @property
    def qlen(self) -> int:
        return self.stats.qlen

    @property
    def backlog(self) -> int:
        return self.stats.backlog

    def __len__(self) -> int:
        return self.stats.qlen

    def _accounted_in(self, pkt: Packet, now: float) -> None:
        """A packet now sits in the qdisc."""
        self.stats.qlen += 1
        self.stats.backlog += pkt.size
        pkt.enqueued_at = now

    def _accounted_out(self, pkt: Packet) -> Packet:
        """A packet leaves to the device."""
        st = self.stats
        st.qlen -= 1
        st.backlog -= pkt.size
        st.packets += 1
        st.bytes += pkt.size
        return pkt

    def drop(self, pkt: Packet, now: float, reason: str = "drop", *, queued: bool = False) -> None:
        """Count a drop; ``queued=True`` when the packet had been accounted in."""
        st = self.stats
        if queued:
            st.qlen -= 1
            st.backlog -= pkt.size
        st.drops += 1
        if pkt.owner is not None:       # kfree_skb: the destructor (tcp_wfree) ends the TSQ charge
            pkt.owner.tsq_free(pkt, now)
        if self.on_drop is not None:
            self.on_drop(pkt, now, reason)

    def tc_show(self) -> str:
        """One ``tc -s qdisc show``-style line."""
        s = self.stats
        return (f"qdisc {self.kind} {self.name}\n Sent {s.bytes} bytes {s.packets} pkt "
                f"(dropped {s.drops}, overlimits {s.overlimits} requeues {s.requeues})\n"
                f" backlog {s.backlog}b {s.qlen}p")

    # -- construction from a scenario table ---------------------------------------
    #: key -> converter (e.g. ``units.time``); keys may be written with '-' or '_'.
    PARAMS: dict = {}

    @classmethod
    def from_spec(cls, spec: dict) -> "Qdisc":
        """Build from a scenario/tc-style table, converting units and rejecting unknown keys."""
        params = {}
        for key, value in spec.items():
            norm = key.replace("-", "_")
            conv = cls.PARAMS.get(norm)
            if conv is None:
                known = ", ".join(sorted(cls.PARAMS)) or "(none)"
                raise ConfigError(f"unknown {cls.kind} parameter {key!r}", key=f"qdisc.{key}",
                                  fix=f"{cls.kind} takes: {known}")
            try:
                params[norm] = conv(value)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"bad value for {cls.kind} {key}: {exc}", key=f"qdisc.{key}",
                                  fix="see `man tc-" + cls.kind + "` for the accepted form") from None
        return cls(**params)

    # -- validation helpers ----------------------------------------------------
    @staticmethod
    def _check(cond: bool, problem: str, key: str, fix: str) -> None:
        """tc-like parameter errors: ``ConfigError`` naming the key and the fix."""
        if not cond:
            raise ConfigError(problem, key=key, fix=fix)
