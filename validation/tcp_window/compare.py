"""Simulate the runs of validation/tcp_window/probe.py (bridge placement) and compare ping RTT under load.

For each measured JSON in data/local/tcp_window/ taken with ``--bridge`` (ns1 -> veth -> Linux bridge
-> shaper on the port to ns2 -> veth -> ns2): ovssim's ``validation/scenarios/local_netns.toml`` with
a Linux bridge, the same HTB/TBF on ns2's VIF port, ``iperf3 -P N -C CC`` and ``ping -i 0.05`` beside
it; mean and max ping RTT over the same window (the transfer's seconds 1..end), Mbit/s.

    .venv/bin/python validation/tcp_window/compare.py [--reps 2] [--match bridge_htb_20mbit]
"""
from __future__ import annotations

import argparse
import copy
import glob
import gzip
import json
from pathlib import Path

import numpy as np

from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "validation" / "scenarios" / "local_netns.toml"


def shaper(kind: str, rate: str) -> dict:
    if kind == "htb":
        return {"kind": "htb", "default": "10", "classes": [
            {"classid": "1:10", "parent": "1:", "rate": rate, "ceil": rate}]}
    return {"kind": "tbf", "rate": rate, "burst": "32kb", "latency": "400ms"}


def simulate(args: dict, reps: int, seed: int = 1) -> dict:
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    t = float(args["time"])
    d["scenario"]["duration"] = f"{t + 0.5}s"
    d["bridge"][0]["kind"] = "linux"
    for vm in d["vm"]:
        # probe.py leaves the veths' offloads as Linux sets them (TSO on: 64 KB GSO skbs reach the
        # shaper and the receiver whole); the collector's ``tx off`` in local_netns.toml is not applied
        vm.pop("features", None)
        if vm["name"] == "ns2":
            vm["qdisc"] = shaper(args["shaper"], args["rate"])
    d["workload"] = [
        {"name": "tcp", "tool": "iperf3", "proto": "tcp", "from": "ns1", "to": "ns2", "C": args["cc"],
         "P": int(args["flows"]), "t": f"{t}s", "start": "0.5s"},
        {"name": "ping", "tool": "ping", "from": "ns1", "to": "ns2", "i": "0.05s", "start": "0s"}]
    out = []
    for k in range(reps):
        res = run_scenario(d, reps=1, seed=seed + k)
        summ = res.summary.set_index(["workload", "metric"])["mean"]
        rtt = window(res.samples["ping:rtt"], t) * 1e3
        out.append((float(summ[("tcp", "throughput")]), float(rtt.mean()), float(rtt.max())))
    m = np.mean(out, axis=0)
    return {"mbps": float(m[0]), "ping_mean_ms": float(m[1]), "ping_max_ms": float(m[2])}


def window(rtts: np.ndarray, t: float) -> np.ndarray:
    """The pings probe.py's summary keeps: icmp_seq 30 .. 30 + 20 (t - 1), i.e. the transfer's
    seconds 1..t (ping -i 0.05 starts 0.5 s before iperf3; the first second of slow start is left out)."""
    return rtts[29:30 + int(20 * (t - 1))]


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
        sim = simulate(r["args"], a.reps)
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
