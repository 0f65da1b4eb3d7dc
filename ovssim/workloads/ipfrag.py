"""IP fragmentation of a UDP datagram larger than the MTU and its reassembly at the receiver.

``__ip_append_data`` (net/ipv4/ip_output.c) cuts a datagram above the MTU into fragment skbs, each a frame of
its own through the path; ``ip_defrag`` (net/ipv4/ip_fragment.c, inet_fragment.c) holds them until the
datagram is whole, within ``net.ipv4.ipfrag_high_thresh`` of memory and ``ipfrag_time`` seconds.
"""
from __future__ import annotations

from ..packet import ETH_HEADER, IPV4_HEADER, UDP_HEADER
from ..path.afpacket import truesize

IPFRAG_HIGH_THRESH = 4 * 1024 * 1024   # net.ipv4.ipfrag_high_thresh (default 4 MiB)
IPFRAG_TIME = 30.0                     # net.ipv4.ipfrag_time: an incomplete datagram's queue lives 30 s


def ip_fragments(datagram: int, mtu: int = 1500) -> tuple[int, ...] | None:
    """L2 frame sizes of the IPv4 fragments of a UDP datagram of ``datagram`` payload bytes at ``mtu``, or
    None when it fits one frame.  A UDP socket builds a datagram larger than the device's MTU as a chain of
    fragment skbs (``__ip_append_data``, net/ipv4/ip_output.c; no UFO since Linux 4.14), each but the last
    carrying ``(mtu - 20) & ~7`` bytes of the IP payload (UDP header + data): 1480 at MTU 1500, so a
    32768-byte datagram is 23 frames, 22 of 1514 bytes."""
    ip_payload = datagram + UDP_HEADER
    if ip_payload + IPV4_HEADER <= mtu:
        return None
    per = (mtu - IPV4_HEADER) & ~7
    n, last = divmod(ip_payload, per)
    sizes = [per + IPV4_HEADER + ETH_HEADER] * n
    if last:
        sizes.append(last + IPV4_HEADER + ETH_HEADER)
    return tuple(sizes)


class Reassembly:
    """The receiver's IPv4 reassembly of one flow's fragmented datagrams (``ip_defrag``, net/ipv4/ip_fragment.c).

    A datagram is complete when all its ``len(sizes)`` fragments have arrived; one lost fragment loses it
    (its queue waits ``ipfrag_time``, 30 s, then is freed: ``IpReasmFails``).  Queued fragments are charged
    their skb truesize to the namespace's fragment memory; above ``ipfrag_high_thresh`` (4 MiB) every
    arriving fragment is dropped (``inet_frag_find`` finds no queue: net/ipv4/inet_fragment.c) until
    timeouts free memory -- so a path that drops fragments at random can stall reassembly altogether.
    ``truesize``: the reassembled skb's (``ip_frag_reasm`` adds every fragment's), which the UDP socket's
    receive buffer is charged."""

    __slots__ = ("n", "truesize", "pending", "mem", "high_thresh", "timeout", "fails", "refused", "_ts")

    def __init__(self, sizes: tuple[int, ...], *, high_thresh: int = IPFRAG_HIGH_THRESH,
                 timeout: float = IPFRAG_TIME):
        self.n = len(sizes)
        self._ts = {sz: truesize(sz) for sz in set(sizes)}
        self.truesize = sum(self._ts[sz] for sz in sizes)
        self.pending: dict[int, list] = {}   # seq -> [fragments arrived, bytes charged, first arrival]
        self.mem = 0
        self.high_thresh = high_thresh
        self.timeout = timeout
        self.fails = 0                       # queues timed out incomplete (IpReasmFails)
        self.refused = 0                     # fragments dropped above high_thresh

    def add(self, pkt, t: float) -> bool:
        """Fragment ``pkt`` arrives at ``t``; True when it completes its datagram."""
        if self.mem > self.high_thresh:
            self._expire(t)
            if self.mem > self.high_thresh:
                self.refused += 1
                return False
        q = self.pending.get(pkt.seq)
        ts = self._ts[pkt.size]
        if q is None:
            q = self.pending[pkt.seq] = [0, 0, t]
        q[0] += 1
        q[1] += ts
        self.mem += ts
        if q[0] < self.n:
            return False
        del self.pending[pkt.seq]
        self.mem -= q[1]
        return True

    def _expire(self, t: float) -> None:
        old = [seq for seq, q in self.pending.items() if t - q[2] >= self.timeout]
        for seq in old:
            self.mem -= self.pending.pop(seq)[1]
            self.fails += 1
