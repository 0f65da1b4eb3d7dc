"""A store-and-forward physical Ethernet switch (e.g. the thesis's 100 Mbit/s switch).

A frame is received whole (the sender's NIC finished serialising it), looked
up after a fixed forwarding ``latency``, and queued at the egress port, which
serialises it at the port rate from a shared-nothing per-port buffer
(``buffer`` bytes, tail drop).  MAC learning and VLAN rules as any bridge
(:class:`~ovssim.path.bridge.Bridge`); no CPU is involved.

A TSO skb's frames (a train, ``first_at`` .. ``t``, :meth:`EgressPort._train_done`) are
forwarded one by one as each is received: the train goes on from its first frame's arrival +
``latency``, every frame ``latency`` after it came in, so the far NIC receives them spread out, one
frame time apart, and the egress port sends the train from its first frame (if free) while its last
frame leaves no earlier than it arrived + its serialisation.  Store-and-forward holds each frame
until it is received whole (its FCS checked), not a burst of frames until the burst is in.
"""
from __future__ import annotations

from .. import units
from .bridge import Bridge
from .port import EgressPort


class PhysicalSwitch(Bridge):
    stage = "switch"

    def __init__(self, env, name: str, *, latency: float = 3e-6, lookahead: bool = True):
        super().__init__(env, name, lookahead=lookahead)
        self.latency = units.time(latency)          # "3us" as tc writes it, or seconds

    def add_link(self, name: str, rate_bps: float, out, *, buffer_bytes: int = 131072,
                 prop_delay: float = 0.0, vlan=None, trunks=None):
        """A switch port with an egress queue toward ``out``; returns the BridgePort (its ingress)."""
        egress = EgressPort(self.env, rate_bps, {"kind": "bfifo", "limit": buffer_bytes}, out,
                            name=f"{self.name}.{name}", prop_delay=prop_delay, lookahead=self.lookahead)
        return self.add_port(name, egress, vlan=vlan, trunks=trunks)

    def process(self, port, pkt, vlan, t: float) -> None:
        self.deliver(port, pkt, vlan, t + self.latency)
