"""A UDP socket's send buffer where the path keeps the sent skbs charged to it."""
from __future__ import annotations

from ..packet import free_charge
from ..path.afpacket import truesize
from ..sched import FIRE, schedule
from ..tcp.defaults import WMEM_DEFAULT


class UdpSendBuffer:
    """A UDP socket's send buffer on a path that keeps its skbs charged (``Endpoint.tsq``: a veth that does not
    orphan, as Linux 6.1's; a VM's virtio-net until the backend consumed the skb; a qdisc on the sender's own
    device).  Each datagram's skb is charged its truesize (``skb_set_owner_w`` in ``sock_alloc_send_pskb``) until
    it is freed or orphaned below (the path's elements call :meth:`tsq_free`, as for TCP); ``sendmsg`` blocks
    while the charge is at ``sk_sndbuf`` or more (``sock_alloc_send_pskb`` -> ``sock_wait_for_wmem``,
    net/core/sock.c) and the writer is woken once it has fallen to half (``sock_def_write_space``:
    ``sk_wmem_alloc << 1 <= sk_sndbuf``).  So a sender faster than a shaper further on is held to the shaper's
    rate with no loss, where an orphaning path drops the excess at the shaper's queue."""

    __slots__ = ("env", "limit", "alloc", "waiter", "blocked")

    def __init__(self, env, limit: int = WMEM_DEFAULT):
        self.env, self.limit = env, limit
        self.alloc = 0
        self.waiter = None          # the sender's timer, re-armed at the wake-up
        self.blocked = 0            # how often sendmsg blocked

    def charge(self, pkt) -> None:
        pkt.owner = self
        pkt.wmem = truesize(pkt.size)
        self.alloc += pkt.wmem

    def wait(self, timer) -> None:
        self.blocked += 1
        self.waiter = timer

    def tsq_free(self, pkt, t: float) -> None:
        """``sock_wfree``: the skb ``pkt`` is freed or orphaned at ``t``."""
        free_charge(self, pkt, t, self.env, self._release)

    def tsq_charge(self, delta: int) -> None:
        self.alloc += delta

    def _release(self, nbytes: int) -> None:
        self.alloc -= nbytes
        timer = self.waiter
        if timer is not None and 2 * self.alloc <= self.limit:
            self.waiter = None
            timer.callbacks = FIRE
            schedule(self.env, self.env._now, timer)
