"""The physical interface (PIF): NIC transmit, the wire, NIC receive.

Transmit is an :class:`~ovssim.path.port.EgressPort` at the link rate with
the port's qdisc (pfifo_fast by default on a real NIC), serialising the whole
Ethernet frame (+ preamble, FCS and inter-frame gap: 24 bytes, IEEE 802.3),
then the cable's propagation delay (about 5 ns/m in copper or fibre).

A NIC with TSO (``features``, :mod:`ovssim.path.features`) takes a GSO skb
whole and puts its frames on the wire back to back (the port serialises the
train exactly, without an event per frame); without TSO the host segments it
first, in software at its CPU cost (:class:`~ovssim.path.gso.SoftwareGso`).

Receive is :class:`~ovssim.path.napi.NapiRx`: interrupt moderation
(``rx_delay``, e.g. ethtool's ``rx-usecs``, a profile distribution, and
``rx-frames``), NAPI polls of up to 64 frames and GRO merging each poll's
in-order segments of a flow, then the host's bridge uplink port.  Frames keep
their order.
"""
from __future__ import annotations

from .. import units
from ..distributions import Sampler
from .features import resolve
from .gso import SoftwareGso
from .napi import NapiRx
from .port import EgressPort


class Nic:
    """A host's PIF: ``tx`` (EgressPort to the wire) and ``rx`` (wire to the bridge)."""

    def __init__(self, env, name: str, rate_bps: float, *, qdisc=None, rx_delay: Sampler,
                 prop_delay: float = 0.0, mtu: int = 1500, txqueuelen: int = 1000,
                 lookahead: bool = True, features: dict | None = None, cpu=None,
                 cpu_per_poll: float = 0.0, cpu_per_packet: float = 0.0, cpu_per_byte: float = 0.0,
                 gso_per_segment: float = 0.0, gso_per_byte: float = 0.0, rx_frames: int = 0):
        self.name = name
        # tc's spelling ("1gbit", "25ns") or SI numbers
        rate_bps = units.rate(rate_bps)
        cpu_per_poll, cpu_per_packet, cpu_per_byte, gso_per_segment, gso_per_byte = map(
            units.time, (cpu_per_poll, cpu_per_packet, cpu_per_byte, gso_per_segment, gso_per_byte))
        self.rate_bps = rate_bps
        self.features = f = resolve("nic", features)
        self.tx = EgressPort(env, rate_bps, qdisc, None, name=name, mtu=mtu,
                             txqueuelen=txqueuelen, prop_delay=prop_delay, lookahead=lookahead)
        # what the bridge hands the NIC: the port itself with TSO, else software segmentation first
        self.xmit = self.tx if f["tso"] else SoftwareGso(
            env, cpu, self.tx, checksum=f["tx-checksumming"], cpu_per_segment=gso_per_segment,
            cpu_per_byte=gso_per_byte)
        self.rx = NapiRx(env, rx_delay, None, cpu=cpu, gro=f["gro"], cpu_per_poll=cpu_per_poll,
                         cpu_per_packet=cpu_per_packet, cpu_per_byte=cpu_per_byte, rx_frames=rx_frames,
                         name=f"{name}.rx")

    def put(self, pkt) -> None:
        """Transmit: from the bridge to the wire."""
        self.xmit.put(pkt)
