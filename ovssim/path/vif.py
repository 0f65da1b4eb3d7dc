"""The virtualization layer: a VM's virtual interface and its host backend.

Kinds (profile keys ``vif.<kind>.*``):

* ``kvm-tap``: virtio-net in the guest, a tap device on the host drained by a
  vhost-net kernel thread (the thesis's KVM testbed, seed 000 Fig. 10);
* ``xen-vif``: Xen paravirtual netfront/netback (seed 002's XenServer; seed
  004's ~5.1 Gbit/s "vif" rounds);
* ``xen-hvm-tap``: an HVM guest without PV drivers, its NIC emulated by
  qemu-dm behind a tap (seed 004's ~123 Mbit/s "tap" rounds: ~40x slower);
* ``container-veth``: a container's veth pair into the host namespace
  (the companion thesis's Docker rows);
* ``bare-metal``: no virtualization layer (zero cost).

Each crossing costs host CPU (``cpu_per_packet`` per skb -- a GSO skb is one
descriptor chain, one notification -- + ``cpu_per_byte`` x size,
the backend thread's copy and notification work, served by the host's
:class:`~ovssim.path.cpu.CpuPool` on that thread's core; a ``container-veth``
has no backend thread: ``veth_xmit`` and the peer's receive run in the softirq
of whoever sent the packet, so its work goes to the core of the packet's flow,
where the sender and the bridge work too -- see ``inline_tx`` in
:mod:`ovssim.path.endpoint`) and adds a backend latency drawn from the
profile (hypervisor scheduling and notification; heavy-tailed for Xen, whose
scheduling delay seed 002 measured up to 3-7 ms against an average of 2-3 us,
Tables VII-VIII).  Packets keep their order through a VIF: a virtqueue/ring
is FIFO, so a late packet delays those behind it.

:class:`VifBackend` is one direction.  Guest -> host it is an element
(``put``/``out``); host -> guest its :meth:`service` drains the tap port's
qdisc (``EgressPort(service=vif.service)``), whose ``out`` is the backend's
:attr:`latency` element, so the port's qdisc fills when the backend cannot
keep up -- as a tap's qdisc does when the vhost ring is full.

TCP Small Queues: guest -> host, the guest's driver frees a sent skb once the
backend has consumed it (virtio-net's TX completion, netfront's response), so
the skb's charge on its socket (``Packet.owner``) is released when the
backend's work for it is done -- unless ``frees_skb`` is false: a veth that
keeps the skb's socket (``__dev_forward_skb`` -> ``skb_scrub_packet``, which
no longer orphans, net/core/skbuff.c) leaves the charge to the receiver's
``ip_rcv_core`` (:class:`~ovssim.path.endpoint.Endpoint`) or a qdisc's drop.
"""
from __future__ import annotations

import zlib

from .. import units
from ..distributions import Sampler
from ..sched import call_at
from .cpu import CpuPool, conn_key

VIF_KINDS = ("kvm-tap", "xen-vif", "xen-hvm-tap", "container-veth", "bare-metal")
#: kinds whose guest shares the host's kernel: no backend thread, softirq work in the sender's context
INLINE_KINDS = ("container-veth", "bare-metal")
# the host thread that does a VIF kind's backend work: vhost-net for a tap, netback (or qemu-dm's) for Xen
BACKEND_THREAD_KIND = {"kvm-tap": "vhost", "xen-vif": "netback", "xen-hvm-tap": "netback"}


class VifLatency:
    """The backend's latency on the way to ``out``, FIFO-preserving, no event with lookahead."""

    stage = "vif"

    def __init__(self, env, delay: Sampler, out=None, *, lookahead: bool = False, stage: str = "vif"):
        self.env = env
        self.delay = delay
        self.out = out
        self.lookahead = lookahead
        self.stage = stage
        self._last = 0.0
        self.packets = 0

    def put(self, pkt) -> None:
        """The packet leaves at its time plus the delay, not before the one ahead of it; a next element
        that is a VifLatency too (the host stack's delay after a backend's) is applied in this call."""
        now = self.env._now
        lat = self
        t = pkt.t
        while True:
            if t < now:
                t = now
            t += lat.delay.next()
            if t < lat._last:
                t = lat._last
            lat._last = t
            lat.packets += 1
            out = lat.out
            if type(out) is not VifLatency or not (lat.lookahead or t <= now):
                break
            lat = out
        pkt.t = t
        if lat.lookahead or t <= now:
            out.put(pkt)
        else:
            call_at(self.env, t, out.put, pkt)


class VifBackend:
    """One direction of a VIF: host CPU work, then the backend latency."""

    def __init__(self, env, kind: str, cpu: CpuPool, *, delay: Sampler, cpu_per_packet: float,
                 cpu_per_byte: float, out=None, lookahead: bool = False, direction: str = "tx",
                 name: str = "vif", frees_skb: bool = True):
        if kind not in VIF_KINDS:
            raise ValueError(f"unknown VIF kind {kind!r}; use one of {', '.join(VIF_KINDS)}")
        self.env = env
        self.kind = kind
        self.cpu = cpu
        self.cpu_per_packet = units.time(cpu_per_packet)      # "3us" or seconds
        self.cpu_per_byte = units.time(cpu_per_byte)
        self.direction = direction
        self.name = name
        # one backend thread per VIF direction (a vhost worker, a netback thread): its work
        # stays on one core, so the VIF never reorders a flow
        self.thread_key = zlib.crc32(f"{name}.{direction}".encode())
        # no backend thread (a veth): the work runs in the sender's softirq, on its connection's core
        self.inline = kind in INLINE_KINDS
        self._kflow = self._kkey = None      # the last packet's flow and its connection key (a veth's core)
        # a host whose scenario schedules threads (background load, vCPUs on its cores): the backend
        # is a thread of its own, delayed by what shares its core (ovssim.cpu); else keyed work as before
        self.thread = None
        if not self.inline and cpu is not None and getattr(cpu, "schedule_threads", False):
            self.thread = cpu.app_thread(f"{name}.{direction}", self.thread_key, BACKEND_THREAD_KIND.get(kind, "vhost"))
        self.latency = VifLatency(env, delay, out, lookahead=lookahead, stage=f"vif.{direction}")
        self.dropped = 0
        self.packets = 0
        self.frees_skb = frees_skb

    @property
    def out(self):
        return self.latency.out

    @out.setter
    def out(self, value) -> None:
        self.latency.out = value

    def service(self, pkt, now: float) -> float | None:
        """CPU completion time of this packet's backend work started at ``now`` (None: refused)."""
        work = self.cpu_per_packet + self.cpu_per_byte * pkt.size
        if work <= 0.0:
            return now
        if self.thread is not None:
            return self.cpu.run(self.thread, now, work)
        return self.cpu.serve(now, work, self._key(pkt.flow) if self.inline else self.thread_key)

    def _key(self, flow) -> int:
        """The connection key of ``flow`` (:func:`conn_key`), kept for the next packet of the same flow."""
        if flow is not self._kflow:
            self._kflow = flow
            self._kkey = conn_key(flow)
        return self._kkey

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        if pkt.stamps is not None:
            pkt.stamps[f"vif.{self.direction}"] = t
        # service(pkt, t), inlined
        work = self.cpu_per_packet + self.cpu_per_byte * pkt.size
        if not work <= 0.0:
            if self.thread is not None:
                t = self.cpu.run(self.thread, t, work)
            elif self.inline:
                t = self.cpu.serve(t, work, self._key(pkt.flow))
            else:
                t = self.cpu.serve(t, work, self.thread_key)
            if t is None:
                self.dropped += 1
                if pkt.owner is not None:
                    pkt.owner.tsq_free(pkt, now)
                return
        if pkt.owner is not None and self.frees_skb:   # the backend consumed the skb: the guest frees it
            pkt.owner.tsq_free(pkt, t)
        self.packets += 1
        pkt.t = t
        self.latency.put(pkt)
