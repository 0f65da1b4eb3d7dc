"""The physical interface (PIF): NIC transmit, the wire, NIC receive.

Transmit is an :class:`~ovssim.path.port.EgressPort` at the link rate with
the port's qdisc (pfifo_fast by default on a real NIC), serialising the whole
Ethernet frame (+ preamble, FCS and inter-frame gap: 24 bytes, IEEE 802.3),
then the cable's propagation delay (about 5 ns/m in copper or fibre).

Receive adds the NIC's interrupt moderation / NAPI poll latency (``rx_delay``,
e.g. ethtool's ``rx-usecs``), a profile distribution, then hands the frame to
the host's bridge uplink port.  Frames keep their order.
"""
from __future__ import annotations

from ..distributions import Sampler
from .port import EgressPort
from .vif import VifLatency


class Nic:
    """A host's PIF: ``tx`` (EgressPort to the wire) and ``rx`` (wire to the bridge)."""

    def __init__(self, env, name: str, rate_bps: float, *, qdisc=None, rx_delay: Sampler,
                 prop_delay: float = 0.0, mtu: int = 1500, txqueuelen: int = 1000,
                 lookahead: bool = True):
        self.name = name
        self.rate_bps = rate_bps
        self.tx = EgressPort(env, rate_bps, qdisc, None, name=name, mtu=mtu,
                             txqueuelen=txqueuelen, prop_delay=prop_delay, lookahead=lookahead)
        self.rx = VifLatency(env, rx_delay, None, lookahead=lookahead, stage=f"{name}.rx")

    def put(self, pkt) -> None:
        """Transmit: from the bridge to the wire."""
        self.tx.put(pkt)
