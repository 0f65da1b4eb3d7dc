"""ovssim's request/response tools against data/local/local-tcp-tools (Linux bridge rows).

qperf tcp_lat/udp_lat and sockperf ping-pong (UDP, TCP, 64 B) through ``local_netns.toml`` with a Linux
bridge, each for the campaign's 3 s, against the measured half round trips (mean of the repetitions and
their range: the machine was loaded, load average ~10).

    .venv/bin/python validation/tcp_window/compare_tools.py
"""
from __future__ import annotations

import copy
from pathlib import Path

from ovssim.collect.store import load_results
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "validation" / "scenarios" / "local_netns.toml"
CASES = [  # (campaign workload, measured metric, ovssim workload table, ovssim metric)
    ("qperf_lat", "tcp_rr_half_rtt", {"tool": "qperf", "test": "tcp_lat"}, "latency"),
    ("qperf_lat", "udp_rr_half_rtt", {"tool": "qperf", "test": "udp_lat"}, "latency"),
    ("sockperf_udp", "half_rtt_mean", {"tool": "sockperf", "mode": "ping-pong", "m": 64, "proto": "udp"},
     "half_rtt_mean"),
    ("sockperf_tcp", "half_rtt_mean", {"tool": "sockperf", "mode": "ping-pong", "m": 64, "proto": "tcp"},
     "half_rtt_mean"),
]


def simulate(table: dict, metric: str) -> float:
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = "3s"
    d["bridge"][0]["kind"] = "linux"
    d["workload"] = [dict(table, name="w", **{"from": "ns1", "to": "ns2"})]
    res = run_scenario(d, reps=1, seed=1)
    return float(res.summary.set_index(["workload", "metric"])["mean"][("w", metric)])


def main():
    df = load_results(ROOT / "data/local/local-tcp-tools")
    df = df[df["bridge"] == "linux"]
    for wl, col, table, metric in CASES:
        vals = df[(df["workload"] == wl) & (df["metric"] == col)]["value"].astype(float) * 1e6
        sim = simulate(table, metric) * 1e3
        print(f"{wl:13s} {col:16s} real mean {vals.mean():7.1f} us (range {vals.min():.1f}-{vals.max():.1f}, "
              f"n={len(vals)}) | ovssim {sim:7.1f} us | {100 * (sim - vals.mean()) / vals.mean():+6.1f} %")


if __name__ == "__main__":
    main()
