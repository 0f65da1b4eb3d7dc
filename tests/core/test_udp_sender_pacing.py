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
