"""Seed 004 (OpenStack on XenServer): the cost of an interim bridge joined by patch ports.

Split: ``calibration/openstack_xenserver_interim.toml`` is fitted on the
**single-bridge** rounds only (mean of the 10 rounds, tap and vif); the
patch-port rounds and the ratio patchport/singlebr (published 98% / 99%) are
predicted.  The simulated iperf runs are much shorter than the post's 10 s
(0.3 s for the 123 Mbit/s tap case, 0.05 s for the 5 Gbit/s vif case).
"""
from __future__ import annotations

import numpy as np

from ..fit.calibrate import Param, Target
from ..profile import Profile
from . import plots
from .base import shown, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, variant
from .compare import Comparison, mean_ci
from .seed_data import SEED_DIR, interim_bridge_rounds
from .simulate import Config, Runner

CASES = {"tap": ("A", "0.3s"), "vif": ("B", "0.05s")}


def _config(case: str, vif: str) -> Config:
    base = load_scenario_dict("openstack_xenserver_interim.toml")
    client, dur = CASES[vif]
    edits = {"scenario": {"duration": dur}}
    if case == "patchport":
        edits["bridge.xapi1"] = {"chain": 2, "link": "patch"}
        edits["vm.A"] = {"bridge": "xapi1-2"}
        edits["vm.B"] = {"bridge": "xapi1-2"}
    wl = [{**base["workload"][0], "from": client}]
    return Config(f"{case}-{vif}", variant(base, workloads=wl, **edits), {"case": case, "vif": vif})


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    rounds = interim_bridge_rounds()
    csv = SEED_DIR / "seed004_interim_bridge.csv"
    fit_cfgs = [_config("singlebr", v) for v in CASES]
    targets = []
    for v in CASES:
        runs = rounds[f"singlebr-{v}"].to_numpy(float)
        targets.append(Target.from_runs(f"singlebr-{v}/iperf", "throughput", runs, "Mbit/s"))
    params = [Param.parse("vif.xen-hvm-tap.cpu_per_packet=5us..400us"),
              Param.parse("app.send_per_byte=0.01ns..20ns"),   # the socket copies (issue 15)
              Param.parse("ovs.stats:scale=0.05us..10us")]
    path, res = fit_profile(runner, settings, name="openstack_xenserver_interim", configs=fit_cfgs, params=params,
                            targets=targets, data_files=[csv],
                            description="Seed 004 XenServer host: fitted on the single-bridge rounds (tap and vif); "
                                        "the interim-bridge (patch port) rounds are held out",
                            method_note="targets: mean of the 10 single-bridge rounds, sigma = std/sqrt(10); "
                                        "app.recv_per_byte tied to app.send_per_byte",
                            x0={"vif.xen-hvm-tap.cpu_per_packet": 90e-6, "app.send_per_byte": 1e-9,
                                "ovs.stats:scale": 0.5e-6}, tied={"app.recv_per_byte": "app.send_per_byte"})
    cases = [("singlebr", "tap"), ("patchport", "tap")] if settings.fast else \
        [(c, v) for v in CASES for c in ("singlebr", "patchport")]
    cfgs = [_config(c, v) for c, v in cases]
    sims = runner.run(cfgs, str(path), reps=settings.reps, seed=404)
    tb = TestbedResult("openstack_xenserver_interim", "Seed 004: interim bridge on XenServer (iperf -P 10)",
                       profile=shown(path))
    tb.split = ("Fitted on the single-bridge rounds (tap and vif); the patch-port rounds and the interim-bridge "
                "cost (ratio patchport/singlebr) are held out.")
    tb.fit = fit_summary(res, path)
    sim_means = {}
    for c, v in cases:
        runs = rounds[f"{c}-{v}"].to_numpy(float)
        y, lo, hi = mean_ci(runs)
        vals = sims[f"{c}-{v}"].values("iperf", "throughput")
        m, slo, shi = mean_ci(vals)
        sim_means[(c, v)] = vals
        tb.rows.append(Comparison(tb.name, f"{c} {v}", "throughput", "Mbit/s", y, lo, hi, m, slo, shi,
                                  "in-sample" if c == "singlebr" else "held-out", "throughput", note="10 rounds"))
    for v in CASES:
        if ("patchport", v) not in sim_means:
            continue
        meas = rounds[f"patchport-{v}"].to_numpy(float).mean() / rounds[f"singlebr-{v}"].to_numpy(float).mean()
        # bootstrap CI of the measured ratio over the rounds (independent columns)
        rng = np.random.default_rng(4)
        a, b = rounds[f"patchport-{v}"].to_numpy(float), rounds[f"singlebr-{v}"].to_numpy(float)
        boots = [rng.choice(a, a.size).mean() / rng.choice(b, b.size).mean() for _ in range(2000)]
        sr = np.asarray(sim_means[("patchport", v)]) / np.asarray(sim_means[("singlebr", v)])
        m, slo, shi = mean_ci(sr)
        tb.rows.append(Comparison(tb.name, f"ratio {v}", "interim_ratio", "1", float(meas),
                                  float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975)),
                                  m, slo, shi, "held-out", "throughput",
                                  note="patchport / singlebr; published 98% (tap) and 99% (vif)"))
    fn = "seed004_throughput.png"
    rows = [r for r in tb.rows if r.metric == "throughput"]
    for grp, suffix in ((("tap",), "tap"), (("vif",), "vif")):
        sub = [r for r in rows if r.config.endswith(grp)]
        if sub:
            fn = f"seed004_throughput_{suffix}.png"
            plots.bars(settings.figures_dir / fn, f"Seed 004 {suffix}: iperf -P 10 throughput", "Mbit/s", sub)
            tb.figures.append((fn, f"{suffix}: 10 rounds (grey, 95% CI) vs simulated (blue in-sample, red held-out)"))
    tb.notes.append(
        "**What is predicted.** With `patch.translate` = 0 (a patch port is resolved inside one datapath flow, so "
        "an interim bridge adds no per-packet datapath work in OVS; seed 003 saw the same), the model predicts the "
        "interim bridge to cost nothing beyond sampling noise. The post measured -2% (tap) and -1% (vif), with "
        "round-to-round spreads of about +-5% (tap) and +-3% (vif) around those means, so the published cost is "
        "itself within the rounds' noise; the model neither explains nor contradicts it.")
    tb.notes.append(
        "**The vif case at 5.1 Gbit/s.** The default profile's Xen VIF delay is a mixture with a 1 ms tail on "
        "0.5% of packets; applied per packet to a FIFO ring it stalls the ring every ~200 packets and caps ten TCP "
        "streams at ~350 Mbit/s. The scenario replaces it by a single log-normal (stated in its [params]). With "
        "64 KB GSO skbs through netfront/netback (issue 15) the per-skb costs no longer set the rate; what does "
        "is the per-byte work of the sockets (`app.send_per_byte` = `app.recv_per_byte`, the copies into and "
        "out of the guests' sockets on their one vCPU each), fitted with the tap cost and the OVS per-packet "
        "cost on the two single-bridge rows: three parameters on two targets, so their CIs are unbounded and "
        f"the values ({Profile.load(path).time('app.send_per_byte') * 1e9:.2g} ns/byte) are one solution of "
        "several; the held-out patch-port rows are what test it.")
    return [tb]
