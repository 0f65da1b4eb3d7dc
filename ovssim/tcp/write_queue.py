"""The socket's write queue: unsent skbs built as the application writes, as Linux builds them.

Linux builds a TCP socket's skbs in ``tcp_sendmsg_locked`` (net/ipv4/tcp.c, 6.x), at write time:

* ``size_goal`` (``tcp_send_mss`` -> ``tcp_xmit_size_goal``): the device's ``sk_gso_max_size``
  (``gso_max_size - (MAX_TCP_HEADER + 1)``) bounded by half the largest window the peer has offered
  (``tcp_bound_to_half_wnd``), in whole segments, at most ``sk_gso_max_segs``; one MSS without GSO.
* Each write is copied into the write queue's tail skb while it is shorter than ``size_goal`` and
  not yet sent (``tcp_write_queue_tail`` holds only unsent skbs since the rtx queue became its own
  rb-tree; ``tcp_skb_can_collapse_to``), then into new skbs of ``size_goal`` each, the last one
  partial.  An skb that reaches ``size_goal`` inside a write is pushed at once (``tcp_push_one``).
* At the end of the write, ``tcp_push``: the tail stays corked (``tcp_should_autocork``) while it is
  shorter than ``size_goal``, ``tcp_autocorking`` = 1, the rtx queue is not empty and
  ``sk_wmem_alloc`` > the tail's truesize (something of this socket still sits in a qdisc or a
  device); TX completion (``tcp_wfree`` -> ``tcp_tsq_handler``) or the next write sends it.

``tcp_write_xmit`` (tcp_output.c, 6.18) then sends the head skb, first grown from the next
unsent skb up to the congestion window's quota and ``tcp_tso_autosize`` (``tcp_grow_skb``, since
6.10: one next skb, bytes shifted, never beyond it), or split (``tso_fragment``) to them and the
peer's window -- a split that stays when TCP Small Queues, checked after it, holds the cut back
(``split_head``).  ``tcp_mtu_probe``'s merging is not modelled.  This class keeps only the skbs' ends
in sequence space; the head skb starts at the sender's ``snd_nxt``.
"""
from __future__ import annotations

from collections import deque

from .buffers import tcp_skb_truesize
from .defaults import MAX_TCP_HEADER

TCP_MSS_DEFAULT = 536            # include/net/tcp.h: tcp_bound_to_half_wnd's threshold
AUTOCORKING = True               # net.ipv4.tcp_autocorking = 1 (the default)


def xmit_size_goal(mss: int, gso_max_size: int | None, gso_max_segs: int, max_window: int) -> int:
    """``tcp_xmit_size_goal``: bytes a write fills an skb to (``gso_max_size=None``: no GSO, one MSS)."""
    if gso_max_size is None:
        return mss
    goal = gso_max_size - (MAX_TCP_HEADER + 1)
    cutoff = max_window >> 1 if max_window > TCP_MSS_DEFAULT else max_window     # tcp_bound_to_half_wnd
    if cutoff and goal > cutoff:
        goal = cutoff
    segs = min(goal // mss, gso_max_segs)
    return max(segs, 1) * mss


class WriteQueue:
    """``sk_write_queue``: the unsent skbs, as their end sequence numbers (head first)."""

    def __init__(self):
        self.ends: deque[int] = deque()
        self.write_seq = 0           # tp->write_seq: end of the bytes built into skbs
        self.tail_seq = 0            # where the tail skb starts (== write_seq: no unsent tail)
        self.skbs_built = 0

    def __len__(self) -> int:
        return len(self.ends)

    def is_tail(self, end: int) -> bool:
        return end == self.write_seq

    def tail_len(self, snd_nxt: int) -> int:
        """Bytes in the unsent tail skb (after ``tso_fragment`` the unsent remainder)."""
        return self.write_seq - max(self.tail_seq, snd_nxt) if self.ends else 0

    def append(self, nbytes: int, size_goal: int, snd_nxt: int) -> None:
        """``tcp_sendmsg_locked``'s copy loop: ``nbytes`` into the tail while it has room, then new skbs."""
        ends = self.ends
        if ends:
            room = size_goal - self.tail_len(snd_nxt)
            if room > 0:
                take = nbytes if nbytes < room else room
                self.write_seq += take
                ends[-1] = self.write_seq
                nbytes -= take
        while nbytes > 0:
            take = nbytes if nbytes < size_goal else size_goal
            self.tail_seq = self.write_seq
            self.write_seq += take
            ends.append(self.write_seq)
            self.skbs_built += 1
            nbytes -= take

    def sent(self, upto: int) -> None:
        """Data below ``upto`` left (``tcp_event_new_data_sent``); a head cut inside stays (``tso_fragment``)."""
        ends = self.ends
        while ends and ends[0] <= upto:
            ends.popleft()

    def split_head(self, at: int) -> None:
        """``tso_fragment`` of the head skb at ``at`` without sending it: the cut stays an skb of its own."""
        ends = self.ends
        if ends and at < ends[0]:
            if len(ends) == 1:
                self.tail_seq = at
            ends.appendleft(at)

    def grow_head(self, snd_nxt: int, amount: int) -> int:
        """``tcp_grow_skb`` (tcp_output.c, Linux 6.10+): move up to ``amount`` bytes of the next unsent
        skb into the head before it is sent, dropping the next one once empty; returns the head's end."""
        ends = self.ends
        if len(ends) < 2:
            return ends[0] if ends else snd_nxt
        head, nxt = ends[0], ends[1]
        if head + amount >= nxt:
            ends.popleft()
            ends[0] = nxt
            if len(ends) == 1:
                self.tail_seq = snd_nxt
            return nxt
        ends[0] = head + amount
        if len(ends) == 2:
            self.tail_seq = head + amount
        return head + amount

    def should_autocork(self, snd_nxt: int, size_goal: int, rtx_skbs: int, wmem_alloc: int,
                        head: int | None = None) -> bool:
        """``tcp_should_autocork`` for the tail after a write (``wmem_alloc`` counts from 1, as sk_wmem_alloc)."""
        n = self.tail_len(snd_nxt)
        return (AUTOCORKING and 0 < n < size_goal and rtx_skbs > 0
                and wmem_alloc > tcp_skb_truesize(n, head))
