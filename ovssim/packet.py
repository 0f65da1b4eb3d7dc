"""The packet a simulation moves.

A Packet carries what the Linux stack and Open vSwitch look at: the flow
5-tuple, the size on the wire (L2 frame without preamble/FCS, i.e. what ``tc``
counts as ``bytes``), a VLAN tag, the skb priority and TOS byte, and the times
it reached each stage (``stamps``), so per-stage delay samples can be taken.

Time lookahead: ``t`` is the time the packet reaches the element it is being
handed to.  Pure-delay elements add to ``t`` and pass the packet on at once
(no SimPy event); contention points (a queue, a link, a CPU) materialise the
time before they act.  See ``ovssim.path.base``.
"""
from __future__ import annotations

from typing import NamedTuple

from .sched import call_at


class FlowKey(NamedTuple):
    """The 5-tuple an OVS megaflow or an SFQ/FQ-CoDel hash is keyed by."""
    src: str
    dst: str
    sport: int = 0
    dport: int = 0
    proto: str = "udp"


# Ethernet framing around the L2 frame a qdisc counts (bytes on the wire that
# are not in skb->len): preamble+SFD 8, FCS 4, inter-frame gap 12 (IEEE 802.3).
ETH_PREAMBLE_FCS_IFG = 8 + 4 + 12
ETH_HEADER = 14
VLAN_TAG = 4
IPV4_HEADER = 20
UDP_HEADER = 8
TCP_HEADER = 20
TCP_TIMESTAMPS = 12          # Linux enables RFC 7323 timestamps by default
ICMP_HEADER = 8


class Packet:
    """One frame in flight, or one GSO super-packet (an skb of several segments).

    ``size`` is the L2 frame length in bytes (Ethernet header + IP packet,
    plus 4 for an 802.1Q tag), the quantity Linux qdiscs account in bytes.
    ``payload`` is the application bytes it carries.

    A GSO skb (``gso_segs`` > 1, each segment ``gso_size`` payload bytes but the
    last) stands for the frames it will be cut into: its ``size`` is the sum of
    their frame lengths -- ``qdisc_pkt_len``, the skb's length plus the headers
    of every further segment (net/core/dev.c ``qdisc_pkt_len_init``) -- so every
    qdisc, wire and per-byte cost counts it as the kernel does, and segmenting it
    (:func:`ovssim.path.gso.segment`) conserves ``size`` and ``payload``.
    :attr:`skb_len` is the kernel's ``skb->len`` (headers once).  ``first_at``:
    for a train of frames off a wire, when its first frame had fully arrived
    (``t`` is when the last one has).  ``owner``: the TCP sender whose TCP Small
    Queues budget the skb is charged to (``wmem`` bytes) until it is orphaned or freed.
    """

    __slots__ = ("flow", "size", "payload", "seq", "vlan", "priority", "tos",
                 "created", "t", "stamps", "kind", "ack", "flags", "sack",
                 "ts_val", "ts_ecr", "rwnd", "ecn", "queue_id", "src_mac",
                 "dst_mac", "in_port", "meta", "enqueued_at", "gso_size", "gso_segs",
                 "first_at", "owner", "wmem", "tstamp")

    # Every argument may be given by position (in this order): a keyword call costs
    # noticeably more, and the traffic sources build one Packet per datagram.
    def __init__(self, flow: FlowKey, size: int, created: float, payload: int = 0,
                 seq: int = 0, vlan: int | None = None, priority: int = 0, tos: int = 0,
                 kind: str = "data", src_mac: str | None = None, dst_mac: str | None = None):
        self.flow = flow
        self.size = size
        self.payload = payload
        self.seq = seq
        self.vlan = vlan
        self.priority = priority
        self.tos = tos
        self.created = created
        self.t = created
        self.stamps: dict[str, float] | None = None
        self.kind = kind
        self.ack = 0
        self.flags = 0
        self.sack = None
        self.ts_val = 0.0
        self.ts_ecr = 0.0
        self.rwnd = 0
        self.ecn = 0          # 0 not-ECT, 1 ECT, 3 CE (RFC 3168)
        self.queue_id = None  # OVS set_queue action result
        self.src_mac = src_mac if src_mac is not None else flow.src
        self.dst_mac = dst_mac if dst_mac is not None else flow.dst
        self.in_port = None
        self.meta = None
        self.enqueued_at = 0.0
        self.gso_size = 0     # skb_shinfo(skb)->gso_size: payload bytes per segment (0: not GSO)
        self.gso_segs = 1     # segments this skb stands for
        self.first_at = None  # a wire train: when its first frame had fully arrived
        self.owner = None     # the TcpSender whose TSQ budget holds this skb
        self.wmem = 0         # the bytes (skb truesize) charged to that budget
        self.tstamp = 0.0     # skb->tstamp: earliest departure (EDT) a paced TCP sets for fq; 0 = now

    def clone(self) -> "Packet":
        """A shallow copy (``skb_clone``/``skb_copy`` of the headers): every field, shared values.

        Field by field, as written (a GSO skb's segmentation clones once per frame: a loop over
        ``__slots__`` with getattr/setattr cost ~10 % of a 100 Mbit/s TCP run); a test checks that
        every slot is copied."""
        c = _new(Packet)
        c.flow = self.flow
        c.size = self.size
        c.payload = self.payload
        c.seq = self.seq
        c.vlan = self.vlan
        c.priority = self.priority
        c.tos = self.tos
        c.created = self.created
        c.t = self.t
        c.stamps = self.stamps
        c.kind = self.kind
        c.ack = self.ack
        c.flags = self.flags
        c.sack = self.sack
        c.ts_val = self.ts_val
        c.ts_ecr = self.ts_ecr
        c.rwnd = self.rwnd
        c.ecn = self.ecn
        c.queue_id = self.queue_id
        c.src_mac = self.src_mac
        c.dst_mac = self.dst_mac
        c.in_port = self.in_port
        c.meta = self.meta
        c.enqueued_at = self.enqueued_at
        c.gso_size = self.gso_size
        c.gso_segs = self.gso_segs
        c.first_at = self.first_at
        c.owner = self.owner
        c.wmem = self.wmem
        c.tstamp = self.tstamp
        return c

    def stamp(self, stage: str, t: float) -> None:
        """Record the time this packet reached ``stage``."""
        if self.stamps is None:
            self.stamps = {}
        self.stamps[stage] = t

    @property
    def wire_bytes(self) -> int:
        """Bytes the frame(s) occupy on an Ethernet wire (adds preamble, FCS, gap per frame)."""
        return self.size + ETH_PREAMBLE_FCS_IFG * self.gso_segs

    @property
    def header_len(self) -> int:
        """Bytes of headers each frame carries (L2 + IP + transport)."""
        return (self.size - self.payload) // self.gso_segs

    @property
    def skb_len(self) -> int:
        """``skb->len``: the payload plus one copy of the headers."""
        return self.payload + self.header_len

    def __repr__(self) -> str:
        return (f"Packet({self.kind} {self.flow.src}->{self.flow.dst} seq={self.seq} "
                f"size={self.size} segs={self.gso_segs} t={self.t:.9f})")


_SLOTS = Packet.__slots__
_new = object.__new__


def free_charge(owner, pkt: Packet, t: float, env, release) -> None:
    """An skb's destructor (``tcp_wfree``, ``sock_wfree``) at ``t``: ``pkt``'s charge leaves ``owner``'s send
    budget through ``release(pkt.wmem)``, now or at ``t`` -- once: an skb freed again is no longer charged."""
    if pkt.owner is not owner:
        return
    pkt.owner = None
    if t > env._now:
        call_at(env, t, release, pkt.wmem)
    else:
        release(pkt.wmem)


def udp_frame_size(datagram: int, vlan: bool = False) -> int:
    """L2 frame size for a UDP datagram of ``datagram`` payload bytes."""
    return datagram + UDP_HEADER + IPV4_HEADER + ETH_HEADER + (VLAN_TAG if vlan else 0)


def tcp_frame_size(payload: int, timestamps: bool = True, vlan: bool = False) -> int:
    """L2 frame size for a TCP segment with ``payload`` bytes (timestamps on by default, as Linux)."""
    return (payload + TCP_HEADER + (TCP_TIMESTAMPS if timestamps else 0) + IPV4_HEADER
            + ETH_HEADER + (VLAN_TAG if vlan else 0))


def icmp_frame_size(payload: int, vlan: bool = False) -> int:
    """L2 frame size of a ping (ICMP echo) with ``payload`` data bytes (ping -s, default 56)."""
    return payload + ICMP_HEADER + IPV4_HEADER + ETH_HEADER + (VLAN_TAG if vlan else 0)
