"""Diagnostic (not the report): each BBR stream's first bandwidth estimate, how long it held, and the cwnd meanwhile,
in a probe.py run with BBR's ss state and in the model's run of the same configuration (issue 18, several flows).

Linux (``ss -ti``'s ``bbr:(bw:..,mrtt:..,pacing_gain:..,cwnd_gain:..)`` every 50 ms): every iperf3 stream's first
BtlBw is its cookie's rate sample -- 37 bytes written on the idle stream, ACKed inside the write, one packet over
that round trip (``tcp_rate_gen``; app-limited, but ``bbr_update_bw`` takes it into the empty filter) -- and it
holds for 10 rounds (``bbr_bw_rtts``), while the TSO goal at that pacing rate sets the cwnd
(``bbr_quantization_budget``).  The model's stream does the same from its own idle round trip.

    .venv/bin/python validation/tcp_window/bbr_flows.py data/local/tcp_window/2026-11-28-bbr5/*P4_bbr*.json.gz \
        [--model] [--set host.stack_delay=0us]
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

BW = re.compile(r"bw:(\d+)bps")
MRTT = re.compile(r"mrtt:([\d.]+)")
GAIN = re.compile(r"pacing_gain:([\d.]+)")


def measured_flows(run: dict) -> list[list[tuple]]:
    """Per stream, (t s, bw bit/s, min_rtt s, pacing gain, cwnd) of each ss sample; iperf3's control connection
    (the one that delivered least) left out."""
    t0 = run["samples"][0]["t"]
    flows: dict[int, list] = {}
    delivered: dict[int, int] = {}
    for x in run["samples"]:
        for k, f in enumerate(x["snd"]):
            if "bbr" not in f:
                continue
            flows.setdefault(k, []).append((x["t"] - t0, int(BW.search(f["bbr"])[1]),
                                            float(MRTT.search(f["bbr"])[1]) * 1e-3, float(GAIN.search(f["bbr"])[1]),
                                            int(f["cwnd"])))
            delivered[k] = max(delivered.get(k, 0), int(f.get("delivered", 0)))
    keys = sorted(flows, key=lambda k: delivered[k])
    if len(keys) > int(run["args"]["flows"]):
        keys = keys[1:]
    return [flows[k] for k in sorted(keys)]


def model_flows(args: dict, sets: dict | None, seed: int = 1) -> tuple[list[list[tuple]], float, float]:
    """The model's streams: (t s, bw bit/s, min_rtt s, pacing gain, cwnd) at each round start, and ping mean/max."""
    from ovssim.runner import run_scenario
    from ovssim.validate import tcp_window
    from ovssim.validate.base import CALIBRATION
    from ovssim.workloads import iperf_tcp
    streams = []
    opened = iperf_tcp.IperfTcp._open_stream

    def open_stream(self, measured_from, until):
        c, s = opened(self, measured_from, until)
        streams.append(c)
        return c, s
    iperf_tcp.IperfTcp._open_stream = open_stream
    try:
        res = run_scenario(tcp_window.scenario(args), reps=1, seed=seed,
                           profile=str(CALIBRATION / f"{tcp_window.PROFILE}.toml"), sets=sets or None)
    finally:
        iperf_tcp.IperfTcp._open_stream = opened
    rtt = tcp_window.window(res.samples["ping:rtt"], float(args["time"])) * 1e3
    out = []
    for c in streams:
        b = c.sender.cc
        if getattr(b, "name", "") != "bbr" or len(b.log) < 5:
            continue                   # the control connection
        t0 = b.log[0][0]
        out.append([(t - t0, bw, mrtt, 0.0, cwnd) for t, _, bw, mrtt, _, cwnd in b.log])
    return out, float(rtt.mean()), float(rtt.max())


def describe(flows: list[list[tuple]]) -> list[str]:
    lines = []
    for v in flows:
        bw0 = max(bw for t, bw, *_ in v[:3])
        held = [e for e in v if e[1] == bw0]
        cw = sorted({e[4] for e in held if e[0] > held[0][0] + 0.2})
        lines.append(f"  first bw {bw0 / 1e6:7.1f} Mbit/s  min_rtt {v[0][2] * 1e6:5.1f} us  held {held[-1][0] - v[0][0]:.2f} s "
                     f"from the stream's first sample  cwnd meanwhile {cw[0] if cw else '-'}-{cw[-1] if cw else '-'}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--model", action="store_true", help="also the model's run of each configuration")
    ap.add_argument("--set", action="append", default=[], help="k=v profile value for the model run (diagnostic)")
    a = ap.parse_args()
    sets = dict(kv.split("=", 1) for kv in a.set)
    for f in a.runs:
        with gzip.open(f, "rt") as fh:
            run = json.load(fh)
        s = run["summary"]
        print(f"{f.name}: Linux ping {s['ping_mean_ms']} / {s['ping_max_ms']} ms, load "
              f"{(run.get('machine') or {}).get('loadavg')}")
        print("\n".join(describe(measured_flows(run))))
        if a.model:
            flows, mean, mx = model_flows(run["args"], sets)
            print(f" model{' ' + str(sets) if sets else ''}: ping {mean:.1f} / {mx:.1f} ms")
            print("\n".join(describe(flows)))


if __name__ == "__main__":
    main()
