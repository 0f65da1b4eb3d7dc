"""Issue 15: batching on this machine, the CPU-bound regime.

Fit (``data/local/2026-11-25/local-bytes``): the Linux bridge, 1 bridge, iperf3 CUBIC, the
namespaces' transmit offloads on (TSO: 64 KB GSO skbs cross the veths and the bridge whole) and off
(``ethtool -K eth0 tx off``: software segmentation at eth0, MTU frames on the path), iperf3 -l
128 KiB and 16 KiB.  The same bytes in ~40x fewer skbs, and in 8x more write() calls.  The socket
copies per byte (``tcp_sendmsg``'s copy from user, ``tcp_recvmsg``'s copy to user;
``app.send_per_byte`` = ``app.recv_per_byte``, the same memcpy either way) are measured there, not
fitted: the receiving iperf3's own CPU per byte (:func:`copy_cost_per_byte`).  One parameter is
fitted on the four rows: the cost of a write() call (``app.send_per_call``), over the per-skb costs
fitted before (``calibration/local_netns.toml``).  It writes ``calibration/local_batching.toml``.

Held out: every row of ``data/local/2026-11-24/local-offloads`` (Linux bridge offloads on and off,
OVS netdev, 1 and 4 streams, qperf ``tcp_lat`` and ping beside them, OVS chains of 2 and 4
bridges), collected on another evening under another load.
"""
from __future__ import annotations

from pathlib import Path

from ..fit.calibrate import Param, Target, target_sigma
from .base import ROOT, Settings, TestbedResult, fit_profile, fit_summary, shown
from .compare import Comparison, mean_ci
from .local import METRICS, WORKLOADS, _config, load_measured
from .simulate import Runner

DATA = ROOT / "data" / "local" / "2026-11-24" / "local-offloads"
FIT_DATA = ROOT / "data" / "local" / "2026-11-25" / "local-bytes"
IPERF3_LENGTH = 131072        # iperf3's TCP write size (-l) when not given
# iperf3 -P 4: four flows from one process (the simulator's iperf takes -P as iperf does)
TCP4 = ({**WORKLOADS["tcp"][0], "P": 4, "one_thread": True}, WORKLOADS["tcp"][1])   # iperf 3.12: one thread
EXTRA_METRICS = [("tcp4", "throughput", 1e-6, "throughput", "Mbit/s", "throughput")]


def _cfg(bridge: str, chain: int, link: str, offload: bool, workloads: list[str], length: int | None = None):
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
    if length:                                    # iperf3 -l
        for w in sc["workload"]:
            if w["name"] == "tcp":
                w["l"] = int(length)
        c.label += f"-l{int(length) // 1024}k"
    c.facts["offload"] = offload
    return c


def _load(data: Path):
    df = load_measured(data)
    df["vm_tx_offload"] = df["vm_tx_offload"].astype(str).str.lower().isin(["true", "1"])
    df["size"] = df["size"].fillna(IPERF3_LENGTH).astype(int) if "size" in df else IPERF3_LENGTH
    df["workload"] = df["workload"].str.replace(r"-size\d+$", "", regex=True)   # the collector's "tcp-size16384"
    return df


def _rows(tb, df, cfgs, sims, campaign: str, split_of) -> None:
    for c in cfgs:
        f = c.facts
        sel = df[(df["bridge"] == f["bridge"]) & (df["chain"] == f["chain"]) & (df["link"] == f["link"])
                 & (df["vm_tx_offload"] == f["offload"]) & (df["size"] == f.get("length", IPERF3_LENGTH))]
        sim = sims[c.label]
        for wl, mm, fac, sm, unit, metric in METRICS + EXTRA_METRICS:
            runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * fac
            if runs.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(sim.values(wl, sm))
            kind = "cpu_throughput" if metric == "throughput" else metric
            tb.rows.append(Comparison(tb.name, f"{campaign}: {c.label} {wl}", metric, unit, y, lo, hi, m, slo, shi,
                                      split_of(c, wl), kind, note=f"{runs.size} runs"))


def copy_cost_per_byte(df) -> float:
    """The receiving iperf3's CPU per byte with offloads on and 128 KiB reads (its ``cpu_util_total``,
    getrusage, over the bytes it received): the copy to user (``tcp_recvmsg`` -> ``skb_copy_datagram_iter``)
    and little else, since the receive softirq runs in the sender's context (veth ``netif_rx`` on the
    sender's CPU).  Seconds per byte, the mean over the runs."""
    sel = df[(df["vm_tx_offload"]) & (df["size"] == IPERF3_LENGTH) & (df["workload"] == "tcp")]
    runs = sel.pivot_table(index="rep", columns="metric", values="value")
    return float((runs["cpu_server"] / (runs["throughput"] / 8)).mean())


def _fit(runner: Runner, settings: Settings, fit_data: Path):
    """``app.send_per_call`` on ``fit_data``'s four rows, the copies per byte set to what iperf3 measured."""
    df = _load(fit_data)
    cfgs, targets = [], []
    for offload in (True, False):
        for length in (IPERF3_LENGTH, 16384):
            c = _cfg("linux", 1, "-", offload, ["tcp"], None if length == IPERF3_LENGTH else length)
            c.facts["length"] = length
            sel = df[(df["bridge"] == "linux") & (df["vm_tx_offload"] == offload) & (df["size"] == length)
                     & (df["workload"] == "tcp") & (df["metric"] == "throughput")]
            runs = sel["value"].to_numpy(float) * 1e-6
            sigma, how = target_sigma(float(runs.mean()), std=float(runs.std(ddof=1)), n=runs.size)
            targets.append(Target(f"{c.label}/tcp", "throughput", float(runs.mean()), sigma, "Mbit/s", runs, how))
            cfgs.append(c)
    copy = f"{copy_cost_per_byte(df) * 1e9:.4g}ns"
    files = [fit_data / "results.csv.gz"] if (fit_data / "results.csv.gz").is_file() else []
    return cfgs, fit_profile(
        runner, settings, name="local_batching", configs=cfgs, targets=targets, data_files=files,
        params=[Param.parse("app.send_per_call=1us..1000us")],
        fixed={"app.send_per_byte": copy, "app.recv_per_byte": copy},
        base_profile="local_netns", x0={"app.send_per_call": 80e-6},
        description="This machine's namespace testbed: local_netns plus the socket copies per byte (measured: the "
                    "receiving iperf3's CPU per byte) and the cost of a write() call (fitted on the Linux bridge's "
                    "iperf3 throughput, offloads on and off, 128 KiB and 16 KiB writes)",
        method_note="app.send_per_byte = app.recv_per_byte = the receiving iperf3's CPU per byte (cpu_util_total "
                    "over bytes) in the offloads-on 128 KiB runs, not fitted; target of app.send_per_call: iperf3 "
                    "TCP throughput, Linux bridge, 1 bridge, offloads on and off, iperf3 -l 128 KiB and 16 KiB "
                    "(data/local/2026-11-25/local-bytes); the other parameters fixed at local_netns; "
                    "sigma = std/sqrt(n) of the runs")


def run(runner: Runner, settings: Settings, data: Path = DATA, fit_data: Path = FIT_DATA) -> list[TestbedResult]:
    tb = TestbedResult("batching", "Issue 15: batching -- offloads on/off, OVS netdev, chains (this machine)")
    for d, camp in ((fit_data, "local-bytes"), (data, "local-offloads")):
        if not (d / "results.parquet").is_file() and not (d / "results.csv.gz").is_file():
            tb.notes.append(f"No data at {shown(d)}: run `sudo ovssim collect data/campaigns/{camp}.toml "
                            f"--out {shown(d)}`.")
            return [tb]
    fcfgs, (profile, res) = _fit(runner, settings, fit_data)
    tb.profile = shown(profile)
    tb.fit = fit_summary(res, profile)
    fdf = _load(fit_data)
    # the held-out campaign
    df = _load(data)
    keys = ["bridge", "chain", "link", "vm_tx_offload"]
    cfgs = []
    for k, wls in df.groupby(keys)["workload"].unique().items():
        wls = [w for w in wls if w in WORKLOADS or w == "tcp4"]
        if wls:
            cfgs.append(_cfg(k[0], int(k[1]), k[2], bool(k[3]), wls))
    sims = runner.run(fcfgs + cfgs, str(profile), reps=settings.reps, seed=2026)
    _rows(tb, fdf, fcfgs, sims, "local-bytes", lambda c, wl: "in-sample")
    _rows(tb, df, cfgs, sims, "local-offloads", lambda c, wl: "held-out")
    tb.split = ("Fitted: one parameter (`app.send_per_call`) on the four rows of data/local/2026-11-25/local-bytes "
                "(offloads on and off, 128 and 16 KiB writes); measured there, not fitted: the socket copies per "
                "byte (`app.send_per_byte` = `app.recv_per_byte` = the receiving iperf3's CPU per byte); every other "
                "parameter comes from calibration/local_netns.toml (fitted on data/local/local-bridges, offloads "
                "off).  Held out: every row of data/local/2026-11-24/local-offloads.")
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
