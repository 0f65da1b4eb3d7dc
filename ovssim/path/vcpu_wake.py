"""A packet reaching a guest waits until the guest's vCPU runs on the host.

The guest takes the virtio/netfront interrupt only when its vCPU is scheduled
on a host core.  With the vCPUs as host threads (:class:`ovssim.cpu.GuestCpus`),
a vCPU sharing its core with a CPU-bound host thread runs only after that
thread's slice (kernel/sched/fair.c, ``RUN_TO_PARITY``): the hypervisor
scheduling delay seed 002 measured (Tables VII/VIII).  The wake-up itself takes
no CPU here (the guest's receive work is charged where the stack charges it).
"""
from __future__ import annotations

from ..sched import call_at


class VcpuWake:
    """``put(pkt)``: deliver to ``out`` once the guest's vCPU for the packet's connection is running."""

    stage = "vcpu"

    def __init__(self, env, guest, out=None, *, key=None, lookahead: bool = False):
        self.env = env
        self.lookahead = lookahead
        self.guest = guest
        self.out = out
        self.key = key
        self._last = 0.0
        self.packets = 0

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        done = self.guest.serve(t, 0.0, self.key(pkt) if self.key is not None else None)
        if done is not None:
            t = done
        if t < self._last:                      # a vCPU takes its ring's packets in order
            t = self._last
        self._last = t
        pkt.t = t
        self.packets += 1
        if self.lookahead or t <= now:
            self.out.put(pkt)
        else:
            call_at(self.env, t, self.out.put, pkt)
