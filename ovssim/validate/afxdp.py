"""OVS with AF_XDP ports on this machine (``data/local/2026-11-29-quiet/local-afxdp``, issue 18).

The collector ran the namespace testbed's OVS (userspace netdev datapath) with its VIFs as
``type=afxdp`` ports -- a PMD thread busy-polls their XSK rings -- and, as the baseline, with
the default ``system`` ports (AF_PACKET), 1 bridge and chains of 2 and 4 joined by patch
ports: iperf3 CUBIC and BBR with ping beside them, ping, qperf ``tcp_lat``/``udp_lat`` and
``udp_bw``, sockperf UDP ping-pong.

Data sets, the newest with a campaign's runs the fit and the held-out rows: 29 Nov (``ALONE``, quiet, one
testbed at a time), 25 Nov (``QUIET``, quiet, every testbed kept up: 1-3 other PMDs on the PMD's core) and
24 Nov (``BUSY``, loaded by other jobs).  The one before the newest is shown as a second, labelled set of rows
without a target.

Split: ``calibration/local_afxdp.toml`` (based on ``local_netns``, the AF_PACKET fit of the
other campaign) fits the PMD's cost per frame, ``ovs.afxdp.per_packet``, on the **1-bridge
AF_XDP iperf3 CUBIC throughput**.  Everything else is held out: the chains of 2 and 4 bridges,
BBR, every RTT, qperf ``udp_bw``, the PMD's processing cycles per packet that OVS counted
(``pmd-stats-show``: ``pmd_processing_cycles / pmd_packets``), and the ``system``-port runs,
predicted with ``local_netns`` unchanged (that profile never saw this campaign).
``ovs.afxdp.per_batch`` stays at the default profile's 2 us: these data cannot separate it
(the measured cycles per packet do not fall with the batch size on this loaded machine).
Each measured workload is simulated in a run of its own, so the PMD's counters are its alone.

The collector kept every testbed up to the campaign's end, and every private ovs-vswitchd put its PMD on
core 1, so each AF_XDP run shared its PMD's core with the PMDs of the AF_XDP testbeds built before it
(:func:`pmds_up`): each run is simulated with that many CPU-bound threads on the PMD's core
(``host.pmd_core_threads``, :mod:`ovssim.path.core_turns`), a row pooling its runs' conditions, and the fit
targets the 1-bridge CUBIC runs made with the most common count (2 others).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..fit.calibrate import Param, Target
from . import plots
from .base import ROOT, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, shown, variant
from .compare import Comparison, mean_ci
from .simulate import Config, Runner

# collections, newest first: 29 Nov one testbed at a time (keep_testbeds = false: the PMD alone on its core);
# 25 Nov on a quiet machine but with every testbed kept up (1-3 other PMDs on the PMD's core); 24 Nov loaded
ALONE = ROOT / "data" / "local" / "2026-11-29-quiet" / "local-afxdp"
QUIET = ROOT / "data" / "local" / "2026-11-25-quiet" / "local-afxdp"
BUSY = ROOT / "data" / "local" / "local-afxdp"
DATA, SECOND = next(((d, s) for d, s in ((ALONE, QUIET), (QUIET, BUSY)) if (d / "metadata.json").is_file()),
                    (BUSY, None))
# the second set's row prefix and what it is
SECOND_NOTE = {QUIET: ("kept ", "the 25-Nov collection on a quiet machine, made with every testbed kept up, so 1-3 "
                                "other testbeds' PMDs shared the PMD's core (each run simulated with its own count, "
                                "`host.pmd_core_threads`)"),
               BUSY: ("busy ", "the first collection of this campaign, 24 Nov, on a machine loaded by other jobs")}
BASE_PROFILE = "local_netns"
PORTS = {"netdev+afxdp": "afxdp", "netdev": "system"}       # the collector's datapath column -> port_type
PING = {"tool": "ping", "c": 15, "i": "10ms"}
# measured workload -> [(sim workload name, its table without from/to/start, offset in the run)], span (s)
WORKLOADS = {
    # iperf3 -O 1 in the collector: -O here too; the ping beside it starts once the flow is up
    "cubic": ([("cubic", {"tool": "iperf", "proto": "tcp", "C": "cubic", "cc_after_connect": True, "O": "0.1s",
                        "t": "0.3s"}, 0.0),
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
           ("sockperf_udp", "half_rtt_mean", 1e3, "sockperf", "half_rtt_mean", "ms", "rtt"),
           ("sockperf_udp", "half_rtt_p50", 1e3, "sockperf", "half_rtt_p50", "ms", "rtt")]
# the PMD's own figure: pmd-stats-show processing cycles per packet (derived per run), its simulated twin
PMD_CYCLES = "pmd_processing_cycles_per_packet"
PMD_WORKLOADS = {"cubic": "cubic", "bbr": "bbr", "qperf_udp_bw": "udp_bw"}
SUFFIX = {"send_bw": " send", "recv_bw": " recv", "half_rtt_p50": " p50"}      # rows of one workload told apart
FIT = ("cubic", "throughput")               # on the 1-bridge AF_XDP runs


def pmds_up(data: Path) -> dict[str, int]:
    """Per run id, how many AF_XDP testbeds -- each an ovs-vswitchd with one busy-polling PMD -- were up
    while it ran.

    The collector keeps every testbed it built up until the campaign ends (``[campaign] keep_testbeds``,
    default true, ``ovssim/collect/campaign.py``; this campaign does not set it), so from its first run on
    an AF_XDP configuration's PMD spins for the rest of the campaign, and each private OVS puts its PMD on
    the same core (no pmd-cpu-mask: ``pmd-rxq-show`` says ``core_id 1`` for each of two testbeds up at once
    on this machine, 28 Nov).  With keep_testbeds false only the run's own testbed is up."""
    import json
    import tomllib
    keep = True
    camp = data / "campaign.toml"
    if camp.is_file():
        keep = bool(tomllib.loads(camp.read_text()).get("campaign", {}).get("keep_testbeds", True))
    runs = [json.loads(line) for line in (data / "runs.jsonl").read_text().splitlines() if line.strip()]
    runs.sort(key=lambda r: r["start"])
    seen: set = set()
    out = {}
    for r in runs:
        afxdp = PORTS.get(r.get("datapath")) == "afxdp"
        if afxdp:
            seen.add((r.get("bridge"), r.get("chain"), r.get("link")))
        out[r["run_id"]] = len(seen) if keep else int(afxdp)
    return out


def load_measured(data: Path = DATA):
    from ..collect.store import load_results
    df = load_results(data)
    df = df[(df["status"] == "ok") & df["datapath"].isin(list(PORTS))].copy()
    df["port_type"] = df["datapath"].map(PORTS)
    # the AF_XDP testbeds' PMDs spinning on core 1 during each run, and for an AF_XDP run the others beside
    # its own (simulated: host.pmd_core_threads); the system-port runs are simulated without them (below)
    up = pmds_up(data) if (data / "runs.jsonl").is_file() else {}
    df["pmds_up"] = [up.get(r, 0) for r in df["run_id"]]
    df["pmd_others"] = [max(0, up.get(r, 1) - 1) if pt == "afxdp" else 0
                        for r, pt in zip(df["run_id"], df["port_type"])]
    # pmd-stats-show's processing cycles per packet, one row per run
    keys = ["run_id", "metric"]
    pmd = df[df["metric"].isin(["pmd_processing_cycles", "pmd_packets"])].set_index(keys)["value"].unstack("metric")
    per_pkt = (pmd["pmd_processing_cycles"] / pmd["pmd_packets"]).dropna()
    if not per_pkt.empty:
        w = df.drop_duplicates("run_id").set_index("run_id").loc[per_pkt.index].reset_index()
        w["value"], w["metric"], w["unit"] = per_pkt.to_numpy(), PMD_CYCLES, "cycles"
        df = pd.concat([df, w[df.columns]], ignore_index=True)
    return df


def _label(port_type: str, chain: int) -> str:
    return f"{port_type}-{int(chain)}"


def _config(port_type: str, chain: int, workloads: list[str], others: int = 0) -> Config:
    """The run's testbed: ``others`` CPU-bound threads (other testbeds' PMDs) on the PMD's core."""
    base = load_scenario_dict("local_netns.toml")
    edits = {"bridge.br": {"chain": int(chain), "link": "patch", "port_type": port_type}}
    if others:
        edits["host.local"] = {"pmd_core_threads": int(others)}
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
    label = "-".join([port_type, str(int(chain)), *workloads] + ([f"{int(others)}pmds"] if others else []))
    return Config(label, sc, {"port_type": port_type, "chain": int(chain), "pmd_others": int(others)})


def _select(df, port_type: str, chain: int, workload: str):
    return df[(df["port_type"] == port_type) & (df["chain"] == chain) & (df["workload"] == workload)]


def _runs(df, port_type: str, chain: int, workload: str, metric: str, factor: float,
          others: int | None = None) -> np.ndarray:
    sel = _select(df, port_type, chain, workload)
    if others is not None:
        sel = sel[sel["pmd_others"] == others]
    return sel[sel["metric"] == metric]["value"].to_numpy(float) * factor


def _run_others(df, port_type: str, chain: int, workload: str) -> list[int]:
    """The ``pmd_others`` of each run of (port type, chain, workload), in run order."""
    sel = _select(df, port_type, chain, workload).drop_duplicates("run_id").sort_values("run_id")
    return [int(n) for n in sel["pmd_others"]]


class _RunMix:
    """The simulated twin of a set of runs made under different conditions: each run's replications from the
    simulation of its own condition, pooled -- so the simulated mean weighs the conditions as the runs do."""

    def __init__(self, sims: list):
        self.sims = sims

    def values(self, workload: str, metric: str) -> np.ndarray:
        parts = [s.values(workload, metric) for s in self.sims]
        parts = [p for p in parts if p.size]
        return np.concatenate(parts) if parts and len(parts) == len(self.sims) else np.array([])


def run(runner: Runner, settings: Settings, data: Path = DATA, busy: Path | None = SECOND) -> list[TestbedResult]:
    df = load_measured(data)
    tb = TestbedResult("local_afxdp", f"Issue 18: OVS with AF_XDP ports on this machine ({shown(data)})",
                       section="afxdp")
    if df.empty:
        tb.notes.append(f"No AF_XDP data in {data}: collect it with `ovssim collect "
                        "data/campaigns/local-afxdp.toml` (root).")
        return [tb]
    # -- fit: the PMD's cost per frame, on the 1-bridge CUBIC throughput ----------------------------------
    # the runs made with the most common number of other PMDs on the core (from the second repetition on:
    # every AF_XDP testbed is up), each such run's conditions simulated as they were
    others = _run_others(df, "afxdp", 1, FIT[0])
    fit_n = max(set(others), key=others.count) if others else 0
    fit_cfg = _config("afxdp", 1, [FIT[0]], fit_n)
    made_with = f"{fit_n} other testbeds' PMDs on the PMD's core" if fit_n else "the PMD alone on its core"
    runs = _runs(df, "afxdp", 1, FIT[0], FIT[1], 1e-6, fit_n)
    targets = [Target.from_runs(f"{fit_cfg.label}/cubic", "throughput", runs, "Mbit/s")]
    path, res = fit_profile(
        runner, settings, name="local_afxdp", configs=[fit_cfg],
        params=[Param.parse("ovs.afxdp.per_packet=0.1us..60us")],
        targets=targets, data_files=[data / "results.csv.gz"] if (data / "results.csv.gz").is_file() else [],
        base_profile=BASE_PROFILE,
        description="This machine's namespace testbed with OVS AF_XDP ports: local_netns plus the PMD's cost "
                    "per frame, fitted on the 1-bridge AF_XDP iperf3 CUBIC throughput",
        method_note=f"target: iperf3 CUBIC throughput of the 1-bridge AF_XDP runs made with {made_with} "
                    + ("(the collector kept every testbed up; simulated with host.pmd_core_threads = that number)"
                       if fit_n else "(one testbed up at a time)")
                    + "; sigma = std/sqrt(n) of the runs; every local_netns "
                    "parameter fixed, ovs.afxdp.per_batch at the default profile's",
        x0={"ovs.afxdp.per_packet": 8e-6}, max_evals=12)
    tb.profile = shown(path)
    tb.fit = fit_summary(res, path)
    tb.split = ("Fitted: `ovs.afxdp.per_packet` (the PMD's whole pass per frame) on the 1-bridge AF_XDP iperf3 "
                f"CUBIC throughput of `{shown(data)}`, its {runs.size} runs made with {made_with} "
                "(`calibration/local_afxdp.toml`, based on `local_netns`). "
                "Held out: the chains of 2 and 4 bridges, BBR, every RTT, qperf udp_bw, the PMD's processing "
                "cycles per packet that OVS counted (pmd-stats-show), and the `system`-port (AF_PACKET) runs, "
                "predicted by `local_netns`, which never saw this campaign. `ovs.afxdp.per_batch` is the default "
                "profile's 2 us (not identifiable from these data).")
    _predict(tb, runner, settings, df, path, "", "held-out")
    if busy is not None and busy.resolve() != data.resolve():
        bdf = load_measured(busy)
        if not bdf.empty:
            # an earlier collection: the same predictions (each run's own conditions), shown without a target
            prefix, what = SECOND_NOTE.get(busy, ("earlier ", "an earlier collection"))
            _predict(tb, runner, settings, bdf, path, prefix, None)
            tb.notes.append(f"Rows named `{prefix}...`: {what} "
                            f"(`{shown(busy)}`); shown against the same predictions, without a target (not "
                            "counted).")
    _figures(tb, settings)
    _notes(tb, df, data)
    return [tb]


def _predict(tb: TestbedResult, runner: Runner, settings: Settings, df, path: Path, prefix: str,
             split: str | None) -> None:
    """Simulate every measured (port type, chain, workload) of ``df`` and add its rows; ``split`` None: rows
    without a target (a second data set shown beside the held-out one)."""
    keys = sorted(set(zip(df["port_type"], df["chain"], df["workload"])))
    cfgs, run_cfgs = {}, {}
    for pt, chain, wl in keys:
        if wl not in WORKLOADS or (settings.fast and (pt, chain) != ("afxdp", 2)):
            continue
        # one simulation per condition the runs were made in (the other PMDs on the PMD's core)
        run_cfgs[(pt, chain, wl)] = []
        for n in _run_others(df, pt, chain, wl):
            if (pt, chain, wl, n) not in cfgs:
                cfgs[(pt, chain, wl, n)] = _config(pt, chain, [wl], n)
            run_cfgs[(pt, chain, wl)].append(cfgs[(pt, chain, wl, n)])
    sims = {}
    af = [c for k, c in cfgs.items() if k[0] == "afxdp"]
    sy = [c for k, c in cfgs.items() if k[0] == "system"]
    if af:
        sims.update(runner.run(af, str(path), reps=settings.reps, seed=1818))
    if sy:
        sims.update(runner.run(sy, str(settings.calibration_dir / f"{BASE_PROFILE}.toml"), reps=settings.reps,
                               seed=1818))
    for (pt, chain, wl), cs in run_cfgs.items():
        sim = _RunMix([sims[c.label] for c in cs])
        for mwl, mm, f, swl, sm, unit, metric in METRICS:
            runs = _runs(df, pt, chain, wl, mm, f) if mwl == wl else np.array([])
            vals = sim.values(swl, sm)
            if runs.size == 0 or vals.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(vals)
            if split is None:
                row_split, kind = "held-out", ""
            else:
                row_split = "in-sample" if (pt, chain, wl, mm) == ("afxdp", 1, *FIT) else split
                kind = metric
            tb.rows.append(Comparison(tb.name, f"{prefix}{_label(pt, chain)} {swl}{SUFFIX.get(sm, '')}", metric,
                                      unit, y, lo, hi, m, slo, shi, row_split, kind, note=f"{runs.size} runs"))
        if pt == "afxdp":
            _pmd_rows(tb, df, chain, wl, sim, prefix)
    if split is not None:
        note = _condition_note(df, cfgs, sims)
        if note:
            tb.notes.append(note)


def _condition_note(df, cfgs: dict, sims: dict) -> str:
    """Measured against simulated, AF_XDP runs apart by the number of other PMDs on the core: the lone-PMD runs
    (the first repetition's 1-bridge configuration) are the mechanism's test, every row pools conditions."""
    parts = []
    for wl, mm, f, swl, sm, unit in (("cubic", "throughput", 1e-6, "cubic", "throughput", "Mbit/s"),
                                     ("bbr", "throughput", 1e-6, "bbr", "throughput", "Mbit/s"),
                                     ("ping", "rtt_mean", 1e3, "ping", "rtt_mean", "ms"),
                                     ("qperf_lat", "tcp_rr_rtt", 1e3, "tcp_lat", "rtt_mean", "ms")):
        cells = []
        for (pt, chain, w, n), c in sorted(cfgs.items()):
            if pt != "afxdp" or w != wl or c.label not in sims:
                continue
            runs = _runs(df, pt, chain, wl, mm, f, n)
            vals = sims[c.label].values(swl, sm)
            if runs.size and vals.size:
                fmt = "{:.0f}" if unit == "Mbit/s" else "{:.3f}"
                cells.append(f"{int(chain)} br, {n} other{'s' if n != 1 else ''}: {fmt.format(runs.mean())} vs "
                             f"{fmt.format(vals.mean())} ({runs.size} run{'s' if runs.size > 1 else ''})")
        if cells:
            parts.append(f"{swl} {unit}: " + "; ".join(cells))
    if not parts:
        return ""
    return ("**AF_XDP by the other PMDs on the core, measured vs simulated** (means): " + " | ".join(parts) + ".")


def _pmd_rows(tb: TestbedResult, df, chain: int, wl: str, sim, prefix: str = "") -> None:
    """The PMD's processing cycles per packet (pmd-stats-show) and its core's busy share (no target)."""
    if wl in PMD_WORKLOADS:
        runs = _runs(df, "afxdp", chain, wl, PMD_CYCLES, 1.0)
        vals = sim.values("system", "pmd.local.processing_cycles_per_packet")
        if runs.size and vals.size:
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(vals)
            batch = sim.values("system", "pmd.local.packets_per_rx_batch")
            tb.rows.append(Comparison(tb.name, f"{prefix}{_label('afxdp', chain)} {PMD_WORKLOADS[wl]} PMD",
                                      PMD_CYCLES,
                                      "cycles", y, lo, hi, m, slo, shi,
                                      "held-out", "",
                                      note=f"{runs.size} runs; simulated {np.mean(batch):.1f} frames per batch"))
    if wl == "ping":
        busy = sim.values("system", "cpu_util.local.core1")
        runs, system = (_busier_core(df, pt, chain, wl) for pt in ("afxdp", "system"))
        if busy.size and runs.size:
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(busy)
            # the same ping through AF_PACKET ports: where that is as busy, the row shows a loaded host, not a PMD
            note = f"{runs.size} runs: the busier core under a ping every 20 ms" + (
                f"; with system ports {np.mean(system):.0f} %" if system.size else "")
            tb.rows.append(Comparison(tb.name, f"{prefix}{_label('afxdp', chain)} ping PMD core", "cpu_util", "%",
                                      y, lo, hi, m, slo, shi, "held-out", "", band="a busy-polling core", note=note))


def _busier_core(df, port_type: str, chain: int, workload: str) -> np.ndarray:
    """Per run, the busier of the two cores (%, the collector's cpu0_busy / cpu1_busy): no pmd-cpu-mask is set,
    so the PMD may run on either."""
    sel = _select(df, port_type, chain, workload)
    sel = sel[sel["metric"].isin(["cpu0_busy", "cpu1_busy"])]
    return 100.0 * sel.groupby("run_id")["value"].max().to_numpy(float)


def _figures(tb: TestbedResult, settings: Settings) -> None:
    for metric, unit in (("throughput", "Mbit/s"), ("rtt", "ms")):
        rows = [r for r in tb.rows if r.metric == metric and r.kind]
        if rows:
            fn = f"afxdp_{metric}.png"
            plots.bars(settings.figures_dir / fn, f"AF_XDP vs system ports: {metric}", f"{metric} ({unit})", rows)
            tb.figures.append((fn, f"{metric}: measured (grey, 95% CI over runs) vs simulated "
                                   f"(blue in-sample, red held-out; 95% CI over {settings.reps} replications)"))


def _notes(tb: TestbedResult, df, data: Path) -> None:
    from ..fit.profile_writer import machine_state_of
    state = machine_state_of([data / "metadata.json"])
    busy = df[df["metric"] == "cpu_busy"]["value"].to_numpy(float)
    cv = []
    for (pt, chain, wl, mm), g in df.groupby(["port_type", "chain", "workload", "metric"]):
        if mm in ("throughput", "rtt_mean", "tcp_rr_rtt") and g["value"].size > 1:
            cv.append(float(g["value"].std(ddof=1) / g["value"].mean()))
    speed = state.get("speed_index")
    loaded = speed is None or speed < 0.5
    tb.notes.append(
        f"**Machine state** (`{shown(data)}`): "
        + (f"speed index {speed:.2f}, load average {state['loadavg'][0]:.1f} (the collector's before/after "
           "measurements, metadata.json); " if speed is not None else "no machine state recorded; ")
        + f"`cpu_busy` {np.mean(busy):.2f} on average over the runs; the run-to-run spread of the throughputs and "
        f"mean RTTs is {100 * np.median(cv):.0f} % (median coefficient of variation over the configurations).")
    if loaded:
        tb.notes.append(
            "**A loaded machine.** Other jobs shared the 2 cores: the PMD thread busy-polls one core, but with "
            "more runnable threads than cores the kernel still time-slices it, so a frame that arrives while "
            "the PMD is descheduled waits up to a scheduler slice (milliseconds), which the model -- whose PMD "
            "owns its core -- does not have; the measured AF_XDP ping and request/response RTT means are then "
            "milliseconds, not tens of microseconds, and a miss says as much about the measurement as about "
            "the model.")
    thr = df[(df["port_type"] == "afxdp") & (df["workload"] == "cubic") & (df["metric"] == "throughput")]
    by_chain = thr.groupby("chain")["value"].mean() * 1e-6
    tb.notes.append(
        "**What the model's AF_XDP path is.** The host's pool has one core fewer; the PMD (its own core) "
        "polls the XSK rx rings round robin, up to 32 frames a batch, and spends `ovs.afxdp.per_packet` on each "
        "frame's whole pass (descriptors, miniflow, EMC/dpcls, actions: the netdev costs `ovs.stats/lookup/"
        "actions` of `local_netns` were fitted with AF_PACKET's system calls inside and are not charged here), "
        "then flushes the tx rings at the end of the batch (`ovs.afxdp.per_batch`: the rx burst and the "
        "sendto() kicks, whose generic-mode transmit crosses the veth on the PMD's core; no qdisc). No "
        "`ovs.latency` and no idle stall: a PMD never sleeps. Patch ports are not datapath ports (`dpif/show`: "
        "`pt0a 2/none`; ofproto-dpif `port_construct`), and `patch_port_output` translates the peer bridge into "
        "the same megaflow (`in_port(vif1) ... actions:vif2` through 2 bridges, `dpctl/dump-flows`, 28 Nov): "
        "one pass and one EMC hit per frame whatever the chain -- measured: EMC hits = packets, no "
        "recirculation, 2 datapath flows for 1, 2 and 4 bridges. The measured means fall with the chain "
        "(AF_XDP CUBIC " + ", ".join(f"{v:.0f}" for v in by_chain.to_numpy()) + " Mbit/s for "
        + ", ".join(str(int(c)) for c in by_chain.index) + " bridges)"
        + (" because of the other PMDs on the PMD's core (next note), not of the bridges."
           if df["pmd_others"].max() > 0 else
           ", each run with its PMD alone on its core (the collector built one testbed at a time)."))
    share = _sharing_note(df)
    if share:
        tb.notes.append(share)
    other = _select(df, "afxdp", 1, "ping")
    other = other[other["metric"].isin(["cpu0_busy", "cpu1_busy"])].groupby("run_id")["value"].min()
    if other.size:
        tb.notes.append(
            "**The reader's wake-up.** `calibration/local_afxdp.toml` states no `cpu_busy`, so its runs pay "
            "`app.wakeup` only, not `app.idle_wake`. The core the PMDs leave was idle in the AF_XDP ping runs "
            f"(the less busy core {np.median(other.to_numpy()):.2f} busy, median), so a reader woken there does "
            "leave an idle core; but with `local_netns`'s `app.idle_wake` (fitted on 24 Nov for requests far "
            "apart) paid at that share, the lone round trips overshot by 2x on the 25-Nov data (sockperf half-RTT "
            "p50 40 us against 18-20 measured, qperf tcp_lat 0.18 ms against 0.10), so it is left out: what "
            "back-to-back exchanges pay to wake the reader is not known, and the model's lone-PMD round trip "
            "stays short (the tcp_lat and udp_lat rows).")
    tb.notes.append(_load_note(df))
    udp = _udp_note(df)
    if udp:
        tb.notes.append(udp)
    if loaded:
        tb.notes.append(WHY_BUSY)


def _sharing_note(df) -> str:
    """The PMD's share of its core per run, from pmd-perf-show's iterations per second in the ping runs (an
    idle PMD iterates as fast as its core lets it), by the number of other PMDs up; and the throughputs by the
    same count, chain by chain."""
    sel = df[(df["port_type"] == "afxdp") & (df["workload"] == "ping")]
    w = sel[sel["metric"].isin(["pmdperf_iterations", "wall_time"])].pivot_table(
        index=["run_id", "pmd_others"], columns="metric", values="value")
    if w.empty or not {"pmdperf_iterations", "wall_time"} <= set(w.columns):
        return ""
    rate = (w["pmdperf_iterations"] / w["wall_time"] / 1e6).groupby(level="pmd_others").mean()
    if 0 not in rate.index or len(rate) < 2:
        return ""
    parts = [f"{rate[n]:.1f} M/s with {n} other{'s' if n != 1 else ''} (1/{rate[0] / rate[n]:.2f} of alone)"
             for n in rate.index if n]
    thr = df[(df["port_type"] == "afxdp") & (df["metric"] == "throughput")]
    tp = (thr.groupby(["workload", "pmd_others", "chain"])["value"].mean() * 1e-6)
    tparts = []
    for wl in ("cubic", "bbr"):
        if wl in tp.index.get_level_values(0):
            t = tp.loc[wl]
            tparts.append(f"{wl.upper()} " + "; ".join(
                f"{n} other{'s' if n != 1 else ''}: " + ", ".join(
                    f"{t.loc[(n, c)]:.0f} ({int(c)} br)" for c in t.loc[n].index)
                for n in sorted(set(t.index.get_level_values(0)))))
    return ("**The other testbeds' PMDs on the PMD's core.** The collector keeps every testbed it built up to "
            "the campaign's end (`[campaign] keep_testbeds`, default true; ovssim/collect/campaign.py), and each "
            "private ovs-vswitchd, without pmd-cpu-mask, puts its PMD on the same core (`pmd-rxq-show`: "
            "`core_id 1`, `isolated : false` for each of two testbeds up at once, 28 Nov). So from the first "
            "AF_XDP configuration on, its PMD spun beside the later ones: 1, 2 and 3 PMDs on core 1 in the first "
            "repetition (1, 2 and 4 bridges, in that order), 3 from the second on; the system-port runs had them "
            "too (`cpu1_busy` 1.0 under a ping every 20 ms). The fair class shares the core equally: an idle "
            "PMD's iterations per second in the ping runs (`pmd-perf-show`) were "
            f"{rate[0]:.1f} M/s alone, " + ", ".join(parts) + ". Frames wait in the rings while the others run "
            "their turns -- whole ticks (4 ms at HZ=250): the AF_XDP ping RTTs are 15-35 us or 4.0, 8.0, 12, "
            "16 ms, and a request/response tool gets many fast exchanges in its PMD's turn and one stall per "
            "round. Each AF_XDP run is simulated with its own count (`host.pmd_core_threads`) and a row's simulated "
            "mean pools them as its runs do. The system-port runs are not: with the PMDs on core 1 their "
            "workload, ovs-vswitchd and the sender ran on core 0 (`cpu0_busy` 0.99 under qperf and udp_bw), which "
            "the model's 2-core pool with CPU-bound threads pinned to core 1 did not reproduce (its threads stay "
            "where their key puts them: udp_bw's sender fell to 0.27 Gbit/s against 3.2 measured), so they are "
            "still predicted by `local_netns` on two free cores. Measured AF_XDP "
            "throughput (Mbit/s) by other PMDs and chain: " + " | ".join(tparts) + ".")


def _udp_note(df) -> str:
    """Where qperf udp_bw's datagrams died in the measured runs (1 bridge), from the counters the collector
    kept: sent (send_bw over the test), taken by OVS (the AF_PACKET ports' ``dp_hit``, the PMD's
    ``pmd_packets``), read by the server (``msg_rate``)."""
    parts = []
    for pt in ("system", "afxdp"):
        sel = _select(df, pt, 1, "qperf_udp_bw")
        m = sel.groupby("metric")["value"].mean()
        if not {"udp_bw_send_bw", "udp_bw_msg_rate", "wall_time"} <= set(m.index):
            continue
        secs = round(float(m["wall_time"]))            # qperf -t: whole seconds
        sent = m["udp_bw_send_bw"] * secs / 8 / 1400
        read = m["udp_bw_msg_rate"] * secs
        taken = m.get("dp_hit" if pt == "system" else "pmd_packets")
        if taken is None or not np.isfinite(taken):
            continue
        parts.append(f"{pt} ports: {sent / 1e3:.0f}k datagrams sent, {100 * (sent - taken) / sent:.0f} % lost before "
                     f"OVS ({'the AF_PACKET socket, `afpacket_vif1_drops`' if pt == 'system' else 'the veth/XSK rings'}), "
                     f"{100 * (taken - read) / sent:.0f} % between OVS and the server's reads")
    if not parts:
        return ""
    return ("**qperf udp_bw: where the datagrams die** (1 bridge, means of the runs): " + "; ".join(parts) + ". "
            "The sender is never held back by the path (a UDP sendto() waits only for its own softirq work, "
            "`IperfUdp._carry`); the model's sender does the same, and drops where the kernel does (AF_PACKET "
            "and XSK rings, the UDP socket's receive buffer, the per-CPU backlog). Not yet with `system` ports: "
            "the model serves ovs-vswitchd's work on a fixed core (its key), here the sender's, first come "
            "first served, so the sender alternates with it datagram by datagram, where Linux's scheduler "
            "runs the two on different cores.")


def _load_note(df) -> str:
    """How the RTTs moved with the load the collector recorded per run (``loadavg_1min``)."""
    load = df[df["metric"] == "loadavg_1min"].set_index("run_id")["value"]
    parts = []
    for pt, wl, mm, f, what in (("afxdp", "ping", "rtt_mean", 1e6, "AF_XDP ping"),
                                ("afxdp", "qperf_lat", "tcp_rr_rtt", 1e6, "AF_XDP qperf tcp_lat"),
                                ("system", "ping", "rtt_mean", 1e6, "AF_PACKET ping")):
        sel = df[(df["port_type"] == pt) & (df["workload"] == wl) & (df["metric"] == mm)]
        if sel.empty:
            continue
        v = sel.set_index("run_id")["value"] * f
        la = load.reindex(v.index)
        parts.append(f"{what} {', '.join(f'{x:.0f}' for x in v[la < 1.5])} us at load < 1.5 vs "
                     f"{np.median(v[la >= 1.5]):.0f} us median at {la[la >= 1.5].min():.1f}-{la.max():.1f}"
                     if (la < 1.5).any() and (la >= 1.5).any() else f"{what} {np.median(v):.0f} us median")
    kept = df["pmd_others"].max() > 0          # load_measured's count of the other PMDs beside each run
    return ("**RTTs and the load of each run** (the collector's `loadavg_1min`): " + "; ".join(parts) + ". "
            + ("The load is mostly the kept testbeds' PMDs (previous note): " if kept else
               "A busy-polling PMD alone keeps the load near 1: ")
            + "where other threads compete for the PMD's core the kernel time-slices the busy-polling PMD and an "
            "AF_XDP frame waits for its next turn, which AF_PACKET ports (woken per packet) do not.")


WHY_BUSY = (
    "**Why the rows miss (loaded machine).** (1) *RTT means*: the measured AF_XDP pings, qperf and sockperf "
    "means are milliseconds because the PMD is time-sliced on this overloaded machine (above); their medians are not "
    "(sockperf: 26 us full RTT at the median through 1 AF_XDP bridge, 88 us through AF_PACKET). (2) *RTT "
    "medians*: the simulated ones are 2-4x the measured because `local_netns`'s host stack delay (~21 us a "
    "direction) and, for AF_PACKET, `ovs.latency` (131 us), fitted on `data/local/local-bridges`, are larger "
    "than this campaign's medians allow; the AF_XDP per-frame cost fitted on throughput (the PMD saturated) "
    "also carries the time-slicing. (3) *udp_bw*: the simulated sender is limited only by "
    "`app.send_per_packet` and its softirq work, and the receiver's socket buffer is not modelled, so the "
    "real sender's ~13 us per datagram here and the receiver's drops (recv_bw 1/4-1/10 of send_bw) are "
    "missing. (4) *PMD cycles*: OVS counts a busy iteration's TSC cycles even while the thread is "
    "descheduled, so its cycles per packet mix work and waiting; the model's are work only.")
