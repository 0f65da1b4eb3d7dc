"""What-if: the thesis's six schedulers on a congested 20 Mbit/s uplink, three CUBIC flows and a ping.

Two hosts, each a VM on an OVS bridge, joined by a physical link whose sending NIC is shaped to 20 Mbit/s.
The scenario is built as a Python dict (the same tables a scenario file holds), and each scheduler is tried by
changing one key, ``nic.eth1.qdisc``; every scheduler sees the same random draws (common random numbers), so
the differences are the schedulers'.  Prints throughput and the ping's mean and 99th-percentile RTT with 95 %
confidence intervals, and with ``--plot FILE`` draws the p99 RTT per scheduler on a log scale.

The same study from the command line: ``ovssim whatif SCENARIO --qdiscs thesis --on nic.eth1.qdisc``.

    python examples/whatif_bottleneck.py [--quick] [--plot p99.png]
"""
from __future__ import annotations

import argparse

from ovssim import load_scenario, run_scenario

RATE = "20000000"          # bit/s, the OVS QoS form's max-rate
SCHEDULERS = {             # configured through the OVS QoS table, as the thesis did (seed 000)
    "pfifo_fast": {"kind": "pfifo_fast"},
    "sfq": {"type": "linux-sfq"},
    "codel": {"type": "linux-codel"},
    "fq_codel": {"type": "linux-fq_codel"},
    "htb": {"type": "linux-htb", "other-config": {"max-rate": RATE}, "queues": {"0": {"max-rate": RATE}}},
    "hfsc": {"type": "linux-hfsc", "other-config": {"max-rate": RATE}, "queues": {"0": {"max-rate": RATE}}},
}

SCENARIO = {
    "scenario": {"name": "bottleneck", "duration": "10s", "reps": 5, "seed": 1},
    "host": [{"name": "h1", "cores": 2}, {"name": "h2", "cores": 2}],
    "switch": [{"name": "sw"}],
    "bridge": [{"name": "br1", "host": "h1", "uplink": "eth1"}, {"name": "br2", "host": "h2", "uplink": "eth2"}],
    "nic": [{"name": "eth1", "host": "h1", "rate": "20mbit", "switch": "sw"},
            {"name": "eth2", "host": "h2", "rate": "1gbit", "switch": "sw"}],
    "vm": [{"name": "vm1", "host": "h1", "bridge": "br1"}, {"name": "vm2", "host": "h2", "bridge": "br2"}],
    "workload": [{"name": "bulk", "tool": "iperf3", "proto": "tcp", "from": "vm1", "to": "vm2", "P": 3},
                 {"name": "ping", "tool": "ping", "from": "vm1", "to": "vm2", "i": "50ms"}],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 replications of 2 simulated seconds")
    ap.add_argument("--plot", metavar="FILE", help="write the p99 RTT bars to FILE (PNG)")
    args = ap.parse_args()
    base = load_scenario(SCENARIO)
    if args.quick:
        base = base.replace(**{"scenario.duration": "2s", "scenario.reps": 2})
    rows = {}
    for name, spec in SCHEDULERS.items():
        summary = run_scenario(base.replace(**{"nic.eth1.qdisc": spec})).summary.set_index(["workload", "metric"])
        rows[name] = {m: summary.loc[(w, m)] for w, m in (("bulk", "throughput"), ("ping", "rtt_mean"),
                                                           ("ping", "rtt_p99"))}
    print(f"{'scheduler':<11}{'Mbit/s':>18}{'ping mean ms':>22}{'ping p99 ms':>22}")
    for name, r in rows.items():
        cells = "".join(f"{r[m]['mean']:>9.2f} [{r[m]['ci95_low']:.2f}, {r[m]['ci95_high']:.2f}]".rjust(22 if i else 18)
                        for i, m in enumerate(("throughput", "rtt_mean", "rtt_p99")))
        print(f"{name:<11}{cells}")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        names = list(rows)
        means = [rows[n]["rtt_p99"]["mean"] for n in names]
        err = [[rows[n]["rtt_p99"]["mean"] - rows[n]["rtt_p99"]["ci95_low"] for n in names],
               [rows[n]["rtt_p99"]["ci95_high"] - rows[n]["rtt_p99"]["mean"] for n in names]]
        ax.bar(names, means, yerr=err, capsize=4)
        ax.set_yscale("log")
        ax.set_ylabel("ping p99 RTT under load (ms, log scale)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
