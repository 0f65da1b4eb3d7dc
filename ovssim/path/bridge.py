"""What every bridge shares: ports, VLAN rules, MAC learning and flooding.

Ports are *access* ports (``vlan=T``: untagged frames from the port join VLAN
T; only VLAN-T frames leave by it, untagged) or *trunk* ports (``trunks``: a
set of VLANs, or ``None`` with ``vlan=None`` for all; frames keep their 802.1Q
tag, +4 bytes on the wire).  A bridge delivers only between ports of the same
VLAN -- the isolation seed 002 verified with ping/ARP (its Tables II and III).

MAC learning: a frame's source MAC is learned on its ingress port (per VLAN,
aged after ``mac_aging`` = 300 s, the Linux bridge's ``ageing_time`` and OVS's
``mac-aging-time`` default).  A frame to an unknown destination is flooded to
every other port of its VLAN (copies are made).

Subclasses decide *how long* forwarding takes (:class:`OvsDatapath`,
:class:`LinuxBridge`); this class decides *where* a frame goes.
"""
from __future__ import annotations

import copy

from ..packet import VLAN_TAG

MAC_AGING = 300.0


class BridgePort:
    """One port of a bridge: ``put(pkt)`` is ingress; ``egress.put`` sends out of it."""

    __slots__ = ("bridge", "no", "name", "egress", "vlan", "trunks", "rx", "tx", "dropped", "link", "memo", "hits")

    def __init__(self, bridge, no: int, name: str, egress, vlan: int | None, trunks):
        self.bridge, self.no, self.name, self.egress = bridge, no, name, egress
        self.link = False           # a veth pair to another bridge (a chain link), not a VIF or an uplink
        self.memo = None            # the bridge's per-port cache of its last flow (OvsDatapath.process)
        self.hits = None            # the per-frame cost draws of the frames entering here (a bridge's own)
        self.vlan = vlan
        self.trunks = None if trunks is None else frozenset(trunks)
        self.rx = self.tx = self.dropped = 0

    @property
    def is_access(self) -> bool:
        return self.vlan is not None

    def carries(self, vlan: int | None) -> bool:
        if self.vlan is not None:
            return vlan == self.vlan
        return self.trunks is None or vlan in self.trunks

    def put(self, pkt) -> None:
        self.rx += 1
        self.bridge.receive(self, pkt)


class Bridge:
    """Forwarding decisions shared by OVS (NORMAL action) and the Linux bridge."""

    stage = "bridge"

    def __init__(self, env, name: str, *, lookahead: bool = True, mac_aging: float = MAC_AGING):
        self.env = env
        self.name = name
        self.lookahead = lookahead
        self.mac_aging = mac_aging
        self.ports: list[BridgePort] = []
        self.fdb: dict[tuple, tuple[BridgePort, float]] = {}
        self.flooded = 0
        self.vlan_drops = 0
        self.forwarded = 0

    def add_port(self, name: str, egress=None, *, vlan: int | None = None, trunks=None) -> BridgePort:
        if vlan is not None and not 0 < vlan < 4095:
            raise ValueError(f"bridge {self.name} port {name}: VLAN tag {vlan} outside 1..4094")
        port = BridgePort(self, len(self.ports), name, egress, vlan, trunks)
        self.ports.append(port)
        return port

    # -- VLAN rules --------------------------------------------------------------
    def ingress_vlan(self, port: BridgePort, pkt):
        """The frame's VLAN inside the bridge, or ``False`` if the port must drop it."""
        if port.vlan is not None:                 # access port
            if pkt.vlan is not None and pkt.vlan != port.vlan:
                return False
            return port.vlan
        if port.trunks is not None and pkt.vlan not in port.trunks:
            return False
        return pkt.vlan

    def _emit(self, out: BridgePort, pkt, vlan, t: float) -> None:
        """Send ``pkt`` (in ``vlan``) out of ``out`` at time ``t``, applying its tag rules."""
        if out.vlan is not None:                  # access: leaves untagged
            if pkt.vlan is not None:
                pkt.size -= VLAN_TAG * pkt.gso_segs
            pkt.vlan = None
        else:                                     # trunk: keeps / gains the tag
            if vlan is not None and pkt.vlan is None:
                pkt.size += VLAN_TAG * pkt.gso_segs
            pkt.vlan = vlan
        fa = pkt.first_at
        if fa is None:
            pkt.t = t
        else:                                     # a frame train off a wire: ``t`` is its first frame's
            pkt.t += t - fa                       # time, the others follow at the spacing they came in
            pkt.first_at = t
        out.tx += 1
        out.egress.put(pkt)

    # -- learning and delivery ----------------------------------------------------------
    def deliver(self, in_port: BridgePort, pkt, vlan, t: float) -> None:
        """Learn the source (``fdb``: (vlan, mac) -> (port, time learned)), then unicast to the
        destination's port if known and not aged out, else flood the VLAN."""
        fdb = self.fdb
        fdb[(vlan, pkt.src_mac)] = (in_port, t)
        e = fdb.get((vlan, pkt.dst_mac))
        out = None if e is None or t - e[1] > self.mac_aging else e[0]
        self.forwarded += 1
        if out is not None:
            if out is not in_port and out.carries(vlan):
                self._emit(out, pkt, vlan, t)
            return
        self._flood(in_port, pkt, vlan, t)

    def _flood(self, in_port: BridgePort, pkt, vlan, t: float) -> None:
        """Copies of a frame to every other port of its VLAN (unknown destination)."""
        self.flooded += 1
        targets = [p for p in self.ports if p is not in_port and p.carries(vlan)]
        for i, p in enumerate(targets):
            self._emit(p, pkt if i == len(targets) - 1 else copy.copy(pkt), vlan, t)

    def admit(self, port: BridgePort, pkt):
        """Ingress: ``(time, vlan)`` of a frame the port accepts, or ``None`` (VLAN drop)."""
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        vlan = self.ingress_vlan(port, pkt)
        if vlan is False:
            self.vlan_drops += 1
            port.dropped += 1
            return None
        if pkt.stamps is not None:
            pkt.stamps[self.name] = t
        return t, vlan

    def receive(self, port: BridgePort, pkt) -> None:
        """:meth:`admit` (inlined: it runs for every frame), then :meth:`process`.

        A frame train off a wire (a TSO skb's frames, ``first_at`` .. ``t``:
        :class:`~ovssim.path.switch.PhysicalSwitch`) is taken from its first frame's arrival,
        as a switch takes each frame when it is received."""
        now = self.env._now
        t = pkt.first_at
        if t is None:
            t = pkt.t
        if t < now:
            t = now
        pv = port.vlan
        if pv is not None:                                   # access port
            if pkt.vlan is not None and pkt.vlan != pv:
                self.vlan_drops += 1
                port.dropped += 1
                return
            vlan = pv
        else:
            vlan = pkt.vlan
            if port.trunks is not None and vlan not in port.trunks:
                self.vlan_drops += 1
                port.dropped += 1
                return
        if pkt.stamps is not None:
            pkt.stamps[self.name] = t
        self.process(port, pkt, vlan, t)

    def process(self, port: BridgePort, pkt, vlan, t: float) -> None:  # pragma: no cover - abstract
        """Forward an admitted frame: the subclass's timing, then :meth:`deliver`."""
        raise NotImplementedError

    def counters(self) -> dict:
        return {"forwarded": self.forwarded, "flooded": self.flooded, "vlan_drops": self.vlan_drops}
