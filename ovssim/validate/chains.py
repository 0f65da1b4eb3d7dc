"""Seed 003 (chained OVS bridges on a 4-core desktop): ratios to the 1-bridge baseline.

The post publishes no absolute numbers, only findings (``seed_expectations.csv``
E003-*).  Split: ``calibration/chained_bridges_desktop.toml`` fits
``veth.cpu_per_packet`` to E003-02 (veth pairs, 2 bridges, 1 thread: ~0.90 of
the 1-bridge throughput; the tolerance 0.03 is *ours*, not the post's).  Held
out: patch ports flat up to 4 bridges (E003-01), veth with 4 threads below
0.90 (E003-03), and the CPU use of one thread (E003-04, 1.8 cores).
"""
from __future__ import annotations

import math

import numpy as np

from ..fit.calibrate import Param, Target
from . import plots
from .base import shown, Settings, TestbedResult, fit_summary, load_scenario_dict, variant
from .compare import Comparison, mean_ci
from .seed_data import SEED_DIR, expectations
from .simulate import Config, Runner


def _config(chain: int, link: str, threads: int) -> Config:
    base = load_scenario_dict("chained_bridges_desktop.toml")
    edits = {"bridge.br": {"chain": chain, "link": link}}
    if chain > 1:
        edits["vm.ns2"] = {"bridge": f"br-{chain}"}
    wl = [{**base["workload"][0], "P": threads}]
    return Config(f"{link}-{chain}-P{threads}", variant(base, workloads=wl, **edits),
                  {"chain": chain, "link": link, "threads": threads})


class RatioModel:
    """Throughput of each configuration over its 1-bridge baseline, as calibration metrics."""

    def __init__(self, inner, pairs):
        self.inner, self.pairs = inner, pairs

    def __call__(self, values):
        out = self.inner(values)
        res = {}
        for num, den in self.pairs:
            a = out[(f"{num}/iperf", "throughput")][0]
            b = out[(f"{den}/iperf", "throughput")][0]
            res[(num, "ratio")] = (a / b if b else float("nan"), 0.0)
        return res


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    from .simulate import MultiConfigModel
    e = expectations("seed003").set_index("expectation_id")
    csv = SEED_DIR / "seed_expectations.csv"
    path = settings.calibration_dir / "chained_bridges_desktop.toml"
    res = None
    if settings.fit:
        from ..fit.calibrate import calibrate
        from ..fit.profile_writer import build_profile, write_profile
        cfgs = [_config(1, "patch", 1), _config(2, "veth", 1)]
        # the socket copies per byte (issue 15): done once per byte whatever the chain, they dilute the
        # second bridge's per-skb pass; app.recv_per_byte is the same memcpy, tied to it
        param = Param.parse("app.send_per_byte=0.01ns..20ns")
        inner = MultiConfigModel(runner, cfgs, [param], "default", reps=settings.fit_reps, seed=4242,
                                 tied={"app.recv_per_byte": "app.send_per_byte"})
        model = RatioModel(inner, [("veth-2-P1", "patch-1-P1")])
        y, tol = float(e.loc["E003-02", "value"]), float(e.loc["E003-02", "tolerance"])
        res = calibrate(model, [param], [Target("veth-2-P1", "ratio", y, tol / 1.96, "1")],
                        x0={param.label: 1e-9}, max_evals=14)
        doc = build_profile(
            name="chained_bridges_desktop", params=inner.overrides(res.values), data_files=[csv],
            command=settings.command,
            method="simulation-based calibration (ovssim.fit.calibrate) of app.send_per_byte (app.recv_per_byte "
                   "tied to it) to E003-02 "
                   "(veth, 2 bridges, 1 thread: throughput ratio 0.90 to 1 bridge; tolerance 0.03 is ours, "
                   "taken as the 95% half-width)",
            description="Seed 003 desktop: the socket copies per byte fitted to the -10% at 2 bridges; "
                        "everything else default",
            fit={"objective": res.objective, "evaluations": res.evaluations,
                 "targets": [{"target": "E003-02 ratio", "simulated": s, "measured": yy, "sigma": sg}
                             for (s, yy, sg) in res.fitted.values()]})
        doc["profile"]["base"] = "default"
        write_profile(path, doc)
    cases = [(1, "patch", 1), (2, "patch", 1), (4, "patch", 1), (2, "veth", 1), (1, "patch", 4), (2, "veth", 4)]
    if settings.fast:
        cases = [(1, "patch", 1), (2, "veth", 1)]
    cfgs = [_config(*c) for c in cases]
    sims = runner.run(cfgs, str(path), reps=settings.reps, seed=303)
    tb = TestbedResult("chained_bridges_desktop", "Seed 003: chained OVS bridges on a 4-core desktop",
                       profile=shown(path))
    tb.split = ("Fitted: `app.send_per_byte` (`app.recv_per_byte` tied to it) on E003-02 (veth, 2 bridges, 1 thread: 0.90 of 1 bridge). Held out: "
                "E003-01 (patch ports flat), E003-03 (veth with 4 threads below 0.90), E003-04 (1.8 cores busy "
                "with one thread). The post gives no absolute numbers; its tolerances are ours.")
    tb.fit = fit_summary(res, path)

    def thr(label):
        return sims[label].values("iperf", "throughput")
    checks = [("patch-2-P1", "patch-1-P1", "E003-01", "held-out"), ("patch-4-P1", "patch-1-P1", "E003-01", "held-out"),
              ("veth-2-P1", "patch-1-P1", "E003-02", "in-sample"), ("veth-2-P4", "patch-1-P4", "E003-03", "held-out")]
    for num, den, eid, split in checks:
        if num not in sims or den not in sims:
            continue
        r = np.asarray(thr(num)) / np.asarray(thr(den))
        m, lo, hi = mean_ci(r)
        y = float(e.loc[eid, "value"])
        tolv = e.loc[eid, "tolerance"]
        band = (y - tolv, y + tolv) if isinstance(tolv, float) and math.isfinite(tolv) else (float("nan"), float("nan"))
        tb.rows.append(Comparison(tb.name, f"{num} / {den}", "throughput_ratio", "1", y, band[0], band[1], m, lo, hi,
                                  split, "throughput" if e.loc[eid, "bound"] == "ratio_approx" else "",
                                  band="our tolerance", note=f"{eid}: {e.loc[eid, 'bound']} {y:g}"))
    if "patch-1-P1" in sims:
        cpu = sims["patch-1-P1"].values("system", "cpu_util.desktop") * 4 / 100
        m, lo, hi = mean_ci(cpu)
        tb.rows.append(Comparison(tb.name, "patch-1-P1 cores busy", "cpu_cores", "cores", 1.8, 1.6, 2.0, m, lo, hi,
                                  "held-out", "", band="our tolerance", note="E003-04: 1.0 sender + 0.8 receiver"))
    absolute = ", ".join(f"{lab} {np.mean(thr(lab)):.0f}" for lab in sims)
    tb.notes.append(f"Simulated absolute throughputs (Mbit/s; the post has none to compare): {absolute}.")
    tb.notes.append(
        "**The veth ratio and the socket copies.** With veth pairs each bridge is a separate datapath pass "
        "(and a separate flow lookup), while patch ports are resolved inside one flow.  With offloads on, one "
        "64 KB GSO skb makes each pass, so a pass costs per skb while the copies into and out of the sockets "
        "(`tcp_sendmsg`, `tcp_recvmsg`) cost per byte, once whatever the chain: the more of a flow's core "
        "goes to copying, the less a second pass takes off.  Without the per-byte copies (the default "
        "profile) the second pass alone took the ratio to 0.66 and no veth cost could raise it; the fitted "
        "copy cost is what brings the one-thread ratio to 0.90, and the receiver's copy runs on a second core "
        "(E003-04's 0.8 receiver core; 0.94 cores were simulated without it).  The fitted 2.3 ns/byte is some "
        "10x a bare memcpy: it stands in for all per-byte work of the two sockets (copies, page allocation, "
        "cache misses) relative to the model's per-pass costs, which are the default profile's, not this "
        "desktop's.  E003-03 (4 threads below 0.90) now misses: with the copies every thread's core is "
        "diluted alike, and what the post saw with more threads than cores -- contention for the cores, "
        "scheduling -- is not in the model.")
    tb.notes.append("E003-03's bound is one-sided (ratio < 0.90 with more threads than cores); the table's "
                    "'meets' column has no target for it -- compare the simulated ratio with 0.90 by eye.")
    rows = [r for r in tb.rows if r.metric == "throughput_ratio"]
    plots.bars(settings.figures_dir / "seed003_ratios.png", "Seed 003: throughput ratio to 1 bridge", "ratio", rows)
    tb.figures.append(("seed003_ratios.png", "Seed 003 expectations (grey, our tolerance) vs simulated ratios"))
    return [tb]
