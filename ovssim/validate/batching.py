"""Issue 15: batching on this machine, the CPU-bound regime.

Fit (``data/local/2026-11-27-quiet/local-bytes``, an idle machine): the Linux bridge, 1 bridge, iperf3 CUBIC, the
namespaces' transmit offloads on (TSO: 64 KB GSO skbs cross the veths and the bridge whole) and off
(``ethtool -K eth0 tx off``: software segmentation at eth0, MTU frames on the path), iperf3 -l
128 KiB and 16 KiB.  The same bytes in ~40x fewer skbs, and in 8x more write() calls.  The socket
copies per byte (``tcp_sendmsg``'s copy from user, ``tcp_recvmsg``'s copy to user;
``app.send_per_byte`` = ``app.recv_per_byte``, the same memcpy either way) are measured there, not
fitted: the receiving iperf3's own CPU per byte (:func:`copy_cost_per_byte`).  One parameter is
fitted on the four rows: the cost of a write() call (``app.send_per_call``), over the per-skb costs
fitted before (``calibration/local_netns_busy.toml``: these campaigns ran on a busy machine, as
its data did).  It writes ``calibration/local_batching.toml``.

Held out: every row of ``data/local/2026-11-27-quiet/local-offloads`` (Linux bridge offloads on and
off, OVS netdev, 1 and 4 streams, qperf ``tcp_lat`` and ping beside them, OVS chains of 2 and 4
bridges), and of the same campaigns on other days and under other loads (:data:`BUSY`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import statsmodels.api as sm

from ..fit.calibrate import Param, Target
from ..fit.profile_writer import machine_state_of
from ..profile import Profile
from .base import ROOT, Settings, TestbedResult, fit_profile, fit_summary, shown
from .compare import Comparison, mean_ci
from .cold import idle_exit_spec, idle_states
from .local import METRICS, WORKLOADS, _config, idle_exit_of, load_measured
from .seed001 import this_machine, trend
from .simulate import Runner

QUIET = ROOT / "data" / "local" / "2026-11-27-quiet"     # collected on an idle machine (speed index ~0.93)
FIT_DATA = QUIET / "local-bytes"
DATA = QUIET / "local-offloads"
# the same campaigns on other days -- 25 Nov at night (quiet but for the first repetition of local-offloads),
# and on a busy machine (other jobs on both cores): held out too, each simulated at its own speed index
# (Profile.scaled through the scenario's speed_index)
BUSY = (ROOT / "data" / "local" / "2026-11-25-quiet" / "local-bytes",
        ROOT / "data" / "local" / "2026-11-25-quiet" / "local-offloads",
        ROOT / "data" / "local" / "2026-11-25" / "local-bytes",
        ROOT / "data" / "local" / "2026-11-24" / "local-offloads",
        ROOT / "data" / "local" / "2026-11-25" / "local-offloads")
BASE_PROFILE = "local_netns"          # the quiet namespace testbed's per-packet costs
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
    c.facts["length"] = int(length) if length else IPERF3_LENGTH
    return c


def campaign(d: Path) -> tuple[str, dict]:
    """A campaign's name in the report, saying its machine state (the collector's ``metadata.json``
    ``machine_state``), and that state."""
    st = machine_state_of([d])
    idx = st.get("speed_index")
    tag = ("state not measured" if idx is None else
           f"{'quiet' if idx > 0.85 else 'busy'}, speed index {idx:.2f}, load {st.get('loadavg', ['?'])[0]}")
    return f"{d.name} {d.parent.name} [{tag}]", st


INDEX_ROW = ("linux-1-txoff", "tcp")     # what estimates a campaign's speed index when none was measured


def estimated_speed_index(df, fit_df, fit_index: float) -> float:
    """A speed index for a campaign without a machine state: its Linux bridge's 1-bridge offloads-off
    iperf3 TCP throughput (one flow, CPU-bound in the kernel, 128 KiB writes) relative to the fit data's,
    times the fit data's index (as ``ovssim.validate.local.measured_state`` estimates a day's)."""
    def tput(d):
        sel = d[(d["bridge"] == "linux") & (d["chain"] == 1) & ~d["vm_tx_offload"] & (d["size"] == IPERF3_LENGTH)
                & (d["workload"] == "tcp") & (d["metric"] == "throughput")]
        return float(sel["value"].mean())
    return round(fit_index * tput(df) / tput(fit_df), 3)


def held_out_campaigns(data: Path = DATA) -> list[tuple[Path, str, dict]]:
    """The held-out campaigns: ``data`` (quiet), then the busy ones (:data:`BUSY`)."""
    return [(d, *campaign(d)) for d in (data, *BUSY)]


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


def _chain_ratios(tb, name: str) -> str:
    """The OVS veth chains' TCP throughput over one bridge's, measured and simulated, in campaign ``name``."""
    rows = {r.config.split(": ", 1)[1]: r for r in tb.rows if r.config.startswith(name + ": ") and r.metric == "throughput"}
    one = rows.get("ovs-1-txoff tcp")
    parts = []
    for k in (2, 4):
        r = rows.get(f"ovs-{k}-veth-txoff tcp")
        if one and r:
            parts.append(f"{k} bridges {r.measured / one.measured:.2f} measured, {r.simulated / one.simulated:.2f} "
                         "simulated")
    return (f"Throughput of the chain over one bridge on {name.split(' [')[0]}: " + "; ".join(parts) + ".") if parts else ""


def copy_cost_per_byte(df) -> tuple[float, float]:
    """The receiving iperf3's CPU (its ``cpu_util_total``, getrusage) split into a cost per read() call and
    a cost per byte, by least squares over the offloads-on runs of both read sizes (iperf3 reads with the
    client's -l): CPU share = reads/s x per-read + bytes/s x per-byte.  The per-byte part is the copy to
    user (``tcp_recvmsg`` -> ``skb_copy_datagram_iter``), the same memcpy as ``tcp_sendmsg_locked``'s copy
    from user; the receive softirq runs in the sender's context (veth ``netif_rx`` on the sender's CPU).
    Returns (seconds per byte, seconds per read)."""
    sel = df[df["vm_tx_offload"] & (df["workload"] == "tcp")]
    runs = sel.pivot_table(index=["size", "rep"], columns="metric", values="value").reset_index()
    rate = runs["throughput"] / 8
    fit = sm.OLS(runs["cpu_server"], np.column_stack([rate / runs["size"], rate])).fit()
    per_read, per_byte = (float(x) for x in fit.params)
    return per_byte, per_read


NO_PAYLOAD_TOUCH = {"vif.container-veth.cpu_per_byte": "0ns", "veth.cpu_per_byte": "0ns"}
"""A veth never reads the payload: ``veth_xmit`` hands the skb to the peer by reference (``veth_forward_skb``
-> ``__netif_rx``), so its work is per skb, not per byte (the default profile's 0.1 ns/byte is an order of
magnitude, never fitted)."""


def same_driver_costs(profile: str) -> dict:
    """A veth pair between chained bridges costs what a namespace's veth costs: the same driver
    (drivers/net/veth.c ``veth_xmit`` -> ``veth_forward_skb`` -> ``netif_rx``, then the peer's receive
    softirq), so ``veth.cpu_per_packet`` / ``cpu_per_byte`` take the profile's fitted
    ``vif.container-veth.*`` instead of the default profile's order of magnitude."""
    prof = Profile.load(profile)
    return {f"veth.{c}": prof.params[f"vif.container-veth.{c}"] for c in ("cpu_per_packet", "cpu_per_byte")}


def _fit(runner: Runner, settings: Settings, fit_data: Path):
    """``app.send_per_call`` on the offloads-on and ``gso.cpu_per_segment`` on the offloads-off 128 KiB rows of
    ``fit_data``; the copies per byte set to what the receiving iperf3 measured.  The 16 KiB rows are simulated
    with the same profile and reported in-sample, not targeted (see the notes)."""
    df = _load(fit_data)
    cfgs, targets = [], []
    for offload in (True, False):
        for length in (IPERF3_LENGTH, 16384):
            c = _cfg("linux", 1, "-", offload, ["tcp"], None if length == IPERF3_LENGTH else length)
            cfgs.append(c)
            if length != IPERF3_LENGTH:
                continue
            sel = df[(df["bridge"] == "linux") & (df["vm_tx_offload"] == offload) & (df["size"] == length)
                     & (df["workload"] == "tcp") & (df["metric"] == "throughput")]
            runs = sel["value"].to_numpy(float) * 1e-6
            targets.append(Target.from_runs(f"{c.label}/tcp", "throughput", runs, "Mbit/s"))
    per_byte, _ = copy_cost_per_byte(df)
    copy = f"{per_byte * 1e9:.4g}ns"
    files = [fit_data / "results.csv.gz"] if (fit_data / "results.csv.gz").is_file() else []
    fit_cfgs = [c for c in cfgs if c.facts["length"] == IPERF3_LENGTH]
    return cfgs, fit_profile(
        runner, settings, name="local_batching", configs=fit_cfgs, targets=targets, data_files=files,
        params=[Param.parse("app.send_per_call=0.5us..200us"), Param.parse("gso.cpu_per_segment=0.01us..5us")],
        fixed={"app.send_per_byte": copy, "app.recv_per_byte": copy, **same_driver_costs(BASE_PROFILE),
               **NO_PAYLOAD_TOUCH},
        base_profile=BASE_PROFILE, x0={"app.send_per_call": 9e-6, "gso.cpu_per_segment": 0.2e-6},
        description="This machine's namespace testbed (quiet, 25 Nov): local_netns plus the socket copies per byte "
                    "(measured: the receiving iperf3's CPU split into per read and per byte), no per-byte veth work, "
                    "and the cost of a write() call and of a software-GSO segment (fitted on the Linux bridge's "
                    "iperf3 -l 128 KiB throughput, offloads on and off)",
        method_note="app.send_per_byte = app.recv_per_byte = the per-byte part of the receiving iperf3's CPU "
                    "(least squares over the offloads-on runs, 128 and 16 KiB reads), not fitted; veth and "
                    "vif.container-veth cpu_per_byte = 0 (veth passes skbs by reference); veth.cpu_per_packet = "
                    "vif.container-veth.cpu_per_packet (same driver); targets: iperf3 -l 128 KiB TCP throughput, "
                    "Linux bridge, 1 bridge, offloads on (app.send_per_call) and off (gso.cpu_per_segment) "
                    f"({shown(fit_data)}); the other parameters fixed at {BASE_PROFILE}; "
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
    sims = runner.run(fcfgs, str(profile), reps=settings.reps, seed=2026)
    _rows(tb, fdf, fcfgs, sims, campaign(fit_data)[0], lambda c, wl: "in-sample")
    own = machine_state_of([fit_data]).get("speed_index")
    for d, name, state in held_out_campaigns(data):
        if not (d / "results.parquet").is_file() and not (d / "results.csv.gz").is_file():
            continue
        index = state.get("speed_index")
        df = _load(d)
        estimated = index is None
        if estimated:
            index = estimated_speed_index(df, fdf, own)
        cfgs = []
        keys = ["bridge", "chain", "link", "vm_tx_offload", "size"]
        for k, wls in df.groupby(keys)["workload"].unique().items():
            wls = [w for w in wls if w in WORKLOADS or w == "tcp4"]
            if wls:
                c = _cfg(k[0], int(k[1]), k[2], bool(k[3]), wls, None if int(k[4]) == IPERF3_LENGTH else int(k[4]))
                if index:
                    c.scenario["scenario"]["speed_index"] = index
                cfgs.append(c)
        exit_us = state.get("idle_exit_us")       # measured by the collector: the day's own idle exit
        if exit_us is not None:                   # less its own cold work, which host.cold_factor adds back
            exit_us = idle_exit_of(state)[0] * 1e6
        sims = runner.run(cfgs, str(profile), reps=settings.reps, seed=2026,
                          overrides={"host.idle_exit": idle_exit_spec(exit_us * 1e-6)} if exit_us is not None else None)
        _rows(tb, df, cfgs, sims, name, lambda c, wl: "in-sample" if estimated and (c.label, wl) == INDEX_ROW
              else "held-out")
        tb.notes.append(f"{name} ({shown(d)}): simulated at its speed index {index} (every CPU cost of the profile "
                        f"x {own} / {index})" + (
                            ", estimated: no machine state was measured (collected before the collector measured "
                            "it), so the index is the Linux bridge's offloads-off TCP throughput over the fit "
                            "data's, and that row is in-sample" if estimated else "")
                        + (f"; host.idle_exit {exit_us:.1f} us, from the collector's measurement" if exit_us is not None
                           else "") + ".")
    tb.split = (f"Fitted: two parameters on the two 128 KiB rows of {shown(fit_data)} (quiet machine): "
                "`app.send_per_call` on offloads on, `gso.cpu_per_segment` on offloads off.  Measured there, not "
                "fitted: the socket copies per byte (`app.send_per_byte` = `app.recv_per_byte`, the per-byte part of "
                "the receiving iperf3's CPU).  Set by the mechanism: no per-byte veth work; a chain's veth pair "
                f"costs the namespace veth's fitted cost.  Every other parameter: calibration/{BASE_PROFILE}.toml "
                "(quiet 24-Nov data/local/2026-11-24/local-bridges, offloads off).  The 16 KiB rows of the fit data "
                "are shown in-sample but were not targeted.  Held out: every row of the quiet local-offloads and of "
                "the busy campaigns, each at its own speed index.")
    per_byte, per_read = copy_cost_per_byte(fdf)
    rates = (fdf[(fdf["workload"] == "tcp") & (fdf["bridge"] == "linux")]
             .pivot_table(index=["vm_tx_offload", "size"], columns="metric", values="value", aggfunc="mean"))
    per_write = {k: r["cpu_client"] / (r["throughput"] / 8 / k[1]) * 1e6 for k, r in rates.iterrows()}
    tb.notes.append(
        "**What the quiet data show.** The iperf3 client used 0.97-0.99 of a core in every configuration, so "
        "its CPU per write() is the cost the rate follows: offloads on "
        f"{per_write[(True, IPERF3_LENGTH)]:.1f} us per 128 KiB write and {per_write[(True, 16384)]:.1f} us per "
        f"16 KiB write; offloads off {per_write[(False, IPERF3_LENGTH)]:.0f} and {per_write[(False, 16384)]:.1f} "
        "us.  A 16 KiB write costs more than a 128 KiB one, with a skb or less per write against two and more: "
        "no split into per-call, per-byte and per-skb costs fits both sizes (it needs a negative per-skb cost), "
        "so the fit takes the 128 KiB rows (every held-out row uses 128 KiB writes) and the 16 KiB rows show what "
        "the model lacks.  The receiving iperf3's CPU, over the offloads-on runs of both read sizes, splits into "
        f"{per_read * 1e6:.1f} us per read() and {per_byte * 1e9:.3f} ns per byte (least squares): the copy is "
        f"a memcpy at ~{1e-9 / per_byte:.0f} GB/s and the rest is per call, which is why a copy cost taken as the "
        "receiver's CPU over its bytes (0.136 ns here, 0.103 on the busy machine) overstated it 5x.")
    tb.notes.append(
        "**Write coalescing (measured on a bare veth pair, validation/write_size/measure_veth.sh, 25 Nov 04:50, "
        "the machine loaded again, load 1.6-2.9).** skbs averaged 52-57 KB from 128 KiB writes and 22-28 KB from "
        "16 KiB writes (busy 25 Nov: 55.0 and 25.2): larger than a write, so writes do coalesce.  `ss` showed "
        "how: the socket was cwnd-limited (unacked = cwnd, 700-900 segments) with 0.3-2.9 MB written and not "
        "sent; each ACK then releases what it freed as one skb (tcp_grow_skb / the unsent tail), so skb size "
        "follows the bytes per ACK, not the write.  TCPAutoCorking stayed at 20-45 per run (a veth orphans the "
        "skb at once, autocorking never holds a write) and TCPBacklogCoalesce counted thousands of ACKs "
        "merged in the socket backlog: ACKs do arrive while the writer owns the socket.  The model now holds "
        "them there (tcp/socket.py, `tcp_add_backlog` / `release_sock`); it changes the model's skb sizes by "
        "nothing, because in the model the writer's core, not the window, limits these flows.  In the quiet "
        "local-bytes runs the writer was CPU-bound (0.98 of a core), the regime the model has; the window-"
        "limited regime above is what a loaded machine (the ACK path waiting for the other core) adds.")
    tb.notes.append(
        "**Why rows miss (fit of 27 Nov, idle machine: `app.send_per_call` 14.9 us, `gso.cpu_per_segment` at "
        "its 0.01 us bound).** *The same configuration moves between days at the same machine state*: the "
        "Linux bridge with offloads on carried 41.5 Gbit/s on 25 Nov (speed index 1.02) and 23.0 on 27 Nov "
        "(0.93), the iperf3 client at 0.97-0.99 of a core both times, while offloads off moved by 5 % (4303 and "
        "4580): the per-byte work of a 64 KB-skb flow (copies, page allocation) changed by ~45 % and the speed "
        "index (a CPU loop and a veth ping-pong) does not see it -- a memory-bandwidth probe in the machine "
        "state is the missing measurement.  25 Nov's rows are held out at that day's index and miss by that "
        "much.  *Offloads off* (-19 % in-sample at the bound): the base profile's per-frame costs (24 Nov) are "
        "above what 27 Nov needs.  *16 KiB rows*: a 16 KiB write costs more than a 128 KiB one, not modelled.  "
        "*RR and pings*: each campaign's own idle exit (the collector's spaced ping, `host.idle_exit`) and the "
        "base profile's cross-core reader wake-up (`app.idle_wake`, fitted 26 us on 24 Nov; sockperf across "
        "the two idle cores measured ~26 us); campaigns without a measured idle exit (24 and 25 Nov) take 24 "
        "Nov's.  *OVS TCP*: the measured runs retransmit 860-1150 segments/s (drops at ovs-vswitchd's "
        "AF_PACKET sockets: 4100-5750 retransmits in 5 s at 1.1-1.3 Gbit/s, 27 Nov) and keep their rate, "
        "while the model's replications split into two rates (2-bridge veth chain, 27 Nov: 351-365 Mbit/s in "
        "three of four, 743 in the fourth): each slow one waited once for a 200 ms retransmission timeout "
        "inside its 0.3 s window, for a retransmission that was lost again.  Linux finds a lost "
        "retransmission within a fraction of an RTT with RACK (net/ipv4/tcp_recovery.c, the default loss "
        "detection since 4.18) and probes a lost tail with TLP; ovssim models neither (RFC 6675 marking, "
        "ovssim/tcp/rtx_queue.py).  "
        "*OVS veth chains*: ovs-vswitchd's sendto() into the receiver's veth runs the receiving namespace's "
        "IP/TCP receive (softirq on the thread's core) inside the pass, while a bridge in the middle of a veth "
        "chain hands its frame to the next bridge's AF_PACKET socket (packet_rcv), far less work; the model "
        "charges such a pass `1 - ovs.deliver_share` of a pass (the share fitted on 24 Nov's 2-bridge veth "
        "row, calibration/local_netns.toml). " + _chain_ratios(tb, campaign(data)[0]) + "")
    tb.notes.append(
        "**Mechanisms checked against the kernel.** veth GRO: drivers/net/veth.c (since 5.13) leaves GRO off by "
        "default and receives through `netif_rx` (the per-CPU backlog, `process_backlog`, no GRO); only "
        "`ethtool -K gro on` or an XDP program gives it NAPI and `napi_gro_receive`, and then only for skbs "
        "from a device without TSO (`veth_skb_is_eligible_for_gro`).  The model's veth default is that; gro on "
        "for a veth is not modelled (no collected run sets it).  tap/virtio-net: GSO skbs cross vhost whole "
        "(`virtio_net_hdr`), so the guest's GRO has nothing to merge unless the host sends MTU frames; not "
        "modelled.  `netdev_budget`: 300 frames and `netdev_budget_usecs` = 2 jiffies, 8 ms at this kernel's "
        "HZ=250 (sysctl 8000), not 2 ms; past it `net_rx_action` hands the rest to ksoftirqd, which on the "
        "model's dedicated cores runs at once, so it has no time effect without a scheduler; `NapiRx` counts "
        "the rounds that spend it (`time_squeeze`, as /proc/net/softnet_stat).  UDP GSO: iperf "
        "3.12 (here), iperf 2.1.8 and netperf never set `UDP_SEGMENT` (iperf3's opt-in `--gsro` came with "
        "esnet/iperf#1925, 2025), so no tool here uses it; skipped.")
    steps = trend(this_machine())
    tb.notes.append("**Seed 001: the per-packet datapath time against the data rate** (E001-03: it falls as the "
                    "rate rises, 10-15 kbit/s of 56-B packets slowest).  At 50-220 packets/s the packets are "
                    "4.6-45 ms apart, so no NAPI poll, GRO flush or datapath batch ever holds two of them: it is "
                    "no batching effect.  What the rate changes is how long the core idled before each packet, "
                    "so the idle state it reached (`host.shallow_after`, `host.idle_exit_after`, measured here: "
                    f"{idle_states().describe()}) and how cold its caches are when the datapath runs "
                    "(`host.cold_factor`).  The model's kernel-datapath pass (the default profile's seed-001 "
                    "steps, ovs.stats + ovs.lookup + ovs.actions) on one core with this machine's idle states "
                    "(ovssim/validate/seed001.py), median per packet: "
                    + "; ".join(f"{label} ({gap:.1f} ms apart) {us:.1f} us" for label, gap, us in steps)
                    + ".  It falls where the gap drops below the deep state's residency, as the paper's does; "
                    "the paper's own figures (a Xen VM on a Core 2 Quad) are not compared: its idle states and "
                    "cache sizes are not this machine's.")
    return [tb]
