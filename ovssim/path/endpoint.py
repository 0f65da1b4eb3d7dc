"""An endpoint's network stack: where traffic tools send and receive.

A VM, container or bare-metal host has one :class:`Endpoint`.  Tools hand
outgoing packets to ``endpoint.send(pkt)`` (which goes to ``out``, the VIF),
and the path delivers incoming packets to ``endpoint.put(pkt)``, which
demultiplexes them by ``(proto, dport)`` to the handler a tool registered --
what the kernel's socket lookup does.  Packets for no socket are counted as
``unclaimed`` (a real host would answer with an ICMP/RST; tools here always
bind first).

The endpoint's ``cpu`` (a :class:`ovssim.path.cpu.CpuPool`, optional) is where
the tools' own per-packet send/receive work is charged.
"""
from __future__ import annotations


class Endpoint:
    def __init__(self, env, name: str, out=None, *, cpu=None, vlan: int | None = None, mtu: int = 1500):
        self.env = env
        self.name = name
        self.mtu = mtu              # the guest interface's MTU: TCP's MSS follows it
        self.out = out
        self.cpu = cpu
        self.vlan = vlan
        self._handlers: dict[tuple[str, int], object] = {}
        self.received = 0
        self.sent = 0
        self.unclaimed = 0
        self._next_port = 40000

    def bind(self, proto: str, port: int, handler) -> None:
        """Deliver packets with ``flow.proto == proto`` and ``flow.dport == port`` to ``handler.put``."""
        self._handlers[(proto, port)] = handler

    def ephemeral_port(self) -> int:
        self._next_port += 1
        return self._next_port

    def send(self, pkt) -> None:
        # untagged: an access port tags on ingress to the bridge, not in the guest
        self.sent += 1
        self.out.put(pkt)

    def put(self, pkt) -> None:
        self.received += 1
        h = self._handlers.get((pkt.flow.proto, pkt.flow.dport))
        if h is None:
            self.unclaimed += 1
            return
        h.put(pkt)
