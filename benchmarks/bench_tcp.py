"""TCP speed benchmark (issue 3): 10 simulated seconds of one netperf TCP_STREAM at 100 Mbit/s.

(a) the full path of the thesis testbed (seed 000 Fig. 10): VM -> VIF (kvm-tap) ->
    OVS -> qdisc -> PIF -> 100 Mbit/s switch -> PIF -> OVS -> VIF -> VM, built by
    ``ovssim.topology`` and run by ``ovssim.runner`` (one replication; the runner
    adds ARP settling and a 1 s drain after the 10 s of traffic).  If those
    modules are missing, a hand-built two-port path stands in and says so.
(b) the TCP alone: the same flow over two bare 100 Mbit/s ports (A -> B, B -> A),
    to show what the TCP itself costs (run by ``ovssim.sched.run_until``, the
    runner's event loop, as (a) is).
(c) ns-3, when its interpreter is installed (``/work/ns3-venv``, or
    ``OVSSIM_NS3_PYTHON``; install: ``python3 -m venv /work/ns3-venv &&
    /work/ns3-venv/bin/pip install ns3``): a simpler dumbbell (one 100 Mbit/s,
    10 ms point-to-point link, FIFO) for the same 10 s, timed inside ns-3 (import
    time excluded), from ``validation/tcp_ns3_crosscheck.py``.
(d) the TCP with no path at all: a window-limited sender and its receiver hand
    their segments and ACKs straight to each other in lock-step rounds (no
    ports, no events), so the figure -- CPU microseconds per packet -- is the
    TCP's own code (``ovssim/tcp``) and the Packet objects it builds.

Target: (a) <= 1.0 s of wall time (>= 10x faster than real time).  Prints the
figures and the ratios, wall and CPU time (the process's own: the better figure
on a shared machine); asserts nothing.  ``--profile`` runs (a) and (b) once more
under cProfile and splits their time between the TCP (``ovssim/tcp``), the path
elements (``ovssim/path``, ``ovssim/qdisc``), the scheduler and the rest.
Run: .venv/bin/python benchmarks/bench_tcp.py [--profile]
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DURATION = 10.0


def thesis_scenario() -> dict:
    """Seed 000's KVM + OVS testbed with one netperf TCP_STREAM (defaults: autotuned buffers)."""
    return {
        "scenario": {"name": "bench-tcp", "duration": f"{DURATION}s", "reps": 1, "seed": 1,
                     "profile": "default"},
        "host": [{"name": "host1", "cores": 4}, {"name": "host2", "cores": 4}],
        "bridge": [{"name": "br0", "host": "host1", "kind": "ovs", "uplink": "eth0"},
                   {"name": "br1", "host": "host2", "kind": "ovs", "uplink": "eth1"}],
        "nic": [{"name": "eth0", "host": "host1", "rate": "100mbit", "switch": "sw0"},
                {"name": "eth1", "host": "host2", "rate": "100mbit", "switch": "sw0"}],
        "switch": [{"name": "sw0"}],
        "vm": [{"name": "vm1", "host": "host1", "vif": "kvm-tap", "bridge": "br0",
                "qdisc": {"kind": "pfifo_fast"}},
               {"name": "vm2", "host": "host2", "vif": "kvm-tap", "bridge": "br1",
                "qdisc": {"kind": "pfifo_fast"}}],
        "workload": [{"name": "tcp", "tool": "netperf", "test": "TCP_STREAM", "from": "vm1",
                      "to": "vm2", "l": f"{DURATION}s"}],
    }


def bench_full_path() -> tuple[str, float, float, float, float]:
    """(label, wall seconds, simulated seconds, throughput Mbit/s, CPU seconds)."""
    try:
        from ovssim.profile import Profile
        from ovssim.runner import DRAIN, run_replication
        from ovssim.scenario import load_scenario
        from ovssim.topology import ARP_SETTLE
    except ImportError as exc:      # the lead's modules not present: hand-built stand-in
        print(f"(ovssim.topology/runner not importable: {exc}; using the two-port path)")
        wall, thr, cpu = bench_two_ports()
        return "two-port stand-in", wall, DURATION, thr, cpu
    sc = load_scenario(thesis_scenario())
    prof = Profile.load(sc.profile, relative_to=sc.base_dir)
    c0, t0 = time.process_time(), time.perf_counter()
    rows, _, _ = run_replication(sc, prof, 0, 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    thr = next(r["value"] for r in rows if r["workload"] == "tcp" and r["metric"] == "throughput")
    return "VIF->OVS->qdisc->PIF->switch->PIF->OVS->VIF", wall, ARP_SETTLE + DURATION + DRAIN, thr, cpu


def bench_two_ports() -> tuple[float, float, float]:
    """(wall seconds, throughput Mbit/s, CPU seconds)."""
    from ovssim.path.endpoint import Endpoint
    from ovssim.path.port import EgressPort
    from ovssim.sched import run_until
    from ovssim.tcp import connect

    env = simpy.Environment()
    a, b = Endpoint(env, "a"), Endpoint(env, "b")
    a.out = EgressPort(env, 100e6, {"kind": "pfifo"}, out=b, prop_delay=1e-4, name="a-b")
    b.out = EgressPort(env, 100e6, {"kind": "pfifo"}, out=a, prop_delay=1e-4, name="b-a")
    c, s = connect(env, a, b, 5001)
    c.bulk(DURATION)
    c0, t0 = time.process_time(), time.perf_counter()
    run_until(env, DURATION)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, s.receiver.bytes_received * 8 / DURATION / 1e6, cpu


class _Wire:
    """An endpoint stand-in for (d): collects what the socket sends."""

    def __init__(self, env, name: str):
        self.env, self.name, self.mtu, self.cpu = env, name, 1500, None
        self.out: list = []
        self.sent = 0
        self._handlers: dict = {}
        self._next_port = 40000

    def bind(self, proto, port, handler) -> None:
        self._handlers[(proto, port)] = handler

    def ephemeral_port(self) -> int:
        self._next_port += 1
        return self._next_port

    def send(self, pkt) -> None:
        self.sent += 1
        self.out.append(pkt)


def bench_tcp_alone(rounds: int = 2000, window_segments: int = 100) -> tuple[float, int]:
    """(CPU microseconds per packet, packets) of the TCP exchanging data and ACKs with no path."""
    from ovssim.tcp import connect

    env = simpy.Environment()
    a, b = _Wire(env, "a"), _Wire(env, "b")
    c, s = connect(env, a, b, 5001, server=dict(rcvbuf=window_segments * 1448))
    listener = b._handlers[("tcp", 5001)]
    c.bulk(1e9)
    c0 = time.process_time()
    for _ in range(rounds):
        env._now += 1e-5
        data, a.out = a.out, []
        for pkt in data:
            listener.put(pkt)
        acks, b.out = b.out, []
        for pkt in acks:
            c.put(pkt)
    cpu = time.process_time() - c0
    packets = c.sender.segs_out + s.sender.segs_out
    return cpu / packets * 1e6, packets


def bench_ns3() -> float | None:
    python = os.environ.get("OVSSIM_NS3_PYTHON", "/work/ns3-venv/bin/python")
    if not Path(python).exists():
        return None
    sys.path.insert(0, str(ROOT / "validation"))
    from tcp_ns3_crosscheck import run_ns3  # noqa: PLC0415
    res = run_ns3(["fifo"], DURATION, python)
    return res["fifo"]["wall_s"] if res else None


def profile_split(fn) -> dict[str, float]:
    """Seconds of ``fn()`` under cProfile by where the code lives (own time of each function)."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    groups: dict[str, float] = {}
    for (path, _line, func), (_cc, _nc, own, _cum, _callers) in pstats.Stats(prof).stats.items():
        path = path.replace(os.sep, "/")
        if "/ovssim/tcp/" in path or "/ovssim/workloads/" in path:
            g = "TCP (ovssim/tcp, the tool)"
        elif "/ovssim/path/" in path or "/ovssim/qdisc/" in path:
            g = "path elements (ovssim/path, qdisc)"
        elif path.endswith("ovssim/sched.py") or "/simpy/" in path or "heap" in func:
            g = "scheduler (sched.py, SimPy, heapq)"
        elif path.endswith("ovssim/packet.py"):
            g = "Packet objects"
        elif path.endswith("ovssim/distributions.py"):
            g = "random draws (distributions.py)"
        else:
            g = "other (builtins, setup)"
        groups[g] = groups.get(g, 0.0) + own
    return groups


def main() -> None:
    label, wall, simulated, thr, cpu = bench_full_path()
    print(f"(a) {label}")
    print(f"    netperf TCP_STREAM {DURATION:g} s at 100 Mbit/s: {thr:.2f} Mbit/s")
    print(f"    wall {wall:.3f} s (CPU {cpu:.3f} s) for {simulated:.2f} simulated s -> "
          f"{DURATION / wall:.1f}x faster than real time for the 10 s of traffic   (target: wall <= 1.0 s)")
    w2, thr2, cpu2 = bench_two_ports()
    print(f"(b) TCP over two bare ports: {thr2:.2f} Mbit/s, wall {w2:.3f} s (CPU {cpu2:.3f} s, "
          f"{DURATION / w2:.1f}x real time); the path elements cost the rest of (a): "
          f"{wall - w2:.3f} s (CPU {cpu - cpu2:.3f} s)")
    us, npk = bench_tcp_alone()
    print(f"(d) TCP alone, no path: {us:.2f} us CPU per packet ({npk} segments and ACKs)")
    n3 = bench_ns3()
    if n3 is None:
        print("(c) ns-3 not installed: no ns-3 figure (python3 -m venv /work/ns3-venv && "
              "/work/ns3-venv/bin/pip install ns3)")
    else:
        print(f"(c) ns-3 dumbbell (one P2P link, FIFO), same 10 s: wall {n3:.3f} s")
        print(f"    ratio ns-3 wall / ovssim wall: full path {n3 / wall:.2f}x, bare ports {n3 / w2:.2f}x")
    from ovssim.collect.state import load_note
    print(load_note())
    if "--profile" in sys.argv[1:]:
        for name, fn in (("(a)", bench_full_path), ("(b)", bench_two_ports)):
            groups = profile_split(fn)
            total = sum(groups.values())
            print(f"{name} under cProfile ({total:.2f} s; profiling inflates call-heavy code):")
            for g, sec in sorted(groups.items(), key=lambda kv: -kv[1]):
                print(f"    {g:38s} {sec:7.3f} s  {100 * sec / total:5.1f} %")


if __name__ == "__main__":
    main()
