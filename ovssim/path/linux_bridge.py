"""The Linux bridge (``net/bridge``), the alternative to OVS.

Every frame takes the bridge's per-packet forwarding work (``br_handle_frame``
-> FDB lookup -> ``br_forward``) on a host core: a profile distribution of CPU
time.  MAC learning and flooding of unknown destinations follow
:class:`ovssim.path.bridge.Bridge`.  The thesis (seed 000, Tables 6-7) found it
slower than OVS under KVM: ~87 vs ~91 Mbit/s, 0.51 vs 0.31 ms RTT.
"""
from __future__ import annotations

from ..distributions import Sampler
from .bridge import Bridge
from .cpu import CpuPool, conn_key


class LinuxBridge(Bridge):
    stage = "linux-bridge"

    def __init__(self, env, name: str, cpu: CpuPool, *, forward: Sampler, lookahead: bool = True,
                 port_forward=None):
        super().__init__(env, name, lookahead=lookahead)
        self.cpu = cpu
        self.forward_s = forward
        # ``port_forward(port name)``: a Sampler of the forwarding work of the frames entering by that port,
        # a stream per ingress port (a direction), as OvsDatapath's ``port_hits``; None: one stream
        self._port_forward = port_forward
        self.cpu_drops = 0

    def add_port(self, name: str, egress=None, *, vlan: int | None = None, trunks=None):
        port = super().add_port(name, egress, vlan=vlan, trunks=trunks)
        port.hits = (self.forward_s if self._port_forward is None else self._port_forward(name)).it
        return port

    def process(self, port, pkt, vlan, t: float) -> None:
        done = self.cpu.serve(t, next(port.hits), conn_key(pkt.flow))
        if done is None:
            self.cpu_drops += 1
            return
        self.deliver(port, pkt, vlan, done)

    def counters(self) -> dict:
        c = super().counters()
        c["cpu_drops"] = self.cpu_drops
        return c
