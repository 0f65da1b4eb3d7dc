"""AF_PACKET socket buffers of OVS's userspace (``netdev``) datapath.

ovs-vswitchd's netdev datapath receives from each kernel port through that
port's AF_PACKET socket and sends every packet through one shared AF_PACKET
socket (``netdev_linux_send``, OVS lib/netdev-linux.c; nonblocking).  Both
sides are bounded by the kernel's socket memory accounting, in bytes of skb
``truesize`` (not packet length):

* **send** (``sock_alloc_send_pskb``, net/core/sock.c): a new skb is allocated
  only while ``sk_wmem_alloc < sk_sndbuf`` -- the check comes *before* the
  charge, so the socket may overshoot by one skb; otherwise a nonblocking send
  fails with EAGAIN and OVS drops the packet (the netdev's ``tx_dropped``).
  The skb stays charged (``skb_set_owner_w``) until its destructor
  ``sock_wfree`` runs: for a veth, when ``veth_xmit`` forwards it
  (``dev_forward_skb`` orphans it), i.e. when the egress qdisc hands it to the
  device -- so every packet waiting behind a shaper counts against the one
  send buffer.  ``sk_sndbuf`` = ``net.core.wmem_default`` (212992 here).
* **receive** (``packet_rcv``, net/packet/af_packet.c): a frame is dropped
  (``tp_drops``) when ``sk_rmem_alloc >= sk_rcvbuf`` on arrival -- again
  checked before the charge; it stays charged until ovs-vswitchd reads it.
  ``sk_rcvbuf`` = ``net.core.rmem_default`` (212992 here).

:class:`SockBuf` is that accounting; :func:`skb_truesize` the skb size it charges.
"""
from __future__ import annotations

from heapq import heappop, heappush

# skb memory layout on this machine (x86_64, Linux 6.x; /proc/slabinfo and include/linux/skbuff.h)
SMP_CACHE_BYTES = 64      # SKB_DATA_ALIGN aligns to the L1 cache line
SKB_STRUCT = 256          # SKB_DATA_ALIGN(sizeof(struct sk_buff)): skbuff_head_cache objects are 256 B
SKB_SHINFO = 320          # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), MAX_SKB_FRAGS = 17
SKB_SMALL_HEAD = 576      # skbuff_small_head objects (Linux >= 6.3): every head up to this size
PAGE_SIZE = 4096
LL_RESERVED = 16          # LL_RESERVED_SPACE(veth) = ((hard_header_len 14 + headroom 0) & ~15) + 16
ETH_HLEN = 14
KMALLOC_SIZES = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)


def _align(x: int) -> int:
    return (x + SMP_CACHE_BYTES - 1) & ~(SMP_CACHE_BYTES - 1)


def _head_size(obj: int, small_cache: bool = True) -> int:
    """Bytes the slab allocator gives a head of ``obj`` bytes (``kmalloc_reserve``); ``small_cache``: the
    kernel has the small-head cache (Linux >= 6.3), else small heads come from kmalloc too."""
    if small_cache and obj <= SKB_SMALL_HEAD:
        return SKB_SMALL_HEAD
    for s in KMALLOC_SIZES:
        if obj <= s:
            return s
    size = PAGE_SIZE                # kmalloc_large: a power-of-two number of pages
    while size < obj:
        size *= 2
    return size


def skb_truesize(frame_len: int) -> int:
    """``skb->truesize`` of the skb AF_PACKET allocates to send a ``frame_len``-byte L2 frame.

    ``packet_snd`` asks ``packet_alloc_skb`` for ``LL_RESERVED_SPACE + len`` bytes, all linear
    when that is under a page ("Under a page?  Don't bother with paged skb").  ``__alloc_skb``
    rounds the head up to ``SKB_DATA_ALIGN(size) + SKB_DATA_ALIGN(sizeof(skb_shared_info))``,
    takes it from the small-head cache or the next kmalloc size, and sets ``truesize =
    SKB_TRUESIZE(usable)`` = head allocation + ``SKB_DATA_ALIGN(sizeof(struct sk_buff))``.
    1514 bytes -> 1536 + 320 = 1856 -> kmalloc-2k -> 2304; a 98-byte ping -> 576 + 256 = 832.
    Larger frames: a 30-byte linear head plus whole pages (``alloc_skb_with_frags``).

    The receive side charges the received skb's truesize, which for a frame from a local
    stack crossing a veth is close to this (head + payload); the same function stands in.
    """
    linear = LL_RESERVED + frame_len
    if linear < PAGE_SIZE:
        return _head_size(_align(linear) + SKB_SHINFO) + SKB_STRUCT
    head = _head_size(_align(LL_RESERVED + ETH_HLEN) + SKB_SHINFO) + SKB_STRUCT
    return head + -(-(frame_len - ETH_HLEN) // PAGE_SIZE) * PAGE_SIZE


_TRUESIZE: dict[int, int] = {}


def truesize(frame_len: int) -> int:
    """:func:`skb_truesize`, memoised (called per packet)."""
    ts = _TRUESIZE.get(frame_len)
    if ts is None:
        ts = _TRUESIZE[frame_len] = skb_truesize(frame_len)
    return ts


class SockBuf:
    """A socket's buffer accounting: ``alloc`` bytes charged, ``limit`` bytes, ``drops`` refused.

    :meth:`charge` at time ``t`` first applies every release due at or before ``t``, then
    refuses (counting a drop) if ``alloc >= limit`` -- the kernel's test before it charges,
    so ``alloc`` may exceed ``limit`` by less than one skb.  A release is immediate
    (:meth:`release`, at the caller's ``env.now``) or due at a known later time
    (:meth:`release_at`, kept in a heap and applied when time reaches it: no event).
    Callers must charge in nondecreasing time order.
    """

    __slots__ = ("name", "limit", "alloc", "drops", "charged", "peak", "_later")

    def __init__(self, limit: int, name: str = "sock"):
        if limit < 1:
            raise ValueError(f"{name}: a socket buffer needs a limit >= 1 byte, got {limit}")
        self.name = name
        self.limit = int(limit)
        self.alloc = 0           # bytes charged now (sk_wmem_alloc / sk_rmem_alloc)
        self.drops = 0           # charges refused
        self.charged = 0         # charges accepted
        self.peak = 0            # the largest ``alloc`` reached
        self._later: list = []   # heap of (release time, bytes)

    def charge(self, t: float, nbytes: int) -> bool:
        """Charge ``nbytes`` at time ``t``; False (and a drop counted) if the buffer is full."""
        later = self._later
        if later and later[0][0] <= t:
            self.settle(t)
        alloc = self.alloc
        if alloc >= self.limit:
            self.drops += 1
            return False
        alloc += nbytes
        self.alloc = alloc
        self.charged += 1
        if alloc > self.peak:
            self.peak = alloc
        return True

    def release(self, nbytes: int) -> None:
        self.alloc -= nbytes

    def release_at(self, t: float, nbytes: int) -> None:
        heappush(self._later, (t, nbytes))

    def settle(self, t: float) -> None:
        """Apply the releases due at or before ``t``."""
        later = self._later
        while later and later[0][0] <= t:
            self.alloc -= heappop(later)[1]

    def used(self, t: float) -> int:
        """Bytes charged at ``t`` (releases due by then applied)."""
        self.settle(t)
        return self.alloc


class AfPacketSockets:
    """The netdev datapath's AF_PACKET sockets: one shared send socket, one receive socket per port.

    ``sndbuf`` / ``rcvbuf``: bytes (0: that side unbounded and not modelled).  The send
    socket is attached to each egress port (:meth:`EgressPort.attach_sock`), which charges it
    when the packet reaches the port and releases it when the qdisc hands the packet to the
    device (or drops it).  A receive socket is charged when a frame reaches the datapath's
    port and released when the datapath thread takes it (its CPU work starts).
    """

    __slots__ = ("tx", "rcvbuf", "rx")

    def __init__(self, sndbuf: int = 0, rcvbuf: int = 0, name: str = "ovs"):
        self.tx = SockBuf(sndbuf, f"{name}.tx") if sndbuf else None
        self.rcvbuf = int(rcvbuf)
        self.rx: list = []       # by port number: the port's receive SockBuf, or None

    def add_port(self, name: str, egress) -> None:
        """A new datapath port: a kernel device (an egress that can take a socket) gets sockets."""
        attach = getattr(egress, "attach_sock", None)
        if attach is not None and self.tx is not None:
            attach(self.tx)
        self.rx.append(SockBuf(self.rcvbuf, f"{name}.rx") if attach is not None and self.rcvbuf else None)
