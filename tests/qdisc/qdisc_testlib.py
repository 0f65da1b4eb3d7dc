"""Helpers for the qdisc tests: packets, an EgressPort run, throughput per flow."""
from __future__ import annotations

from collections import defaultdict

import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.path.port import EgressPort
from ovssim.qdisc import make_qdisc


def flow(i: int, proto: str = "udp") -> FlowKey:
    return FlowKey(f"10.0.0.{1 + i % 200}", "10.0.1.1", 10000 + i, 5001, proto)


def pkt(i: int = 0, size: int = 1514, t: float = 0.0, *, queue_id=None, priority: int = 0,
        ecn: int = 0, seq: int = 0) -> Packet:
    p = Packet(flow(i), size, t, seq=seq, priority=priority)
    p.queue_id = queue_id
    p.ecn = ecn
    return p


class Recorder:
    """A port's ``out``: keeps (time, packet) of every delivery."""

    def __init__(self, env):
        self.env = env
        self.got: list = []

    def put(self, p) -> None:
        self.got.append((max(p.t, self.env.now), p))

    def bytes_by(self, key, t0: float = 0.0, t1: float = float("inf")) -> dict:
        out = defaultdict(int)
        for t, p in self.got:
            if t0 <= t < t1:
                out[key(p)] += p.size
        return out


def run_port(qdisc, packets, rate_bps: float | None, until: float, *, framing: int | None = None):
    """Offer ``packets`` (each at its ``.t``) to an EgressPort with ``qdisc``; run to ``until``."""
    env = simpy.Environment()
    rec = Recorder(env)
    kw = {} if framing is None else {"framing": framing}
    q = make_qdisc(qdisc) if not hasattr(qdisc, "enqueue") else qdisc
    drops = []
    port = EgressPort(env, rate_bps=rate_bps, qdisc=q, out=rec,
                      on_drop=lambda p, now, why: drops.append((now, p, why)), **kw)
    for p in packets:
        port.put(p)
    env.run(until=until)
    return port, rec, drops


def greedy(flows, rate_bps_each: float, duration: float, size: int = 1514, start: float = 0.0,
           **pkt_kw) -> list:
    """Constant-bit-rate senders, one per entry of ``flows`` (int flow ids or (id, kwargs))."""
    out = []
    for f in flows:
        fid, kw = (f if isinstance(f, tuple) else (f, {}))
        gap = size * 8.0 / rate_bps_each
        n = int(duration / gap)
        for k in range(n):
            out.append(pkt(fid, size, start + k * gap, seq=k, **{**pkt_kw, **kw}))
    out.sort(key=lambda p: p.t)
    return out


def conserved(q) -> bool:
    s = q.stats
    return s.arrivals == s.packets + s.drops + s.qlen and s.qlen >= 0 and s.backlog >= 0 \
        and (s.qlen == 0) == (s.backlog == 0)
