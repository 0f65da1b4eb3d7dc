"""A packet reaching a guest waits until the guest's vCPU runs on the host.

The guest takes the virtio/netfront interrupt only when its vCPU is scheduled
on a host core.  With the vCPUs as host threads (:class:`ovssim.cpu.GuestCpus`),
a vCPU sharing its core with a CPU-bound host thread runs only after that
thread's slice (kernel/sched/fair.c, ``RUN_TO_PARITY``): the hypervisor
scheduling delay seed 002 measured (Tables VII/VIII).  The wake-up itself takes
no CPU here (the guest's receive work is charged where the stack charges it).
A vCPU takes its ring's packets in order: the FIFO and delivery are
:class:`~ovssim.path.vif.VifLatency`'s, with no latency of its own.
"""
from __future__ import annotations

import numpy as np

from ..distributions import Sampler
from .vif import VifLatency


class VcpuWake(VifLatency):
    """``put(pkt)``: deliver to ``out`` once the guest's vCPU for the packet's connection is running."""

    def __init__(self, env, guest, out=None, *, key=None, lookahead: bool = False):
        super().__init__(env, Sampler(0.0, np.random.default_rng(0)), out, lookahead=lookahead, stage="vcpu")
        self.guest = guest
        self.key = key

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        done = self.guest.serve(t, 0.0, self.key(pkt) if self.key is not None else None)
        if done is not None:
            pkt.t = done
        super().put(pkt)
