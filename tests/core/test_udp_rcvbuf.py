"""A UDP receiver's socket buffer (``__udp_enqueue_schedule_skb``, net/ipv4/udp.c): datagrams a slower
reader leaves queued are charged their skb truesize against ``sk_rcvbuf`` = net.core.rmem_default
(212992 bytes); one arriving while ``sk_rmem_alloc`` exceeds it is dropped.  A reader faster than the
sender drops nothing."""
from __future__ import annotations

import pytest
import simpy

from ovssim.path.afpacket import truesize
from ovssim.path.cpu import CpuPool
from ovssim.path.endpoint import Endpoint
from ovssim.path.port import EgressPort
from ovssim.packet import udp_frame_size
from ovssim.runner import rng_factory
from ovssim.sched import run_until
from ovssim.tcp.defaults import RMEM_DEFAULT
from ovssim.workloads.base import RunContext
from ovssim.workloads.registry import make_workload


def stream(send_cost: float, recv_cost: float, secs: float = 0.2, length: int = 1400):
    env = simpy.Environment()
    dst = Endpoint(env, "b", None, cpu=CpuPool(env, 1, "b.vcpu"))
    port = EgressPort(env, 100e9, {"kind": "pfifo"}, dst, name="vif-b")
    src = Endpoint(env, "a", port, cpu=CpuPool(env, 1, "a.vcpu"))
    wl = make_workload({"tool": "qperf", "test": "udp_bw", "m": f"{length}b", "t": f"{secs}s"})
    wl.start(RunContext(env, src, dst, secs, rng_factory(1, 0),
                        extra={"app": {"send_per_packet": send_cost, "recv_per_packet": recv_cost}}))
    run_until(env, secs + 0.5)
    return wl, {m.name: m.value for m in wl.metrics()}


def test_slow_reader_fills_the_buffer_and_the_rest_is_dropped():
    wl, m = stream(send_cost=5e-6, recv_cost=20e-6)
    sock = wl._recv[2]
    ts = truesize(udp_frame_size(1400))
    assert ts == 2304                                  # kmalloc-2k head + sk_buff, as AF_PACKET's
    # the buffer filled to sk_rcvbuf and overshot by less than one skb (the check precedes the charge)
    assert RMEM_DEFAULT < sock.peak <= RMEM_DEFAULT + ts
    # every datagram sent was read or dropped at the socket (nothing else drops on this path)
    assert wl.rx + sock.drops == wl.sent
    # the reader sets the rate: one datagram per recv(), plus the buffer's worth read after the test
    queued = RMEM_DEFAULT // ts + 1
    assert wl.rx == pytest.approx(0.2 / 20e-6 + queued, abs=3)
    assert m["recv_bw"] < m["send_bw"] / 3


def test_fast_reader_drops_nothing():
    wl, m = stream(send_cost=20e-6, recv_cost=5e-6)
    assert wl._recv[2].drops == 0 and wl.rx == wl.sent
    assert m["recv_bw"] == pytest.approx(m["send_bw"])
