"""A UDP sender on a host's own kernel (a container's veth) is paced by its own CPU, never by the path.

Linux's ``sendto()`` of a datagram returns once the sending task's CPU has carried it through its own
softirq work (``veth_xmit`` -> ``__netif_rx`` -> ``process_backlog`` up to the first queue another task
drains: an AF_PACKET socket, an AF_XDP ring, the receiving UDP socket); it never waits for what comes
after (drivers/net/veth.c, net/core/dev.c, net/packet/af_packet.c, net/ipv4/udp.c).  A path slower than
the sender drops the excess where the kernel does; every datagram sent is delivered or dropped at a
named place.
"""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from ovssim.cpu.pool import CpuPool
from ovssim.distributions import Sampler
from ovssim.path.endpoint import Endpoint
from ovssim.path.vif import VifBackend, VifLatency
from ovssim.runner import rng_factory
from ovssim.sched import run_until
from ovssim.workloads.base import RunContext
from ovssim.workloads.registry import make_workload

SECS = 0.02


def _stream(*, latency: float, recv_cost: float, veth_cost: float = 0.0, send_cost: float = 2e-6, cores: int = 1):
    """qperf udp_bw from a container ``a`` to a container ``b`` on one host of ``cores`` cores: ``a``'s veth
    (softirq work on the sender's CPU, ``veth_cost``), then ``latency`` that is not CPU work, then ``b``."""
    env = simpy.Environment()
    cpu = CpuPool(env, cores, "host")
    dst = Endpoint(env, "b", None, cpu=cpu, inline_tx=True)
    lat = VifLatency(env, Sampler(latency, np.random.default_rng(1)), dst, lookahead=True)
    veth = VifBackend(env, "container-veth", cpu, delay=Sampler(0.0, np.random.default_rng(2)),
                      cpu_per_packet=veth_cost, cpu_per_byte=0.0, out=lat, lookahead=True, frees_skb=True)
    src = Endpoint(env, "a", veth, cpu=cpu, inline_tx=True)
    wl = make_workload({"tool": "qperf", "test": "udp_bw", "m": "1400b", "t": f"{SECS}s"})
    wl.start(RunContext(env, src, dst, SECS, rng_factory(1, 0),
                        extra={"app": {"send_per_packet": send_cost, "recv_per_packet": recv_cost}}))
    run_until(env, SECS + 0.5)
    return wl, cpu


def test_receiver_work_booked_ahead_does_not_hold_the_sender_back():
    """The receiver's recvmsg() for a datagram 50 us down the path is booked on the sender's core ahead of
    time; the sender's next sendto() is not its work and does not wait for it (before: one datagram per
    ~52 us, the path's pace).  The core is shared: 2 us of sendto() + 1 us of recvmsg() per datagram, and
    a sendto() waits for a gap between booked recvmsg() calls that it fits whole (no split): 3-4 us each."""
    wl, cpu = _stream(latency=50e-6, recv_cost=1e-6)
    assert wl.sent > 0.5 * SECS / 3e-6
    assert wl.rx + wl._recv[2].drops == wl.sent


def test_the_datagrams_own_softirq_work_paces_the_sender():
    """The veth crossing runs in the sending task's softirq, on its CPU: the next sendto() follows it."""
    wl, cpu = _stream(latency=0.0, recv_cost=0.0, veth_cost=3e-6, cores=2)
    assert wl.sent == pytest.approx(SECS / 5e-6, rel=0.01)
    assert wl.rx == wl.sent


def test_a_slower_path_drops_the_excess_at_the_receivers_socket():
    """A reader slower than the sender (on a core of its own): the sender keeps its own pace and the
    receiving socket's buffer drops the rest (UDP RcvbufErrors), as udp_rcv does."""
    wl, cpu = _stream(latency=20e-6, recv_cost=10e-6, cores=2)
    m = {x.name: x.value for x in wl.metrics()}
    assert wl.sent == pytest.approx(SECS / 2e-6, rel=0.02)         # its sendto() alone
    assert wl._recv[2].drops > 0.5 * wl.sent
    assert wl.rx + wl._recv[2].drops == wl.sent
    assert m["send_bw"] > 4 * m["recv_bw"]


def test_context_is_closed_after_each_send():
    wl, cpu = _stream(latency=5e-6, recv_cost=1e-6)
    assert cpu.tx_ctx is None


@pytest.mark.parametrize("port_type", ["afxdp"])
def test_afxdp_udp_bw_conserves_datagrams_and_sender_is_not_paced_by_the_path(port_type):
    """qperf udp_bw through an OVS bridge with AF_XDP ports (the issue-18 configuration): every datagram
    sent is read by the server or dropped at a named place; the sender is well above the 627 Mbit/s the
    path-paced sender reached."""
    from ovssim.profile import Profile
    from ovssim.runner import ARP_SETTLE, DRAIN, app_wakeup
    from ovssim.scenario import from_dict
    from ovssim.topology import build
    from ovssim.validate.afxdp import _config
    from ovssim.validate.base import ROOT

    cfg = _config(port_type, 1, ["qperf_udp_bw"])
    sc = from_dict(cfg.scenario, file="<test>")
    profile = Profile.load(str(ROOT / "calibration" / "local_afxdp.toml"))
    env = simpy.Environment()
    rng = rng_factory(1818, 0)
    topo = build(env, sc, profile, rng)
    spec = dict(sc.workloads[0])
    wl = make_workload(spec)
    app = {"send_per_packet": profile.time("app.send_per_packet"),
           "recv_per_packet": profile.time("app.recv_per_packet"), "wakeup": app_wakeup(profile)}
    wl.start(RunContext(env, topo.endpoints["ns1"], topo.endpoints["ns2"], sc.duration,
                        rng=lambda n: rng(f"workload.x.{n}"), start_at=ARP_SETTLE + sc.warmup,
                        extra={"app": app, "profile": profile}))
    run_until(env, ARP_SETTLE + sc.warmup + sc.duration + DRAIN)
    c = topo.counters()
    drops = {"udp rcvbuf": wl._recv[2].drops,
             "xsk rx ring": c["pmd:local"]["rx_dropped"], "xsk tx ring": c["pmd:local"]["tx_dropped"],
             "cpu backlog": c["cpu:local"]["refused"],
             "qdiscs": sum(v["drops"] + v["port_drops"] for k, v in c.items() if k.startswith("qdisc:"))}
    assert wl.rx + sum(drops.values()) == wl.sent, drops
    m = {x.name: x.value for x in wl.metrics()}
    assert m["send_bw"] > 1500


# -- datagrams above the MTU: IP fragments, reassembled by the receiver ------------------------------------

def test_ip_fragments_of_a_datagram():
    from ovssim.workloads.ipfrag import ip_fragments
    assert ip_fragments(1472) is None                       # 1472 + 8 + 20 = 1500: one frame
    assert ip_fragments(1473) == (1514, 35)                 # 1481 bytes of IP payload: 1480 + 1
    f = ip_fragments(32768)                                 # qperf udp_bw's default message
    assert len(f) == 23 and f[:22] == (1514,) * 22 and f[22] == 32776 - 22 * 1480 + 34
    assert len(ip_fragments(32000)) == 22                   # qperf -m 32k: this machine counted 22 (IpFragCreates / FragOKs)
    assert ip_fragments(9000, mtu=9000) == (9010, 66)           # 8976 = (9000 - 20) & ~7, then 32


def test_fragmented_datagrams_are_reassembled_and_counted_once():
    wl, cpu = _stream(latency=5e-6, recv_cost=0.0)          # 1400 B: one frame
    assert wl._frag is None
    env = simpy.Environment()
    cpu = CpuPool(env, 2, "host")
    dst = Endpoint(env, "b", None, cpu=cpu, inline_tx=True)

    class Count:
        def __init__(self, out):
            self.out, self.n = out, 0

        def put(self, pkt):
            self.n += 1
            assert pkt.size <= 1514
            self.out.put(pkt)

    wire = Count(dst)
    veth = VifBackend(env, "container-veth", cpu, delay=Sampler(0.0, np.random.default_rng(2)),
                      cpu_per_packet=0.5e-6, cpu_per_byte=0.0, out=wire, lookahead=True, frees_skb=True)
    src = Endpoint(env, "a", veth, cpu=cpu, inline_tx=True)
    wl = make_workload({"tool": "qperf", "test": "udp_bw", "m": "32000b", "t": f"{SECS}s"})
    wl.start(RunContext(env, src, dst, SECS, rng_factory(1, 0),
                        extra={"app": {"send_per_packet": 2e-6, "recv_per_packet": 1e-6}}))
    run_until(env, SECS + 0.5)
    assert wire.n == 22 * wl.sent                           # every datagram as 22 frames
    # paced by its own CPU: one sendto() and 22 veth crossings per datagram
    assert wl.sent == pytest.approx(SECS / (2e-6 + 22 * 0.5e-6), rel=0.02)
    assert wl.rx + wl._recv[2].drops == wl.sent and wl.rx > 0
    assert wl.rx_bytes == 32000 * wl.rx
    assert not wl._frag[1].pending and wl._frag[1].mem == 0


def test_a_lost_fragment_loses_its_datagram_and_holds_reassembly_memory():
    from ovssim.packet import FlowKey, Packet
    from ovssim.workloads.ipfrag import Reassembly, ip_fragments
    sizes = ip_fragments(32000)
    r = Reassembly(sizes, high_thresh=200_000, timeout=30.0)
    flow = FlowKey("a", "b", 1, 2, "udp")
    frags = lambda seq: [Packet(flow, s, 0.0, 32000, seq) for s in sizes]
    # datagram 0 complete; datagram 1 misses its last fragment
    assert [r.add(p, 0.0) for p in frags(0)] == [False] * 21 + [True]
    assert not any(r.add(p, 0.0) for p in frags(1)[:-1])
    assert list(r.pending) == [1] and r.mem == 21 * 2304
    # memory above ipfrag_high_thresh: every fragment is dropped until the incomplete queues time out
    for seq in range(2, 6):
        for p in frags(seq)[:-1]:
            r.add(p, 1.0)
    assert r.mem > 200_000 and r.refused > 0
    assert not any(r.add(p, 2.0) for p in frags(9))
    assert [r.add(p, 31.5) for p in frags(10)][-1] is True   # after ipfrag_time the stale queues are gone
    assert r.fails >= 2
