"""A thin Poisson flow beside a bulk flow, through each qdisc: who protects the thin flow?

A 10 Mbit/s port carries two flows: a Poisson "voice" flow at 1 Mbit/s of 200-byte frames and a bulk flow that
offers 11 Mbit/s (more than the link) in 1500-byte frames.  A FIFO lets the bulk flow fill the queue, so the thin
flow waits behind the whole queue; the flow-fair schedulers (SFQ, FQ-CoDel) serve the thin flow almost at once;
CoDel drops from the shared queue, but against a flow that does not slow down when it loses packets its control
law raises the drop rate only gradually, so the queue stays long for seconds; HTB and HFSC here give each flow a
class of its own.  The script prints the thin
flow's delay percentiles per qdisc and, with ``--plot FILE``, draws their ECDFs.

As a check on the machinery, it first runs the thin flow alone through a pfifo and compares its mean delay
with the M/D/1 result (Pollaczek-Khinchine: W = rho * S / (2 (1 - rho)) + S for service time S, load rho).

    python examples/poisson_through_qdiscs.py [--quick] [--plot delays.png]
"""
from __future__ import annotations

import argparse

import numpy as np
import simpy

from ovssim import EgressPort, FlowKey, Sink, Source
from ovssim.packet import ETH_PREAMBLE_FCS_IFG

LINK = 10e6
THIN = FlowKey("voice", "peer", 4000, 4000, "udp")
BULK = FlowKey("bulk", "peer", 5000, 5001, "udp")
VOICE_CLASS = 0x10010          # skb->priority naming class 1:10 (SO_PRIORITY, or OVS set_queue)

QDISCS = {
    "pfifo": {"kind": "pfifo"},
    "pfifo_fast": {"kind": "pfifo_fast"},
    "sfq": {"kind": "sfq"},
    "codel": {"kind": "codel"},
    "fq_codel": {"kind": "fq_codel"},
    # the voice flow in class 1:10, the bulk flow in the default class 1:20
    "htb": {"kind": "htb", "default": "20", "classes": [
        {"classid": "1:1", "parent": "1:", "rate": "10mbit"},
        {"classid": "1:10", "parent": "1:1", "rate": "2mbit", "ceil": "10mbit", "prio": 0},
        {"classid": "1:20", "parent": "1:1", "rate": "8mbit", "ceil": "10mbit", "prio": 1}]},
    "hfsc": {"kind": "hfsc", "default": "20", "classes": [
        {"classid": "1:1", "parent": "1:", "ls": "10mbit", "ul": "10mbit"},
        {"classid": "1:10", "parent": "1:1", "rt": {"m1": "8mbit", "d": "2ms", "m2": "2mbit"}, "ls": "2mbit"},
        {"classid": "1:20", "parent": "1:1", "ls": "8mbit"}]},
}


class FlowSink(Sink):
    """Keeps only the thin flow's packets (the bulk flow is just counted)."""

    def put(self, pkt) -> None:
        if pkt.flow == THIN:
            super().put(pkt)
        else:
            self.count += 1


def thin_flow_delays(qdisc: dict, duration: float, with_bulk: bool = True, seed: int = 1) -> np.ndarray:
    env = simpy.Environment()
    sink = FlowSink(env, keep=True)
    port = EgressPort(env, LINK, qdisc, sink, name="eth0")
    Source(env, port, rate="1mbit", size=200, flow=THIN, arrivals="poisson", rng=seed, stop=duration,
           priority=VOICE_CLASS)
    if with_bulk:
        Source(env, port, rate="11mbit", size=1500, flow=BULK, arrivals="cbr", stop=duration)
    env.run(until=duration + 1.0)
    return sink.delays()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 simulated seconds instead of 20")
    ap.add_argument("--plot", metavar="FILE", help="write the delay ECDFs to FILE (PNG)")
    args = ap.parse_args()
    duration = 2.0 if args.quick else 20.0

    alone = thin_flow_delays({"kind": "pfifo"}, duration, with_bulk=False)
    service = (200 + ETH_PREAMBLE_FCS_IFG) * 8 / LINK      # the wire also carries preamble, FCS and gap
    rho = 1e6 / (200 * 8) * service
    pk = rho * service / (2 * (1 - rho)) + service
    print(f"thin flow alone through pfifo: mean delay {alone.mean() * 1e6:.1f} us, "
          f"M/D/1 predicts {pk * 1e6:.1f} us ({alone.size} packets)")

    results = {name: thin_flow_delays(spec, duration) for name, spec in QDISCS.items()}
    print(f"\nthin flow beside an 11 Mbit/s bulk flow on a 10 Mbit/s port ({duration:g} s):")
    print(f"{'qdisc':<11}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, d in results.items():
        p50, p99 = np.percentile(d, [50, 99]) * 1e3
        print(f"{name:<11}{p50:>10.3f}{p99:>10.3f}{d.max() * 1e3:>10.3f}")

    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, d in results.items():
            x = np.sort(d) * 1e3
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("thin flow's one-way delay (ms, log scale)")
        ax.set_ylabel("ECDF")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
