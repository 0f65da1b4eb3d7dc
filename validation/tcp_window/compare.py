"""Simulate the runs of validation/tcp_window/probe.py (bridge placement) and compare ping RTT under load.

For each measured JSON in data/local/tcp_window/ taken with ``--bridge`` (ns1 -> veth -> Linux bridge
-> shaper on the port to ns2 -> veth -> ns2): ovssim's ``validation/scenarios/local_netns.toml`` with
a Linux bridge, the same HTB/TBF on ns2's VIF port, ``iperf3 -P N -C CC`` and ``ping -i 0.05`` beside
it; mean and max ping RTT over the same window (the transfer's seconds 1..end), Mbit/s.  The scenario and
the window are ``ovssim.validate.tcp_window``'s (the report section: ``ovssim validate --only tcp_window``).

    .venv/bin/python validation/tcp_window/compare.py [--reps 2] [--match bridge_htb_20mbit]
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
from pathlib import Path

import numpy as np

from ovssim.validate.tcp_window import simulate

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--match", default="bridge_")
    ap.add_argument("--markdown", help="also write the rows as a markdown table to this file")
    a = ap.parse_args()
    rows = []
    for f in sorted(glob.glob(str(ROOT / "data/local/tcp_window" / f"{a.match}*.json.gz"))):
        with gzip.open(f, "rt") as fh:
            r = json.load(fh)
        real = r["summary"]
        sims = simulate(r["args"], a.reps)
        sim = {k: float(np.mean([s[k] for s in sims])) for k in sims[0]}
        rows.append((Path(f).name.rsplit("_", 1)[0], real, sim))
        err = lambda k: 100 * (sim[k] - real[k]) / real[k]
        print(f"{rows[-1][0]:40s} real {real['ping_mean_ms']:7.1f}/{real['ping_max_ms']:7.1f} ms {real['mbps']:6.2f} Mbit/s"
              f" | ovssim {sim['ping_mean_ms']:7.1f}/{sim['ping_max_ms']:7.1f} ms {sim['mbps']:6.2f}"
              f" | err mean {err('ping_mean_ms'):+6.1f} % max {err('ping_max_ms'):+6.1f} % thr {err('mbps'):+5.1f} %",
              flush=True)
    if a.markdown:
        lines = ["| run | real ping mean / max (ms) | ovssim mean / max (ms) | error mean / max | Mbit/s real / ovssim |",
                 "|---|---|---|---|---|"]
        for name, real, sim in rows:
            e = [100 * (sim[k] - real[k]) / real[k] for k in ("ping_mean_ms", "ping_max_ms")]
            lines.append(f"| {name} | {real['ping_mean_ms']:.1f} / {real['ping_max_ms']:.1f} | "
                         f"{sim['ping_mean_ms']:.1f} / {sim['ping_max_ms']:.1f} | {e[0]:+.1f} % / {e[1]:+.1f} % | "
                         f"{real['mbps']:.2f} / {sim['mbps']:.2f} |")
        Path(a.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
