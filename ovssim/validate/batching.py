"""Issue 15: batching on this machine (``data/local/2026-11-24/local-offloads``).

The Linux bridge with the namespaces' transmit offloads on (TSO: 64 KB GSO skbs cross the veths
and the bridge whole) and off (``ethtool -K eth0 tx off``: segmented in software at eth0, MTU
frames on the path), OVS netdev (offloads off, which its AF_PACKET path needs), bulk iperf3 CUBIC
with 1 and 4 streams, qperf ``tcp_lat`` and ping beside them, OVS chains of 2 and 4 bridges.

Split: nothing here is fitted.  The profile is ``calibration/local_netns.toml`` (fitted on the
older ``data/local/local-bridges`` campaign's 1-bridge unshaped rows, offloads off); every row of
this campaign is held out -- in particular every offloads-on row, which no fit has seen.
"""
from __future__ import annotations

from pathlib import Path

from .base import ROOT, Settings, TestbedResult
from .compare import Comparison, mean_ci
from .local import METRICS, WORKLOADS, _config, load_measured
from .simulate import Runner

DATA = ROOT / "data" / "local" / "2026-11-24" / "local-offloads"
# iperf3 -P 4: four flows from one process (the simulator's iperf takes -P as iperf does)
TCP4 = ({**WORKLOADS["tcp"][0], "P": 4}, WORKLOADS["tcp"][1])
EXTRA_METRICS = [("tcp4", "throughput", 1e-6, "throughput", "Mbit/s", "throughput")]


def _cfg(bridge: str, chain: int, link: str, offload: bool, workloads: list[str]):
    base = [w for w in workloads if w != "tcp4"]
    c = _config(bridge, chain, link, "none", base)
    sc = c.scenario
    feats = {} if offload else {"tx-checksumming": False}
    for vm in sc["vm"]:
        vm["features"] = feats
    if "tcp4" in workloads:                       # after the others, as the collector's own run
        end = float(sc["scenario"]["duration"].rstrip("s"))
        spec, span = TCP4
        sc["workload"].append({"name": "tcp4", "from": "ns1", "to": "ns2", "start": f"{end:.3f}s", **spec})
        sc["scenario"]["duration"] = f"{end + span + 0.1:.3f}s"
    c.label += "-tso" if offload else "-txoff"
    c.facts["offload"] = offload
    return c


def run(runner: Runner, settings: Settings, data: Path = DATA) -> list[TestbedResult]:
    profile = settings.calibration_dir / "local_netns.toml"
    tb = TestbedResult("batching", "Issue 15: batching -- offloads on/off, OVS netdev, chains (this machine)",
                       profile=str(profile.relative_to(ROOT)) if profile.is_relative_to(ROOT) else str(profile))
    if not (data / "results.parquet").is_file() and not (data / "results.csv.gz").is_file():
        tb.notes.append(f"No data at {data.relative_to(ROOT)}: run `sudo ovssim collect "
                        "data/campaigns/local-offloads.toml --out data/local/2026-11-24/local-offloads`.")
        return [tb]
    df = load_measured(data)
    df["vm_tx_offload"] = df["vm_tx_offload"].astype(str).str.lower().isin(["true", "1"])
    keys = ["bridge", "chain", "link", "vm_tx_offload"]
    cfgs = []
    for k, wls in df.groupby(keys)["workload"].unique().items():
        wls = [w for w in wls if w in WORKLOADS or w == "tcp4"]
        if wls:
            cfgs.append(_cfg(k[0], int(k[1]), k[2], bool(k[3]), wls))
    sims = runner.run(cfgs, str(profile), reps=settings.reps, seed=2026)
    for c in cfgs:
        f = c.facts
        sel = df[(df["bridge"] == f["bridge"]) & (df["chain"] == f["chain"]) & (df["link"] == f["link"])
                 & (df["vm_tx_offload"] == f["offload"])]
        sim = sims[c.label]
        for wl, mm, fac, sm, unit, metric in METRICS + EXTRA_METRICS:
            runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * fac
            if runs.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(sim.values(wl, sm))
            tb.rows.append(Comparison(tb.name, f"{c.label} {wl}", metric, unit, y, lo, hi, m, slo, shi,
                                      "held-out", metric, note=f"{runs.size} runs"))
    tb.split = ("Held out entirely: the profile was fitted on another campaign (offloads off, 1 bridge); "
                "no row of this campaign -- offloads on, 4 streams, chains -- was seen by a fit.")
    tb.notes.append("Collected on the shared 2-core machine while other jobs ran (load average 4-5; "
                    "see the campaign's SUMMARY.txt): CPU-bound throughput on this machine moves by 2x between "
                    "campaigns (Linux bridge, 1 bridge, offloads off: 1767 Mbit/s in data/local/local-bridges, "
                    "3483 in data/local/2026-11-24/local-bridges).")
    tb.notes.append(
        "**Why rows miss.** Offloads on (`-tso`): the model's per-skb costs are right to cut the work per byte "
        "by ~10x, but it has no per-byte cost of the copies into and out of the socket (`tcp_sendmsg`'s "
        "copy from user, `tcp_recvmsg`'s copy to user): the local profile was fitted on MTU frames only, where "
        "per-packet and per-byte work cannot be told apart, so a 64 KB skb costs too little (simulated 2.3x the "
        "measured rate).  Fitting a per-byte copy cost needs an offloads-on row in the fit, which would leave "
        "this section without its held-out check; it is left for the next campaign.  RR and 4-stream rows: "
        "the measured spread under load (e.g. RR 0.09-0.34 ms, Linux 4 streams 1.06-1.41 Gbit/s) is wider than "
        "the model's; OVS 1-bridge rows measured 443 Mbit/s here against 361 in the fitted campaign (load). "
        "Veth chains: `veth.cpu_per_packet` is the default profile's order of magnitude (2 us), not fitted on "
        "this machine, and each veth hop costs it per frame with offloads off.")
    tb.notes.append("Seed 001 (per-packet datapath delay falls as the data rate rises, 250 kbit/s to ~1 Mbit/s of "
                    "576-byte packets) is not a batching effect and is not reproduced: at 50-220 packets/s the "
                    "packets are 5-20 ms apart, so no NAPI poll, GRO flush or datapath batch ever holds two of them "
                    "and a per-batch cost cannot be amortised; what changes with the rate is how long the core and "
                    "the datapath thread idled before each packet (cache and idle-state wake-up), which "
                    "`ovs.idle_stall` models for the netdev thread only.")
    return [tb]
