"""OVS with AF_XDP ports on this machine (``data/local/local-afxdp``, issue 18).

The collector ran the namespace testbed's OVS (userspace netdev datapath) with its VIFs as
``type=afxdp`` ports -- a PMD thread busy-polls their XSK rings -- and, as the baseline, with
the default ``system`` ports (AF_PACKET), 1 bridge and chains of 2 and 4 joined by patch
ports: iperf3 CUBIC and BBR with ping beside them, ping, qperf ``tcp_lat``/``udp_lat`` and
``udp_bw``, sockperf UDP ping-pong.

Split: ``calibration/local_afxdp.toml`` (based on ``local_netns``, the AF_PACKET fit of the
other campaign) fits the AF_XDP port's own costs, ``ovs.afxdp.per_packet`` and
``ovs.afxdp.per_batch``, on the **1-bridge AF_XDP** iperf3 CUBIC throughput and qperf
``tcp_lat`` RTT.  Held out: the AF_XDP chains of 2 and 4 bridges, every other tool through
the 1-bridge AF_XDP port (ping, BBR, ``udp_lat``, ``udp_bw``, sockperf, the pings beside the
TCP flows), and the ``system``-port runs, predicted with ``local_netns`` unchanged (that
profile never saw this campaign).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..fit.calibrate import Param, Target, target_sigma
from . import plots
from .base import ROOT, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, shown, variant
from .compare import Comparison, mean_ci
from .simulate import Config, Runner

DATA = ROOT / "data" / "local" / "local-afxdp"
BASE_PROFILE = "local_netns"
PORTS = {"netdev+afxdp": "afxdp", "netdev": "system"}       # the collector's datapath column -> port_type
PING = {"tool": "ping", "c": 15, "i": "10ms"}
# measured workload -> [(sim workload name, its table without from/to/start, offset in the run)], span (s)
WORKLOADS = {
    # iperf3 -O 1 in the collector: -O here too; the ping beside it starts once the flow is up
    "cubic": ([("cubic", {"tool": "iperf", "proto": "tcp", "C": "cubic", "O": "0.1s", "t": "0.3s"}, 0.0),
               ("cubic_ping", PING, 0.12)], 0.3),
    "bbr": ([("bbr", {"tool": "iperf", "proto": "tcp", "C": "bbr", "O": "0.1s", "t": "0.3s"}, 0.0),
             ("bbr_ping", PING, 0.12)], 0.3),
    "ping": ([("ping", {"tool": "ping", "c": 50, "i": "20ms"}, 0.0)], 1.0),
    "qperf_lat": ([("tcp_lat", {"tool": "qperf", "test": "tcp_lat", "t": "0.2s"}, 0.0),
                   ("udp_lat", {"tool": "qperf", "test": "udp_lat", "t": "0.2s"}, 0.25)], 0.45),
    "qperf_udp_bw": ([("udp_bw", {"tool": "qperf", "test": "udp_bw", "m": "1400b", "t": "0.2s"}, 0.0)], 0.2),
    "sockperf_udp": ([("sockperf", {"tool": "sockperf", "proto": "udp", "m": "64b", "t": "0.2s"}, 0.0)], 0.2),
}
# the TCP loads last: their queues and CPU backlog must not spill into the latency tools
ORDER = ["ping", "qperf_lat", "sockperf_udp", "qperf_udp_bw", "cubic", "bbr"]
# (measured workload, measured metric, factor to the sim unit, sim workload, sim metric, unit, report metric)
METRICS = [("cubic", "throughput", 1e-6, "cubic", "throughput", "Mbit/s", "throughput"),
           ("cubic", "probe_rtt_mean", 1e3, "cubic_ping", "rtt_mean", "ms", "rtt"),
           ("bbr", "throughput", 1e-6, "bbr", "throughput", "Mbit/s", "throughput"),
           ("bbr", "probe_rtt_mean", 1e3, "bbr_ping", "rtt_mean", "ms", "rtt"),
           ("ping", "rtt_mean", 1e3, "ping", "rtt_mean", "ms", "rtt"),
           ("qperf_lat", "tcp_rr_rtt", 1e3, "tcp_lat", "rtt_mean", "ms", "rtt"),
           ("qperf_lat", "udp_rr_rtt", 1e3, "udp_lat", "rtt_mean", "ms", "rtt"),
           ("qperf_udp_bw", "udp_bw_send_bw", 1e-6, "udp_bw", "send_bw", "Mbit/s", "throughput"),
           ("qperf_udp_bw", "udp_bw_recv_bw", 1e-6, "udp_bw", "recv_bw", "Mbit/s", "throughput"),
           ("sockperf_udp", "half_rtt_mean", 1e3, "sockperf", "half_rtt_mean", "ms", "rtt")]
FIT = [("cubic", "throughput"), ("qperf_lat", "tcp_rr_rtt")]      # on the 1-bridge AF_XDP runs


def load_measured(data: Path = DATA):
    from ..collect.store import load_results
    df = load_results(data)
    df = df[(df["status"] == "ok") & df["datapath"].isin(list(PORTS))].copy()
    df["port_type"] = df["datapath"].map(PORTS)
    return df


def _label(port_type: str, chain: int) -> str:
    return f"{port_type}-{int(chain)}"


def _config(port_type: str, chain: int, workloads: list[str]) -> Config:
    base = load_scenario_dict("local_netns.toml")
    edits = {"bridge.br": {"chain": int(chain), "link": "patch", "port_type": port_type}}
    if int(chain) > 1:
        edits["vm.ns2"] = {"bridge": f"br-{int(chain)}"}
    wls, t = [], 0.0
    for w in sorted(workloads, key=ORDER.index):
        parts, span = WORKLOADS[w]
        for name, spec, offset in parts:
            wls.append({"name": name, "from": "ns1", "to": "ns2", "start": f"{t + offset:.3f}s", **spec})
        t += span + 0.1
    sc = variant(base, workloads=wls, **edits)
    sc["scenario"]["duration"] = f"{t:.3f}s"
    return Config(_label(port_type, chain), sc, {"port_type": port_type, "chain": int(chain)})


def _runs(df, port_type: str, chain: int, workload: str, metric: str, factor: float) -> np.ndarray:
    sel = df[(df["port_type"] == port_type) & (df["chain"] == chain) & (df["workload"] == workload)
             & (df["metric"] == metric)]
    return sel["value"].to_numpy(float) * factor


def run(runner: Runner, settings: Settings, data: Path = DATA) -> list[TestbedResult]:
    df = load_measured(data)
    tb = TestbedResult("local_afxdp", "Issue 18: OVS with AF_XDP ports on this machine (data/local/local-afxdp)",
                       section="afxdp")
    if df.empty:
        tb.notes.append(f"No AF_XDP data in {data}: collect it with `ovssim collect "
                        "data/campaigns/local-afxdp.toml` (root).")
        return [tb]
    # -- fit: the AF_XDP port's own costs, 1 bridge ----------------------------------------------------
    fit_cfg = _config("afxdp", 1, [w for w, _ in FIT])
    targets = []
    for wl, mm in FIT:
        _w, _m, f, swl, sm, unit, _r = next(x for x in METRICS if x[0] == wl and x[1] == mm)
        runs = _runs(df, "afxdp", 1, wl, mm, f)
        sigma, how = target_sigma(float(runs.mean()), std=float(runs.std(ddof=1)), n=runs.size)
        targets.append(Target(f"{fit_cfg.label}/{swl}", sm, float(runs.mean()), sigma, unit, runs, how))
    path, res = fit_profile(
        runner, settings, name="local_afxdp", configs=[fit_cfg],
        params=[Param.parse("ovs.afxdp.per_packet=0.05us..60us"), Param.parse("ovs.afxdp.per_batch=0.1us..200us")],
        targets=targets, data_files=[data / "results.csv.gz"] if (data / "results.csv.gz").is_file() else [],
        base_profile=BASE_PROFILE,
        description="This machine's namespace testbed with OVS AF_XDP ports: local_netns plus the AF_XDP "
                    "port's per-frame and per-batch PMD costs, fitted on the 1-bridge AF_XDP runs",
        method_note="targets: iperf3 CUBIC throughput and qperf tcp_lat RTT of the 1-bridge AF_XDP runs; "
                    "sigma = std/sqrt(n) of the runs; every local_netns parameter fixed",
        x0={"ovs.afxdp.per_packet": 1e-6, "ovs.afxdp.per_batch": 5e-6}, max_evals=16)
    tb.profile = shown(path)
    tb.fit = fit_summary(res, path)
    tb.split = ("Fitted: `ovs.afxdp.per_packet` and `ovs.afxdp.per_batch` on the 1-bridge AF_XDP iperf3 CUBIC "
                "throughput and qperf tcp_lat RTT (`calibration/local_afxdp.toml`, based on `local_netns`). "
                "Held out: the AF_XDP chains of 2 and 4 bridges, the other tools through the 1-bridge AF_XDP "
                "port, and the `system`-port (AF_PACKET) runs, predicted by `local_netns`, which never saw this "
                "campaign.")
    # -- predict everything measured --------------------------------------------------------------------
    keys = sorted(set(zip(df["port_type"], df["chain"])))
    cfgs = {}
    for pt, chain in keys:
        wls = [w for w in df[(df["port_type"] == pt) & (df["chain"] == chain)]["workload"].unique() if w in WORKLOADS]
        if settings.fast and (pt, chain) != ("afxdp", 2):
            continue
        if wls:
            cfgs[(pt, chain)] = _config(pt, chain, wls)
    sims = {}
    af = [c for k, c in cfgs.items() if k[0] == "afxdp"]
    sy = [c for k, c in cfgs.items() if k[0] == "system"]
    if af:
        sims.update(runner.run(af, str(path), reps=settings.reps, seed=1818))
    if sy:
        sims.update(runner.run(sy, str(settings.calibration_dir / f"{BASE_PROFILE}.toml"), reps=settings.reps,
                               seed=1818))
    for (pt, chain), c in cfgs.items():
        sim = sims[c.label]
        for wl, mm, f, swl, sm, unit, metric in METRICS:
            runs = _runs(df, pt, chain, wl, mm, f)
            vals = sim.values(swl, sm)
            if runs.size == 0 or vals.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(vals)
            split = "in-sample" if pt == "afxdp" and chain == 1 and (wl, mm) in FIT else "held-out"
            tb.rows.append(Comparison(tb.name, f"{c.label} {swl}", metric, unit, y, lo, hi, m, slo, shi, split,
                                      metric, note=f"{runs.size} runs"))
        if pt == "afxdp":
            _pmd_rows(tb, df, chain, c, sim)
    _figures(tb, settings)
    _notes(tb, df)
    return [tb]


def _pmd_rows(tb: TestbedResult, df, chain: int, c: Config, sim) -> None:
    """pmd-perf-show's cycles per packet under the CUBIC load and the PMD core's busy share (no target)."""
    runs = _runs(df, "afxdp", chain, "cubic", "pmdperf_cycles_per_packet", 1.0)
    vals = sim.values("system", "pmd.local.cycles_per_packet")
    if runs.size and vals.size:
        y, lo, hi = mean_ci(runs)
        m, slo, shi = mean_ci(vals)
        tb.rows.append(Comparison(tb.name, f"{c.label} pmd (whole run)", "pmd_cycles_per_packet", "cycles",
                                  y, lo, hi, m, slo, shi, "held-out", "",
                                  note="measured over the CUBIC run; simulated over the whole scenario"))
    busy = sim.values("system", f"cpu_util.local.core{1}")
    if busy.size:
        m, slo, shi = mean_ci(busy)
        tb.rows.append(Comparison(tb.name, f"{c.label} PMD core", "cpu_util", "%", 100.0, 100.0, 100.0,
                                  m, slo, shi, "held-out", "", band="top: a busy-polling core",
                                  note="pmd-cpu-mask core, 100 % busy in top whatever the load"))


def _figures(tb: TestbedResult, settings: Settings) -> None:
    for metric, unit in (("throughput", "Mbit/s"), ("rtt", "ms")):
        rows = [r for r in tb.rows if r.metric == metric]
        if rows:
            fn = f"afxdp_{metric}.png"
            plots.bars(settings.figures_dir / fn, f"AF_XDP vs system ports: {metric}", f"{metric} ({unit})", rows)
            tb.figures.append((fn, f"{metric}: measured (grey, 95% CI over runs) vs simulated "
                                   f"(blue in-sample, red held-out; 95% CI over {settings.reps} replications)"))


def _notes(tb: TestbedResult, df) -> None:
    busy = df[df["metric"] == "cpu_busy"]["value"].to_numpy(float)
    cv = []
    for (pt, chain, wl, mm), g in df.groupby(["port_type", "chain", "workload", "metric"]):
        if mm in ("throughput", "rtt_mean", "tcp_rr_rtt") and g["value"].size > 1:
            cv.append(float(g["value"].std(ddof=1) / g["value"].mean()))
    tb.notes.append(
        "**A loaded machine.** This campaign ran while other jobs shared the 2 cores (`cpu_busy` "
        f"{np.mean(busy):.2f} on average over the runs; load average 5.2 at the start, metadata.json): the "
        f"run-to-run spread of the throughputs and mean RTTs is {100 * np.median(cv):.0f} % (median coefficient "
        "of variation over the configurations), wider than the 3 % and 10 % targets themselves, so a miss here "
        "says as much about the measurement as about the model. The PMD thread busy-polls one core, but on a "
        "machine with more runnable threads than cores the kernel still time-slices it: a frame that arrives "
        "while the PMD is descheduled waits up to a scheduler slice (milliseconds), which the model -- whose PMD "
        "owns its core -- does not have; that is why the measured AF_XDP ping and request/response RTTs are "
        "milliseconds, not tens of microseconds.")
    tb.notes.append(
        "**What the model's AF_XDP path is.** The host's pool has one core fewer; the PMD (its own core) "
        "polls the XSK rx rings round robin, up to 32 frames a batch, runs the bridge's datapath on them "
        "(the `local_netns` per-packet costs, charged to the PMD core) plus the AF_XDP port's own "
        "`ovs.afxdp.per_packet`, and at the end of each batch flushes the tx rings (`ovs.afxdp.per_batch`: the "
        "rx burst and the sendto() kicks, whose generic-mode transmit crosses the veth on the PMD's core). "
        "No `ovs.latency` and no idle stall: a PMD never sleeps. Patch ports stay inside the PMD's pass, so a "
        "chain costs only its patch crossings.")
