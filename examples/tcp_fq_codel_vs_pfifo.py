"""A bulk TCP flow and a ping through a 10 Mbit/s bottleneck: pfifo against FQ-CoDel.

Two endpoints joined by a 10 Mbit/s egress port (20 ms round trip): ``iperf3 -C cubic`` fills the bottleneck
while ``ping -i 0.05`` measures the round trip beside it.  Behind a 1000-packet pfifo, CUBIC fills the queue
and the ping waits behind it (bufferbloat); FQ-CoDel keeps the TCP flow's queue near its 5 ms target and
serves the ping's flow first, at the same throughput.  This is how to wire ovssim's elements and tools by
hand: endpoints, ports, a :class:`~ovssim.RunContext`, and the tools' own metrics.

    python examples/tcp_fq_codel_vs_pfifo.py [--quick] [--plot rtt.png]
"""
from __future__ import annotations

import argparse

import numpy as np
import simpy

from ovssim import EgressPort, Endpoint, RunContext, make_workload


def run(qdisc: dict, duration: float, seed: int = 1):
    env = simpy.Environment()
    a, b = Endpoint(env, "a"), Endpoint(env, "b")
    a.out = EgressPort(env, "10mbit", qdisc, out=b, prop_delay="10ms", name="bottleneck")
    b.out = EgressPort(env, "1gbit", {"kind": "pfifo"}, out=a, prop_delay="10ms", name="return")
    ctx = RunContext(env=env, src=a, dst=b, duration=duration,
                     rng=lambda name: np.random.default_rng([seed, sum(map(ord, name))]))
    iperf = make_workload({"tool": "iperf3", "proto": "tcp", "C": "cubic", "name": "iperf3"})
    ping = make_workload({"tool": "ping", "i": "50ms", "name": "ping"})
    for tool in (iperf, ping):
        tool.start(ctx)
    env.run(until=duration + 0.5)
    metrics = {(m.name): m.value for tool in (iperf, ping) for m in tool.metrics()}
    return metrics, ping.samples().get("rtt", np.array([]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 simulated seconds instead of 20")
    ap.add_argument("--plot", metavar="FILE", help="write the ping RTT ECDFs to FILE (PNG)")
    args = ap.parse_args()
    duration = 3.0 if args.quick else 20.0
    results = {name: run(spec, duration) for name, spec in
               (("pfifo", {"kind": "pfifo"}), ("fq_codel", {"kind": "fq_codel"}))}
    print(f"{'qdisc':<10}{'TCP Mbit/s':>12}{'ping mean ms':>14}{'ping p99 ms':>13}")
    for name, (m, rtt) in results.items():
        print(f"{name:<10}{m['throughput']:>12.2f}{m['rtt_mean']:>14.2f}{np.percentile(rtt, 99) * 1e3:>13.2f}")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, (_, rtt) in results.items():
            x = np.sort(rtt) * 1e3
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("ping RTT under load (ms, log scale)")
        ax.set_ylabel("ECDF")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
