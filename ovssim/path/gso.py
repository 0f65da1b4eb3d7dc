"""Generic segmentation: cutting a GSO skb into the frames it stands for.

:func:`segment` is ``skb_gso_segment`` (net/core/gso.c, ``tcp_gso_segment`` in
net/ipv4/tcp_offload.c): a super-packet of ``gso_segs`` segments becomes that
many frames of ``gso_size`` payload bytes (the last one the remainder), each
with its own copy of the headers and consecutive sequence numbers.  ``size``
and ``payload`` are conserved (a GSO skb's ``size`` already counts every
segment's headers, see :class:`~ovssim.packet.Packet`).  Each segment keeps the
socket's charge for its own truesize (``tcp_gso_segment`` copies the destructor to
every segment and adds ``sum_truesize - gso_skb->truesize`` to ``sk_wmem_alloc``):
a head like the GSO skb's (``skb_segment`` allocates the same headroom) plus its
payload -- 2728 B per 1448-byte segment measured inside UML's Linux 6.1 (``ss -tinm``
skmem t = unacked x 2728 in every sample, data/uml/2026-11-25/uml-window), so TCP
Small Queues count a segmented skb at nearly twice its size while it is charged.

:class:`SoftwareGso` is the element where a device without TSO segments in
software on transmit (``validate_xmit_skb``): the work runs on a host core,
``cpu_per_segment`` for each segment made plus ``cpu_per_byte`` for the
checksum when the device cannot checksum either (``tx-checksumming`` off: the
segments' checksums are computed in software, ``skb_checksum_help``).  A device
with TSO passes the skb on whole (the NIC or the peer cuts it).
"""
from __future__ import annotations

from .cpu import conn_key


def segment(pkt) -> list:
    """``skb_gso_segment``: the frames of ``pkt`` (itself alone if it is one segment)."""
    segs = pkt.gso_segs
    if segs <= 1:
        return [pkt]
    mss = pkt.gso_size
    hdr = (pkt.size - pkt.payload) // segs
    out = []
    seq = pkt.seq
    left = pkt.payload
    owner = pkt.owner
    head = pkt.wmem - pkt.payload if owner is not None else 0      # the GSO skb's head truesize
    charged = 0
    for i in range(segs):
        n = mss if left > mss else left
        s = pkt.clone()
        s.gso_segs = 1
        s.gso_size = 0
        s.payload = n
        s.size = n + hdr
        s.seq = seq
        s.first_at = None
        if pkt.stamps is not None:
            s.stamps = dict(pkt.stamps)
        if owner is not None:
            s.wmem = head + n
            charged += s.wmem
        seq += n
        left -= n
        out.append(s)
    if owner is not None:
        owner.tsq_charge(charged - pkt.wmem)
    # the headers the GSO skb counted for its segments are the segments' own: nothing is lost
    return out


class SoftwareGso:
    """Where a device without TSO segments a GSO skb in software (``put``/``out``)."""

    stage = "gso"

    def __init__(self, env, cpu, out=None, *, tso: bool = False, checksum: bool = True,
                 cpu_per_segment: float = 0.0, cpu_per_byte: float = 0.0):
        self.env = env
        self.cpu = cpu
        self.out = out
        self.tso = tso
        self.checksum = checksum
        self.cpu_per_segment = cpu_per_segment
        self.cpu_per_byte = cpu_per_byte
        self.skbs = 0
        self.segments = 0
        self.dropped = 0

    def put(self, pkt) -> None:
        if self.tso or pkt.gso_segs <= 1:
            self.out.put(pkt)
            return
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        work = self.cpu_per_segment * pkt.gso_segs
        if not self.checksum:
            work += self.cpu_per_byte * pkt.size
        if work > 0.0 and self.cpu is not None:
            t = self.cpu.serve(t, work, conn_key(pkt.flow))
            if t is None:
                self.dropped += 1
                return
        self.skbs += 1
        out = self.out
        for s in segment(pkt):
            self.segments += 1
            s.t = t
            out.put(s)
