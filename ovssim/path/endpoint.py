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

``inline_tx`` (run to completion): the endpoint shares the host's kernel -- a
container behind a veth, a bare-metal host -- so a packet it sends is carried
through the kernel's softirq work (veth, bridge, the kernel datapath, the peer
veth and the receiver's stack) by the sending task itself, on its own CPU,
before the send returns: ``dev_queue_xmit`` -> ``netif_rx`` queues the frame on
the sender's per-CPU backlog, and ``local_bh_enable`` at the end of the
transmit processes it at once (net/core/dev.c).  Senders on such an endpoint
send their next packet only when their core has finished the work queued so
far (the core of their connection, :func:`~ovssim.path.cpu.conn_key`), so no backlog builds between them and a CPU-bound
flow leaves its excess in its socket, as the kernel does.  A UDP sender has no such excess to keep: it waits
only for its own datagram's softirq work, up to the first queue another task drains (an AF_PACKET socket,
an AF_XDP ring, the receiving socket; :meth:`~ovssim.workloads.udp.IperfUdp._carry`), and the path drops
what it cannot carry.  A VM's sender
(``kvm-tap``, Xen) hands its packets to a backend thread instead and is not
held back.

``features`` (see :mod:`ovssim.path.features`) are the guest interface's offloads:
with them, TCP builds GSO skbs (``gso``; Linux always does, ``sk_setup_caps``) and
the interface's transmit segments them in software where it lacks TSO (the
topology puts a :class:`~ovssim.path.gso.SoftwareGso` after the endpoint).  An
endpoint built by hand without ``features`` sends MSS-sized segments, one per
packet (the unit tests' per-segment paths).  ``tsq``: the interface frees or
orphans a sent skb only later (a VM's virtio-net/netfront, freed when the
backend consumed it; a qdisc on the endpoint's own device, which keeps it
charged while it is queued), so TCP Small Queues can hold the sender back; a
veth orphans at once (``__dev_forward_skb`` across namespaces), so a container's
sender without a qdisc of its own is never TSQ-limited.  Inside such a chain only
CPU work is modelled as the sender's: a latency that is not CPU work (a VIF's
``backend_delay``, ``host.stack_delay``) leaves the core idle until the work
after it starts, as a wait would.

:class:`ReceiveStack` (profile ``host.stack_cpu``, 0 = not modelled): the receiving kernel's IP/TCP work
per packet delivered into the endpoint -- ``ip_rcv`` -> ``tcp_v4_rcv`` -> ``tcp_rcv_established`` for data
(queue it, decide the ACK, wake the reader), ``tcp_ack`` for an ACK -- as CPU on the packet's connection
core.  It runs in the softirq that delivers the packet: ``veth_xmit`` -> ``veth_forward_skb`` ->
``__netif_rx`` queues the frame on the current CPU's backlog (drivers/net/veth.c, net/core/dev.c
``enqueue_to_backlog``) and ``process_backlog`` -> ``__netif_receive_skb`` takes it up the stack when the
transmit's ``local_bh_enable`` runs the softirq -- for a container, on the sending task's core.  A bridge's
forwarding (``br_handle_frame`` -> ``br_forward``, net/bridge/br_input.c, br_forward.c) and a veth link's
crossing are paid once per hop; this once per delivery, so a chain of bridges adds only the former.
"""
from __future__ import annotations

from .cpu import conn_key


class ReceiveStack:
    """``put(pkt)``: the endpoint's receive stack's CPU (``cpu_per_packet`` per skb) on the packet's
    connection core, then ``out`` (the endpoint) with the packet's time moved to its completion."""

    stage = "stack-cpu"

    def __init__(self, env, cpu, out=None, *, cpu_per_packet: float):
        self.env = env
        self.cpu = cpu
        self.out = out
        self.cpu_per_packet = cpu_per_packet
        self.packets = 0
        self.dropped = 0

    def put(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        done = self.cpu.serve(t, self.cpu_per_packet, conn_key(pkt.flow))
        if done is None:                # the per-CPU backlog is full (netdev_max_backlog): dropped
            self.dropped += 1
            if pkt.owner is not None:
                pkt.owner.tsq_free(pkt, now)
            return
        self.packets += 1
        pkt.t = done
        self.out.put(pkt)


class Endpoint:
    def __init__(self, env, name: str, out=None, *, cpu=None, vlan: int | None = None, mtu: int = 1500,
                 inline_tx: bool = False, features: dict | None = None, tsq: bool = False,
                 gso_max_size: int = 65536):
        if inline_tx and cpu is None:
            raise ValueError(f"endpoint {name}: inline_tx (run to completion) needs the host's cpu")
        self.env = env
        self.name = name
        self.inline_tx = inline_tx
        self.features = features
        self.vif_kind = None                # the VIF kind the topology put behind it, if any
        self.gso = bool(features)           # TCP builds GSO skbs when the device's features are known
        self.gso_max_size = gso_max_size
        self.tsq = tsq
        self.kernel = None          # (major, minor) of the guest's Linux when not this machine's (vm key)
        self.mtu = mtu              # the guest interface's MTU: TCP's MSS follows it
        self.out = out
        self.cpu = cpu
        self.vlan = vlan
        self._handlers: dict[tuple[str, int], object] = {}
        # CPU per ICMP echo request its kernel answers (host.icmp_echo; ovssim/workloads/ping.py)
        self.icmp_echo = 0.0
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
        if pkt.owner is not None:       # ip_rcv_core: skb_orphan, the sender's charge ends here
            pkt.owner.tsq_free(pkt, self.env._now)
        h = self._handlers.get((pkt.flow.proto, pkt.flow.dport))
        if h is None:
            self.unclaimed += 1
            return
        h.put(pkt)
