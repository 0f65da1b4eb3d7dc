"""Core speed benchmark (issue 2): packets per wall-second, full path vs a bare SimPy queue.

(a) ovssim: a 95 Mbit/s iperf UDP stream (1470-byte datagrams) from a KVM guest
    through VIF -> OVS datapath -> pfifo -> PIF (a 1 Gbit/s NIC and its wire) for 10
    simulated seconds, built from the same elements and default profile the
    topology builder uses.
(b) baseline: the same number of packets through a bare SimPy single-queue loop --
    a source process, a Store and a server process with a timeout per packet, the
    way SimPy tutorials and ns.py build a queue.
Both run in this process, one after the other; on a shared, noisy machine the
ratio is the figure to read.  Target: (a) >= 300,000 packets per wall-second and
>= 2.3x (b).  Run: .venv/bin/python benchmarks/bench_core.py [--calls]
"""
from __future__ import annotations

import time

import simpy

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, udp_frame_size
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.datapath import OvsDatapath
from ovssim.path.endpoint import Endpoint
from ovssim.path.port import EgressPort
from ovssim.path.vif import VifBackend
from ovssim.profile import Profile
from ovssim.runner import rng_factory
from ovssim.sched import run_until
from ovssim.workloads.base import RunContext
from ovssim.workloads.udp import IperfUdp

DURATION = 10.0
RATE = 95e6
LENGTH = 1470
NIC_RATE = 1e9


def build_path(env, prof: Profile, rng, qdisc=None):
    """VM endpoint -> VIF (kvm-tap) -> OVS -> NIC port (``qdisc``, default pfifo; 1 Gbit/s) -> wire -> sink.

    Returns (source endpoint, destination endpoint, wire end, NIC port); benchmarks/bench_qdiscs.py
    reuses it with each qdisc."""
    host = CpuPool(env, 4, "host", backlog_limit=prof.int("host.netdev_max_backlog"))
    vcpu = CpuPool(env, 1, "vm.vcpu")
    ovs = OvsDatapath(env, "br0", host, stats=prof.sampler("ovs.stats", rng("s")),
                      lookup=prof.sampler("ovs.lookup", rng("l")), actions=prof.sampler("ovs.actions", rng("a")),
                      upcall=prof.sampler("ovs.upcall", rng("u")))
    wire_end = Sink(env)
    nic = EgressPort(env, NIC_RATE, qdisc or {"kind": "pfifo"}, wire_end, name="eth0", prop_delay=25e-9,
                     lookahead=True)
    vm_port = ovs.add_port("vm1-vif", Sink(env))
    ovs.add_port("eth0", nic)
    # the remote VM's MAC is known on the uplink (learned from its ARP reply)
    ovs.fdb[(None, "vm2")] = (ovs.ports[1], 0.0)
    vif = VifBackend(env, "kvm-tap", host, delay=prof.sampler("vif.kvm-tap.backend_delay", rng("v")),
                     cpu_per_packet=prof.time("vif.kvm-tap.cpu_per_packet"),
                     cpu_per_byte=prof.time("vif.kvm-tap.cpu_per_byte"), out=vm_port, lookahead=True)
    src = Endpoint(env, "vm1", vif, cpu=vcpu)
    dst = Endpoint(env, "vm2", None)
    return src, dst, wire_end, nic


def bench_ovssim(stats: dict | None = None) -> tuple[int, float]:
    """Run (a); ``stats``, if given, receives the scheduler events spent (SimPy's event ids)."""
    env = simpy.Environment()
    prof = Profile.default()
    rng = rng_factory(1, 0)
    src, dst, wire_end, _nic = build_path(env, prof, rng)
    wl = IperfUdp(rate_bps=RATE, length=LENGTH, name="udp")
    wl.start(RunContext(env, src, dst, DURATION, rng, extra={"app": {"send_per_packet": 2e-6}}))
    eid0 = next(env._eid)
    t0 = time.perf_counter()
    run_until(env, DURATION + 0.01)      # what ovssim's runner uses
    wall = time.perf_counter() - t0
    if stats is not None:
        stats["events"] = next(env._eid) - eid0 - 1
    return wire_end.count, wall


class _PassThrough:
    """An element that does nothing but hand the packet on (for the skeleton run)."""

    def __init__(self, out):
        self.out = out

    def put(self, pkt) -> None:
        self.out.put(pkt)


def bench_skeleton() -> tuple[int, float]:
    """(a) with VIF, OVS and the port replaced by pass-throughs: the same source (its timer event
    and sendto() CPU charge per datagram), Packet objects and sink -- what the path costs at least
    before any of its three elements does any work."""
    env = simpy.Environment()
    rng = rng_factory(1, 0)
    wire_end = Sink(env)
    src = Endpoint(env, "vm1", _PassThrough(_PassThrough(_PassThrough(wire_end))), cpu=CpuPool(env, 1, "vm.vcpu"))
    dst = Endpoint(env, "vm2", None)
    wl = IperfUdp(rate_bps=RATE, length=LENGTH, name="udp")
    wl.start(RunContext(env, src, dst, DURATION, rng, extra={"app": {"send_per_packet": 2e-6}}))
    t0 = time.perf_counter()
    run_until(env, DURATION + 0.01)
    return wire_end.count, time.perf_counter() - t0


def calls_per_packet() -> float:
    """Python function calls per packet in (a), counted by cProfile (slow; --calls)."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    n, _ = prof.runcall(bench_ovssim)
    return pstats.Stats(prof).total_calls / n


def bench_simpy_baseline(n: int) -> float:
    env = simpy.Environment()
    store = simpy.Store(env)
    gap = LENGTH * 8 / RATE
    service = (udp_frame_size(LENGTH) + ETH_PREAMBLE_FCS_IFG) * 8 / NIC_RATE

    def source(env):
        for i in range(n):
            yield env.timeout(gap)
            store.put(i)

    def server(env):
        while True:
            yield store.get()
            yield env.timeout(service)

    env.process(source(env))
    env.process(server(env))
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0


def main() -> None:
    import sys
    st: dict = {}
    n, wall = bench_ovssim(st)
    base = bench_simpy_baseline(n)
    ours, theirs = n / wall, n / base
    print(f"packets through the path              : {n}")
    print(f"scheduler events per packet           : {st['events'] / n:6.2f}")
    if "--calls" in sys.argv:
        print(f"Python calls per packet (cProfile)    : {calls_per_packet():6.1f}")
    print(f"ovssim VIF->OVS->pfifo->PIF           : {wall:7.3f} s wall, {ours:10,.0f} packets/wall-s")
    print(f"bare SimPy single-queue loop          : {base:7.3f} s wall, {theirs:10,.0f} packets/wall-s")
    print(f"ratio ovssim / bare SimPy             : {ours / theirs:6.2f}x   (target >= 2.3x and >= 300,000 packets/wall-s)")
    ns, skel = bench_skeleton()
    per_pkt, per_skel = wall / n * 1e6, skel / ns * 1e6
    budget = base / n / 2.3 * 1e6
    print(f"skeleton: elements as pass-throughs   : {skel:7.3f} s wall, {ns / skel:10,.0f} packets/wall-s "
          f"({per_skel:.2f} us per packet)")
    print(f"per packet: the path {per_pkt:.2f} us, its skeleton {per_skel:.2f} us, so VIF + OVS + pfifo/PIF "
          f"{per_pkt - per_skel:.2f} us; the 2.3x target allows {budget:.2f} us in all, "
          f"{budget - per_skel:.2f} us for the three elements")


if __name__ == "__main__":
    main()
