"""Seed 000 (Pothuraju 2016): KVM and Docker, OVS and Linux bridge, six schedulers.

Split: one profile for the testbed's hosts (``calibration/thesis_kvm.toml``), fitted on
**FIFO** rows only -- KVM with OVS and with the Linux bridge, and Docker with OVS (TCP_RR RTT
and the expected UDP jitter, ``jitter_mean``; no fitted parameter moves the TCP_STREAM
throughput); the other five schedulers of both, and Docker's Linux-bridge FIFO row, are
predicted.  Fit: the KVM VIF's delay, the Linux bridge's forward cost and the NIC's receive
delay (scale and spread each), warm-started from the committed profile, several replications
per evaluation with common random numbers.  The Docker rows are what separates the round
trip's host part (NIC receive, shared by both) from the KVM VIF's: with KVM data alone that
split is not identifiable.  Docker's Linux-bridge row is left out of the fit: the thesis's
Docker Linux and OVS RTTs are equal, its KVM ones 199 us apart, which no per-packet bridge cost
gives both (see the report).  The thesis publishes no CI, so the measured "band" is the
rounding band of the printed value.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from .. import units
from ..fit.calibrate import Param, Target, target_sigma
from . import plots
from .base import (ROOT, SCENARIOS, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, shown,
                   variant)
from .compare import Comparison, mean_ci, ranking_agreement
from .seed_data import SEED_DIR, THESIS_SCHEDULERS, load_seed_table, thesis_table
from .simulate import Config, Runner
from ..profile import Profile

QDISCS = {  # thesis label -> the port's qdisc (seed 000 §2.3, Table 1: set through the OVS QoS table)
    "FIFO": {"kind": "pfifo_fast"},
    "HFSC": {"type": "linux-hfsc", "other-config": {"max-rate": "100000000"},
             "queues": {"0": {"min-rate": "100000000", "max-rate": "100000000"}}},
    "HTB": {"type": "linux-htb", "other-config": {"max-rate": "100000000"},
            "queues": {"0": {"min-rate": "100000000", "max-rate": "100000000"}}},
    "SFQ": {"type": "linux-sfq"},
    "CODEL": {"type": "linux-codel"},
    "FQ-CODEL": {"type": "linux-fq_codel"},
}
METRICS = [("throughput", "stream", "throughput", "throughput_mbit_s", "Mbit/s", "throughput"),
           ("rtt", "rr", "rtt_mean", "rtt_ms", "ms", "rtt"),
           # the expectation of iperf's final RFC 3550 J (the thesis averages it over 100 runs), estimated from
           # every datagram's |D| (ovssim.workloads.udp): the final J of one short run scatters by ~25 %
           ("jitter", "udp", "jitter_mean", "jitter_ms", "ms", "jitter")]
BRIDGES = {"ovs": ("ovs", "OVS"), "linux": ("linux-bridge", "Linux")}
VIF_COLUMN = {"kvm": "kvm-tap", "docker": "container-veth"}    # the seed table's virtualization column


#: the fit's free parameters: the KVM VIF's delay (its mean sets KVM's OVS RTT over Docker's, its spread the
#: KVM jitter), the Linux bridge's forward cost (mean -> Linux RTT, spread -> Linux jitter: with the spread
#: fixed, raising the mean to reach the Linux RTT raised the Linux jitter with it, and the fit settled in
#: between) and the NIC's receive delay (interrupt moderation and NAPI, both testbeds' hosts: mean -> Docker's
#: OVS RTT, spread -> Docker's OVS jitter)
FIT_PARAMS = ["vif.kvm-tap.backend_delay:scale=1us..150us", "vif.kvm-tap.backend_delay:s=0.05..1.5",
              "linux_bridge.forward:scale=1us..200us", "linux_bridge.forward:s=0.02..1.5",
              "nic.rx_delay:scale=5us..150us", "nic.rx_delay:s=0.01..1.0"]
X0 = {"vif.kvm-tap.backend_delay:scale": 25e-6, "vif.kvm-tap.backend_delay:s": 0.3,
      "linux_bridge.forward:scale": 55e-6, "linux_bridge.forward:s": 0.2,
      "nic.rx_delay:scale": 40e-6, "nic.rx_delay:s": 0.3}   # without a committed profile
#: the FIFO rows the fit targets (virtualisation, bridge): Docker's Linux row is held out (module docstring)
FIT_ROWS = [("kvm", "ovs"), ("kvm", "linux"), ("docker", "ovs")]
FIT_REPS = 2               # replications per evaluation: their spread enters each residual's variance
FIT_EVALS_PER_BUDGET = 4   # Nelder-Mead evaluations per unit of Settings.max_evals (6 parameters)


#: per-packet CPU time of a qdisc's own code, measured on this machine's kernel (perf cpu-clock samples in the
#: qdisc's symbols per packet); of the thesis's schedulers only HTB and FIFO (pfifo_fast) exist in that kernel
QDISC_CPU = ROOT / "data" / "local" / "2026-11-25-qdisc-cpu" / "results.csv"


def measured_qdisc_costs(kinds=("htb", "pfifo_fast")) -> dict:
    """``{"qdisc.<kind>.cpu_per_packet": "<mean>ns"}`` for the measured kinds (a value, not a fit)."""
    if not QDISC_CPU.is_file():
        return {}
    means = pd.read_csv(QDISC_CPU).groupby("qdisc")["ns_per_packet"].mean()
    return {f"qdisc.{k}.cpu_per_packet": f"{means[k]:.0f}ns" for k in kinds if k in means.index}


def warm_start(profile_path: Path, params: list[Param], fallback: dict) -> dict:
    """Start values from the committed profile (inside each parameter's bounds), else ``fallback``."""
    if not profile_path.is_file():
        return dict(fallback)
    prof = Profile.load(str(profile_path)).params
    x0 = {}
    for p in params:
        spec = prof.get(p.name)
        v = spec.get(p.field) if isinstance(spec, dict) and p.field else spec
        if isinstance(v, (int, float, str)) and not isinstance(v, bool):
            v = units.time(v) if p.is_time else float(v)
            x0[p.label] = min(max(v, p.lo), p.hi)
        elif p.label in fallback:
            x0[p.label] = fallback[p.label]
    return x0


def _resolution(virt: str, bridge: str) -> dict:
    df = load_seed_table("seed000_thesis_tables")
    df = df[df["table"].isin(["Table 3", "Table 4", "Table 5"]) & (df["virtualization"] == virt) &
            (df["bridge"] == bridge)]
    return {(r.scheduler, r.metric): float(r.resolution) for r in df.itertuples()}


def _config(virt: str, bridge: str, sched: str) -> Config:
    base = load_scenario_dict(f"thesis_{virt}_{bridge}.toml")
    q = QDISCS[sched]
    sc = variant(base, name=f"thesis-{virt}-{bridge}-{sched}", **{"vm.vm1": {"qdisc": q}, "vm.vm2": {"qdisc": q}})
    return Config(f"{virt}-{bridge}-{sched}", sc, {"virt": virt, "bridge": bridge, "scheduler": sched})


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    seed_csv = SEED_DIR / "seed000_thesis_tables.csv"
    tables = {(v, b): thesis_table(BRIDGES[b][0], v) for v in ("kvm", "docker") for b in BRIDGES}
    # -- fit on the FIFO rows --------------------------------------------------------------
    fit_cfgs = []
    for v, b in FIT_ROWS:   # TCP_STREAM is left out of the fit: no fitted parameter moves it (see the report)
        c = _config(v, b, "FIFO")
        c.scenario["workload"] = [w for w in c.scenario["workload"] if w["name"] != "stream"]
        fit_cfgs.append(c)
    targets = []
    for v, b in FIT_ROWS:
        res_tab = _resolution(VIF_COLUMN[v], BRIDGES[b][0])
        for metric, wl, sim_metric, col, unit, _ in METRICS[1:]:
            y = float(tables[(v, b)].loc["FIFO", col])
            sigma, how = target_sigma(y, resolution=res_tab[("FIFO", metric)], rel_sigma=0.01)
            targets.append(Target(f"{v}-{b}-FIFO/{wl}", sim_metric, y, sigma, unit, source=how))
    params = [Param.parse(p) for p in FIT_PARAMS]
    fit_settings = dataclasses.replace(settings, fit_reps=max(settings.fit_reps, FIT_REPS))
    path, res = fit_profile(runner, fit_settings, name="thesis_kvm", configs=fit_cfgs, params=params, targets=targets,
                            data_files=[seed_csv] + ([QDISC_CPU] if QDISC_CPU.is_file() else []),
                            fixed=measured_qdisc_costs(), max_evals=FIT_EVALS_PER_BUDGET * settings.max_evals,
                            description="Seed 000 testbed hosts: fitted on the FIFO rows of Tables 3-5 (KVM with "
                                        "OVS and Linux bridge, Docker with OVS); HFSC/HTB/SFQ/CODEL/FQ-CODEL and "
                                        "Docker's Linux-bridge row are held out",
                            method_note="targets: netperf TCP_RR RTT and iperf UDP jitter (its expectation, "
                                        "jitter_mean), FIFO rows of KVM (OVS, Linux bridge) and Docker (OVS) only "
                                        "(TCP_STREAM throughput is not a target: no "
                                        "fitted parameter moves it); sigma = rounding band of the printed value, "
                                        "floored at 1%; warm start from the committed profile; qdisc.htb/pfifo_fast.cpu_per_packet "
                                        "measured (data/local/2026-11-25-qdisc-cpu), not fitted",
                            x0=warm_start(settings.calibration_dir / "thesis_kvm.toml", params, X0))
    # -- predict ----------------------------------------------------------------------------
    scheds = ["FIFO", "HTB"] if settings.fast else list(THESIS_SCHEDULERS)
    out = []
    for virt in ("kvm", "docker"):
        if settings.fast and virt == "docker":
            continue
        cfgs = [_config(virt, b, s) for b in BRIDGES for s in scheds]
        sims = runner.run(cfgs, str(path), reps=settings.reps, seed=2016)
        tb = TestbedResult(f"thesis_{virt}", f"Seed 000 thesis testbed, {virt.upper() if virt == 'kvm' else 'Docker'}",
                           profile=shown(path))
        tb.split = (f"One profile for KVM and Docker, fitted on FIFO rows only: KVM with OVS and with the Linux "
                    f"bridge, Docker with OVS ({len(params)} parameters, {len(targets)} targets: TCP_RR RTT and UDP "
                    "jitter; FIFO throughput is reported in-sample but no parameter was fitted to it). Held out: the "
                    "other five schedulers" + (" of both bridges." if virt == "kvm" else
                                               " of both bridges and the Linux bridge's FIFO row (not fitted: see below)."))
        tb.fit = fit_summary(res, path) if virt == "kvm" else {"params": {}, "note": "the KVM section's fit"}
        virt_col = VIF_COLUMN[virt]
        for b in BRIDGES:
            res_tab = _resolution(virt_col, BRIDGES[b][0])
            for metric, wl, sim_metric, col, unit, kind in METRICS:
                for s in scheds:
                    y = float(tables[(virt, b)].loc[s, col])
                    r = res_tab[(s, metric)]
                    m, lo, hi = mean_ci(sims[f"{virt}-{b}-{s}"].values(wl, sim_metric))
                    split = "in-sample" if (s == "FIFO" and (virt, b) in FIT_ROWS) else "held-out"
                    tb.rows.append(Comparison(tb.name, f"{BRIDGES[b][1]} {s}", metric, unit, y, y - r / 2, y + r / 2,
                                              m, lo, hi, split, kind, band="rounding band"))
        # rankings of schedulers
        lines = ["| bridge | metric | measured order (high to low) | simulated order | Kendall tau | preserved |",
                 "|---|---|---|---|---|---|"]
        for b in BRIDGES:
            for metric, *_ in METRICS:
                meas = {r.config.split(" ", 1)[1]: r.measured for r in tb.rows
                        if r.metric == metric and r.config.startswith(BRIDGES[b][1])}
                sim = {r.config.split(" ", 1)[1]: r.simulated for r in tb.rows
                       if r.metric == metric and r.config.startswith(BRIDGES[b][1])}
                ra = ranking_agreement(meas, sim)
                tb.extra.setdefault("rankings", []).append({"bridge": b, "metric": metric, **ra})
                lines.append(f"| {BRIDGES[b][1]} | {metric} | {' > '.join(ra['order_measured'])} | "
                             f"{' > '.join(ra['order_simulated'])} | {ra['tau']:.2f} | "
                             f"{'yes' if ra['preserved'] else 'no'} |")
        tb.tables.append("Scheduler rankings (ties in the simulation count as not preserved):\n\n" + "\n".join(lines))
        if not settings.fast or virt == "kvm":
            for metric, _, _, _, unit, _ in METRICS:
                rows = [r for r in tb.rows if r.metric == metric]
                fn = f"{tb.name}_{metric}.png"
                plots.bars(settings.figures_dir / fn, f"Seed 000 {virt.upper()}: {metric}", f"{metric} ({unit})", rows)
                tb.figures.append((fn, f"{virt.upper()} {metric}: thesis (grey, rounding band) vs simulated "
                                       f"(95% CI over {settings.reps} replications)"))
            # delay distribution of the TCP_RR transactions (no measured distribution was published)
            series = [(f"{BRIDGES[b][1]} {s}", sims[f"{virt}-{b}-{s}"].samples.get("rr:rr_latency", []), st)
                      for b, st in (("ovs", "-"), ("linux", "--")) for s in scheds[:2]]
            fn = f"{tb.name}_rr_ecdf.png"
            plots.ecdfs(settings.figures_dir / fn, f"Seed 000 {virt.upper()}: simulated TCP_RR latency",
                        "transaction latency (ms)", series)
            tb.figures.append((fn, "Simulated TCP_RR transaction-latency ECDFs (the thesis publishes means only, "
                                   "so there is no measured ECDF to overlay)"))
        notes(tb)
        out.append(tb)
    return out


def _row(tb: TestbedResult, config: str, metric: str) -> Comparison:
    return next(r for r in tb.rows if r.config == config and r.metric == metric)


def notes(tb: TestbedResult) -> None:
    """The report's reading of the seed 000 rows (numbers taken from the rows themselves)."""
    def rows(metric, bridge=None):
        return [r for r in tb.rows if r.metric == metric and (bridge is None or r.config.startswith(bridge))]
    thr = rows("throughput")
    sim_thr = sorted(r.simulated for r in thr)
    meas_thr = sorted(r.measured for r in thr)
    tb.notes.append(
        f"**Throughput.** The simulated TCP_STREAM reaches the TCP goodput ceiling of the 100 Mbit/s link for every "
        f"scheduler and bridge ({sim_thr[0]:.1f}-{sim_thr[-1]:.1f} Mbit/s); the thesis measured "
        f"{meas_thr[0]:.2f}-{meas_thr[-1]:.2f} Mbit/s. No fitted parameter moves it (so it is no fit target): the "
        "32 KiB socket buffers are not the limit in the model. The model lacks whatever held the real sender below "
        "line rate -- a candidate is netperf's 256-byte send() calls (about 46 000 calls/s at line rate). The "
        "profile can charge them (`app.send_per_call`), but throughput only moves once they saturate the guest's "
        "core (about 22 us per call for 90.8 Mbit/s): a knee that a trial fit with it as a fourth parameter "
        "(and the FIFO throughput as a target) did not find from its starting points, while it worsened the "
        "RTT rows and, carried to Docker, broke its throughput rows. It is left at 0 here; the "
        "discrepancy stands.")
    if tb.name == "thesis_kvm":
        costs = measured_qdisc_costs()
        htb = costs.get("qdisc.htb.cpu_per_packet")
        htb_ns = units.time(htb) * 1e9 if htb else float("nan")
        ovs = {r.config.split(" ", 1)[1]: r.measured for r in rows("rtt", "OVS")}
        extra = sorted((v - ovs["FIFO"]) / 2 * 1e3 for k, v in ovs.items() if k != "FIFO")
        tb.notes.append(
            "**Schedulers.** In the model the tap port's qdisc never holds a queue (the bottleneck is the "
            "100 Mbit/s NIC and switch), so the schedulers differ only by their own per-packet processing "
            "(`qdisc.<kind>.cpu_per_packet`). The thesis's OVS RTTs (FIFO 0.31 ms, the others 0.35-0.38 ms) would "
            f"need {extra[0]:.0f}-{extra[-1]:.0f} us more per qdisc crossing (a transaction crosses two: the "
            "request at the receiver's tap port, the response at the sender's). Measured on this machine's kernel "
            f"(data/local/2026-11-25-qdisc-cpu, perf samples in the qdisc's own functions): HTB {htb_ns:.0f} ns per "
            "packet, FIFO (pfifo_fast) 0 -- an empty pfifo_fast is bypassed (TCQ_F_CAN_BYPASS, "
            "__dev_xmit_skb in net/core/dev.c). These measured costs are in the profile; they are two orders of "
            "magnitude too small to explain the thesis's differences, and HFSC, SFQ, CoDel and FQ-CoDel (not in "
            "this kernel) have none. Nothing is fitted on the held-out schedulers. Whether the thesis's "
            "differences lie inside its measurement noise cannot be decided: no CI is published (Figures 11-16 "
            "are missing from the text). The scheduler rankings are therefore not preserved; where the "
            "simulated order differs from FIFO's, it is sampling noise.")
        fit = tb.fit
        jit = {b: _row(tb, f"{BRIDGES[b][1]} FIFO", "jitter") for b in BRIDGES}
        tb.notes.append(
            "**Fit.** Targets: the FIFO rows' TCP_RR RTT and UDP jitter. The simulated jitter is `jitter_mean`, the "
            "mean |D| over the run: its expectation is that of iperf's final RFC 3550 J, which the thesis averages "
            "over 100 runs, while one 0.5-s run's final J (the earlier target) scatters by 15-25 % between replications -- against a "
            "target sigma of 2 % (the printed value's rounding) that noise made up most of the objective and "
            "Nelder-Mead wandered in it. Six parameters (the KVM VIF's delay, the Linux bridge's forward cost and "
            f"the NIC's receive delay, scale and spread each) on six targets, {FIT_REPS} replications per evaluation "
            "(their spread enters each residual's variance), warm start from the committed profile; objective "
            f"{fit.get('objective', float('nan')):.1f} after {fit.get('evaluations', '?')} evaluations"
            + (f", {', '.join(fit['at_bound'])} at its bound" if fit.get("at_bound") else "") + ". "
            "The Docker OVS row is what separates the round trip's host part from the KVM VIF's: Docker's "
            "OVS RTT (0.287 ms) is 23 us below KVM's, four VIF crossings, so the VIF's delay is a few "
            "microseconds and the rest of the round trip is the hosts' (NIC receive: interrupt moderation and "
            "NAPI); Docker's OVS jitter (8.3 us) bounds the NIC's receive spread, and KVM's higher jitter "
            f"(OVS {jit['ovs'].measured * 1e3:g} us, simulated {jit['ovs'].simulated * 1e3:.1f}) is the VIF's. "
            "Fitted on KVM data alone (before 28 Nov) the VIF took the whole 29 us per crossing and the "
            "Docker OVS RTT came out 36 % low.")
        rtt = {b: _row(tb, f"{BRIDGES[b][1]} FIFO", "rtt") for b in BRIDGES}
        tb.notes.append(
            "**Linux bridge.** In the model and in the thesis's setup (§5.1, Fig. 10) a TCP_RR transaction crosses "
            "the same elements with either bridge -- guest tap, bridge, NIC, switch, NIC, bridge, tap, and back -- "
            "so the Linux-minus-OVS RTT is four bridge crossings' difference. The thesis's is "
            f"{(rtt['linux'].measured - rtt['ovs'].measured) * 1e3:.0f} us (FIFO). With the forward cost's spread "
            "fixed (lognormal s = 0.4), each microsecond of mean added to the Linux jitter, and the fit stopped at "
            "about 30 us per crossing (Linux RTT 0.39-0.45 ms); with the spread free the bounds (1-200 us) reach it. "
            "The Docker rows disagree with that cost (next section): the thesis's Docker Linux and OVS RTTs are equal, "
            "so the KVM difference is no per-packet bridge cost alone but something of KVM with a Linux bridge "
            "that the thesis does not describe and the model has no element for; the fit puts it into the bridge, "
            "as the thesis's own reading does (§6.1: time taken by the Linux bridge to forward).")
    else:
        tb.notes.append(
            "**Docker with the testbed's profile.** The Docker OVS FIFO row is in the fit (KVM section); the "
            "other OVS schedulers are predicted with it. The Linux-bridge rows are not: their RTT "
            f"({_row(tb, 'Linux FIFO', 'rtt').simulated:.3f} ms against {_row(tb, 'Linux FIFO', 'rtt').measured:g}) "
            "carries the Linux-bridge forward cost the KVM rows need, which the thesis's equal Docker Linux and "
            "OVS RTTs do not show (see the KVM section), and its jitter carries that cost's spread: "
            "the thesis's Docker Linux jitter (2.5-4.8 us) is below even its OVS jitter, so no per-packet bridge "
            "work of tens of microseconds can be in that path. "
            "Throughput reaches the link's ceiling for every row, as measured within 3 % (a TSO train crosses "
            "the store-and-forward switch frame by frame, so the receiver's ACKs are not held back). The Docker "
            "testbed itself is undocumented (companion "
            "thesis), so these rows are weak evidence either way.")
