"""Links between chained bridges: OVS patch ports and Linux veth pairs.

*Patch ports* (OVS ``type=patch``) have no device and no queue: ovs-vswitchd
translates a packet across a patch port inside the same datapath flow, so the
second bridge costs no extra datapath pass.  Seed 003 measured throughput flat
from 1 to 8 chained bridges with patch ports; seed 004 an interim bridge
costing 1-2 %.  :class:`PatchPort` hands the frame straight to the peer
bridge's forwarding decision (learning, VLAN rules), with an optional small
translation cost.

*Veth pairs* are real devices: ``veth_xmit`` queues the frame to the peer's
per-CPU backlog (``netif_rx``, bounded by ``netdev_max_backlog``) and a
softirq on a host core receives it into the next bridge, which then does its
own full datapath pass.  Seed 003 saw ~10 % less throughput at 2 bridges with
1-2 iperf threads and a collapse with more threads than cores.
"""
from __future__ import annotations

from .. import units
from .cpu import CpuPool, conn_key


class PatchPort:
    """Egress of a patch port: delivers into the peer bridge without a datapath pass.

    ``cpu_per_packet``: the translation's work across the patch (the longer action list of
    the combined flow) in the OVS thread that polls the bridge (``key``: its core), per skb."""

    stage = "patch"

    def __init__(self, env, peer_port=None, *, translate: float = 0.0, cpu=None, key: int | None = None,
                 cpu_per_packet: float = 0.0):
        self.env = env
        self.out = peer_port          # the peer bridge's BridgePort
        self.translate = units.time(translate)      # "1us" as tc writes it, or seconds
        self.cpu = cpu
        self.key = key
        self.cpu_per_packet = units.time(cpu_per_packet)
        self.packets = 0
        self.dropped = 0

    def put(self, pkt) -> None:
        self.packets += 1
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        if self.cpu_per_packet > 0.0 and self.cpu is not None:
            t = self.cpu.serve(t, self.cpu_per_packet, conn_key(pkt.flow) if self.key is None else self.key)
            if t is None:
                self.dropped += 1
                return
        pkt.t = t + self.translate
        port = self.out
        port.rx += 1
        admitted = port.bridge.admit(port, pkt)
        if admitted is not None:
            # no datapath pass: OVS translates across the patch inside the same flow
            port.bridge.deliver(port, pkt, admitted[1], admitted[0])


class VethLink:
    """One direction of a veth pair: CPU work on a host core, then the peer's ingress.

    ``cpu_per_packet`` is the ``veth_xmit`` + ``netif_receive_skb`` softirq work;
    a full per-CPU backlog (the pool's ``backlog_limit``) drops the frame.
    """

    stage = "veth"

    def __init__(self, env, cpu: CpuPool, out=None, *, cpu_per_packet: float = 1e-6,
                 cpu_per_byte: float = 0.0):
        self.env = env
        self.cpu = cpu
        self.out = out
        self.cpu_per_packet = units.time(cpu_per_packet)
        self.cpu_per_byte = units.time(cpu_per_byte)
        self.packets = 0
        self.dropped = 0

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        done = self.cpu.serve(t, self.cpu_per_packet + self.cpu_per_byte * pkt.size, conn_key(pkt.flow))
        if done is None:
            self.dropped += 1
            return
        self.packets += 1
        pkt.t = done
        self.out.put(pkt)
