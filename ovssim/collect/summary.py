"""Headline tables of a collected campaign (medians and quartiles over repetitions).

``python -m ovssim.collect.summary data/local/local-bridges`` prints them; the
bundled dataset's SUMMARY.txt is this output.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from .store import load_results

KEYS = ["bridge", "chain", "link", "vm_tx_offload", "qdisc", "workload"]
# (title, metric, workload-name prefixes or None for all, scale, digits)
TABLES = [
    ("TCP throughput, iperf3 cubic (Mbit/s)", "throughput", ["tcp"], 1e-6, 1),
    ("TCP retransmissions per run", "retransmits", ["tcp"], 1.0, 0),
    ("TCP goodput / shaper rate (best possible 1448/1514 = 0.956)", "throughput_over_qdisc_rate",
     None, 1.0, 3),
    ("UDP loss (%)", "loss", ["udp"], 100.0, 2),
    ("UDP: AF_PACKET receive-socket drops on vif1 (OVS, packets per run)",
     "afpacket_vif1_drops", ["udp"], 1.0, 0),
    ("UDP jitter (us): iperf3, and iperf 2 (jitter_iperf2)", "jitter",
     ["udp", "jitter_iperf2"], 1e6, 1),
    ("qperf tcp_lat round trip (us)", "tcp_rr_rtt", None, 1e6, 1),
    ("ping after a flow purge: first packet RTT (us)", "rtt_first", None, 1e6, 0),
    ("ping after a flow purge: median RTT of packets 2..100 (us)", "rtt_rest_median", None, 1e6, 0),
    ("sockperf ping-pong half-RTT p50 (us)", "half_rtt_p50", None, 1e6, 1),
    ("sockperf ping-pong half-RTT p99 (us)", "half_rtt_p99", None, 1e6, 1),
    ("ping under the load (alongside): mean RTT (ms)", "probe_rtt_mean", None, 1e3, 2),
    ("ping under the load (alongside): max RTT (ms)", "probe_rtt_max", None, 1e3, 2),
    ("ping under the load (alongside): real spacing of the probes (ms)", "probe_interval_mean", None, 1e3, 2),
    ("ping under the load (alongside): first probe, seconds into the load", "probe_start_offset", None, 1.0, 3),
    ("CPU busy during the run (both cores, share)", "cpu_busy", ["tcp"], 1.0, 2),
]


def headline_tables(campaign_dir) -> list[tuple[str, pd.DataFrame]]:
    df = load_results(campaign_dir)
    ok = df[df["status"] == "ok"]
    out = []
    for title, metric, workloads, scale, digits in TABLES:
        s = ok[ok["metric"] == metric]
        if workloads is not None:
            s = s[s["workload"].astype(str).str.startswith(tuple(workloads))]
        if s.empty:
            continue
        g = s.groupby(KEYS, dropna=False)["value"]
        t = pd.DataFrame({"median": g.median() * scale, "q25": g.quantile(0.25) * scale,
                          "q75": g.quantile(0.75) * scale, "n": g.count()})
        out.append((title, t.round(digits)))
    runs = df.drop_duplicates("run_id").groupby("status").size().rename("runs").to_frame()
    out.append(("runs by status", runs))
    state = machine_state_table(campaign_dir)
    if state is not None:
        out.append(("machine state before / after the campaign (ovssim.collect.state)", state))
    return out


def machine_state_table(campaign_dir) -> pd.DataFrame | None:
    """Speed index, benchmark medians with their spread, load, steal and frequency, before and after
    (None for a campaign collected before the collector measured them)."""
    meta_path = Path(campaign_dir) / "metadata.json"
    try:
        states = json.loads(meta_path.read_text()).get("machine_state") or {}
    except (OSError, ValueError):
        return None
    rows = {}
    for when, st in states.items():
        if "error" in st:
            rows[when] = {"error": st["error"]}
            continue
        b = st["benchmark"]
        rows[when] = {"speed_index": st["speed_index"],
                      **{f"{k} (median)": v["median"] for k, v in b.items()},
                      **{f"{k} (spread %)": 100 * v["rel_spread"] for k, v in b.items()},
                      "loadavg_1min": st["loadavg"][0], "steal_%": 100 * st["steal_share"],
                      "cpu_mhz": st.get("cpu_mhz"), "kernel": st["kernel"]}
    return pd.DataFrame(rows).round(3) if rows else None


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    pd.set_option("display.width", 200)
    for title, t in headline_tables(argv[0]):
        print(f"## {title}\n{t.to_string()}\n")


if __name__ == "__main__":
    main()
