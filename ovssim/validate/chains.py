"""Seed 003 (chained OVS bridges on a 4-core desktop): ratios to the 1-bridge baseline.

The post publishes no absolute numbers, only findings (``seed_expectations.csv``
E003-*).  Split: ``calibration/chained_bridges_desktop.toml`` fits
``veth.cpu_per_packet`` to E003-02 (veth pairs, 2 bridges, 1 thread: ~0.90 of
the 1-bridge throughput; the tolerance 0.03 is *ours*, not the post's).  Held
out: patch ports flat up to 4 bridges (E003-01), veth with 4 threads below
0.90 (E003-03), and the CPU use of one thread (E003-04, 1.8 cores).
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..fit.calibrate import Param, Target
from ..profile import Profile
from . import plots
from .base import ROOT, shown, Settings, TestbedResult, fit_summary, load_scenario_dict, variant
from .compare import Comparison, mean_ci
from .seed_data import SEED_DIR, expectations
from .simulate import Config, Runner


def _config(chain: int, link: str, threads: int) -> Config:
    base = load_scenario_dict("chained_bridges_desktop.toml")
    # the post's claims about threads vs cores need the tools' threads scheduled on the 4 cores (ovssim.cpu);
    # with one thread per namespace nothing contends and results equal the work-conserving pool's
    edits = {"bridge.br": {"chain": chain, "link": link}, "host.desktop": {"schedule_threads": True}}
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
    cases = [(1, "patch", 1), (2, "patch", 1), (4, "patch", 1), (2, "veth", 1), (1, "patch", 4), (2, "veth", 4),
             (1, "patch", 8), (2, "veth", 8)]
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
              ("veth-2-P1", "patch-1-P1", "E003-02", "in-sample"), ("veth-2-P4", "patch-1-P4", "E003-03", "held-out"),
              ("veth-2-P8", "patch-1-P8", "E003-03", "held-out")]
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
    for lab in ("patch-1-P4", "veth-2-P4", "patch-1-P8", "veth-2-P8"):
        if lab not in sims:
            continue
        busiest = sims[lab].values("system", "cpu_util.desktop")      # mean over the 4 cores, per replication
        m, lo, hi = mean_ci(busiest)
        y = float(e.loc["E003-05", "value"])
        tb.rows.append(Comparison(tb.name, f"{lab} cores busy (mean of 4)", "cpu_utilisation", "%", 100.0, y, 100.0,
                                  m, lo, hi, "held-out", "", band="our allowance",
                                  note="E003-05: all four cores at 100 % with >= 4 threads (bound >= 95 %)"))
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
        "(E003-04's 0.8 receiver core; 0.94 cores were simulated without it).  The fitted "
        f"{Profile.load(path).time('app.send_per_byte') * 1e9:.2g} ns/byte is some "
        "10x a bare memcpy: it stands in for all per-byte work of the two sockets (copies, page allocation, "
        "cache misses) relative to the model's per-pass costs, which are the default profile's, not this "
        "desktop's.  E003-03 (4 threads below 0.90) now misses: with the copies every thread's core is "
        "diluted alike.")
    tb.notes.append(
        "**Threads vs cores (issue 16).** The desktop schedules the tools' threads (`schedule_threads`, "
        "`ovssim.cpu`: EEVDF slices, context switches; softirq handed to ksoftirqd after 2 ms, or after one "
        "`net_rx_action` round of 300 packets when a thread waits for the core -- `__do_softirq`'s "
        "`!need_resched()` test). More threads than cores stop helping, but the veth chain does not collapse "
        "as the post saw, and the cores do not reach 100 %. The mechanism the post's kernel offers -- veth "
        "backlogs handed to a starved ksoftirqd until `netdev_max_backlog` (1000) drops -- never starts here: "
        "each sender carries its skbs through the chain in its own context (run to completion), so at most "
        "4 work items ever wait on a core and the longest softirq wait is 0.71 ms (veth-2-P8, 0.1 s run), "
        "far from 300 packets or 2 ms; and with offloads on, 1000 backlogged 64 KB GSO skbs would be 64 MB, "
        "more than the flows' windows can put in flight. What made the post's veth chain collapse is not "
        "in the model.")
    tb.notes.append("E003-03's bound is one-sided (ratio < 0.90 with more threads than cores); the table's "
                    "'meets' column has no target for it -- compare the simulated ratio with 0.90 by eye.")
    rows = [r for r in tb.rows if r.metric == "throughput_ratio"]
    plots.bars(settings.figures_dir / "seed003_ratios.png", "Seed 003: throughput ratio to 1 bridge", "ratio", rows)
    tb.figures.append(("seed003_ratios.png", "Seed 003 expectations (grey, our tolerance) vs simulated ratios"))
    return [tb] + ([] if settings.fast else [threads_run(runner, settings)])


# This machine's threads-vs-cores campaign (issue 16) in its two machine states, each simulated with the
# profile fitted in that state (validate/local.py): (data, profile, title)
# 25 Nov's "quiet" campaign ran while other jobs loaded the machine (load average 1.7-3.5, cores 80-100 %
# busy); 27 Nov's ran on an idle one (load 0.7-1.2 with the runs themselves): that one is "quiet".
THREADS_STATES = ((ROOT / "data" / "local" / "2026-11-27-quiet" / "local-threads", "local_netns", "quiet"),
                  (ROOT / "data" / "local" / "2026-11-25-quiet" / "local-threads", "local_netns", "loaded"),
                  (ROOT / "data" / "local" / "local-threads", "local_netns_busy", "busy"))


def _threads_measured(data):
    """The campaign's ok runs with each run's core list (``cpus``: None = unpinned) from runs.jsonl."""
    from ..collect.store import read_journal
    from .local import load_measured
    df = load_measured(data)
    # as the journal holds it: taskset's list is a string ("0"), which a table reader would make a number
    cpus = {r["run_id"]: (None if r.get("cpus") is None else str(r["cpus"]))
            for r in read_journal(data / "runs.jsonl")}
    df["cpus"] = df["run_id"].map(cpus)
    return df


def _threads_config(chain: int, link: str, streams: int, cc: str, cpus: str | None = None) -> Config:
    """iperf 2 -P ``streams`` (a thread per stream) through the OVS netdev chain, the tools' threads
    scheduled on this machine's 2 cores (ovssim.cpu); ``cpus``: client and server under ``taskset -c``."""
    from .local import _config as local_config
    c = local_config("ovs", chain, link, "none", ["tcp"])
    for w in c.scenario["workload"]:
        # iperf 2 sets -Z (TCP_CONGESTION) before connect: the stream starts under it
        w.update({"P": streams, "C": cc, "cc_after_connect": False})
        if cpus is not None:
            w["cpus"] = cpus
    for h in c.scenario["host"]:
        h["schedule_threads"] = True
    c.label += f"-P{streams}" + ("" if cpus is None else f" taskset -c {cpus}")
    c.facts["streams"] = streams
    c.facts["cpus"] = cpus
    return c


def threads_run(runner: Runner, settings: Settings) -> TestbedResult:
    """Held-out rows: throughput and core use of iperf 2 -P 1..8 through OVS chains on this machine."""
    tb = TestbedResult("local_threads", "Issue 16: iperf 2 threads vs this machine's 2 cores, OVS netdev chains")
    tb.split = ("Nothing fitted: every row is held out. Each state's runs are simulated with the profile fitted "
                "in that state (`local_netns` quiet, `local_netns_busy` busy; validate/local.py), the tools' "
                "threads scheduled on the 2 cores; the pinned half of each campaign (client and server under "
                "`taskset -c 0`) with the workload's `cpus` key.")
    for data, prof, title in THREADS_STATES:
        if not (data / "runs.jsonl").is_file():
            tb.notes.append(f"No {title} campaign at {data.relative_to(ROOT)}: its rows are missing.")
            continue
        df = _threads_measured(data)
        meta = json.loads((data / "metadata.json").read_text())
        cc = meta["machine"]["tcp_sysctls"].get("net.ipv4.tcp_congestion_control", "cubic")
        cases = sorted({(int(r.chain), str(r.link), int(r.streams), r.cpus if isinstance(r.cpus, str) else None)
                        for r in df.itertuples()},
                       key=lambda k: (k[3] is not None, k[3] or "", k[:3]))
        cfgs = {case: _threads_config(*case[:3], cc, case[3]) for case in cases}
        sims = runner.run(list(cfgs.values()), prof, reps=settings.reps, seed=1616)
        for case, c in cfgs.items():
            chain, link, streams, cpus = case
            sel = df[(df["chain"] == chain) & (df["link"] == link) & (df["streams"] == streams)
                     & (df["cpus"].isna() if cpus is None else df["cpus"] == cpus)]
            sim = sims[c.label]
            for mm, fac, wl, sm, unit, metric in (("throughput", 1e-6, "tcp", "throughput", "Mbit/s", "throughput"),
                                                  ("cpu_busy", 100.0, "system", "cpu_util.local", "%",
                                                   "cpu_utilisation")):
                if mm == "cpu_busy" and title != "quiet":
                    continue          # on a loaded machine the cores' use is mostly the other jobs'
                runs = sel[sel["metric"] == mm]["value"].to_numpy(float) * fac
                if runs.size == 0:
                    continue
                y, lo, hi = mean_ci(runs)
                m, slo, shi = mean_ci(sim.values(wl, sm))
                tb.rows.append(Comparison(tb.name, f"{title}: {c.label}", metric, unit, y, lo, hi, m, slo, shi,
                                          "held-out", "cpu_throughput" if metric == "throughput" else "",
                                          note=f"{runs.size} runs, iperf 2 {cc}"))

    def mean_of(state, metric, chains, streams, sim=False):
        vals = [(r.simulated if sim else r.measured) for r in tb.rows if r.metric == metric
                and r.config.startswith(f"{state}: ") and any(f"ovs-{c}-" in r.config for c in chains)
                and any(r.config.endswith(f"-P{p}") for p in streams)]
        return sum(vals) / len(vals) if vals else float("nan")
    if any(r.config.startswith("quiet: ") for r in tb.rows):
        few, many = (1, 2), (4, 8)
        patch = ('2-patch', '4-patch')
        busy_m = mean_of('quiet', 'cpu_utilisation', ('1', '2', '4'), few + many)
        busy_s = mean_of('quiet', 'cpu_utilisation', ('1', '2', '4'), few + many, True)
        tb.notes.append(
            "**More threads than cores.** On an idle machine (27 Nov) the patch chains (2 and 4 bridges) carry "
            f"{mean_of('quiet', 'throughput', patch, few):.0f} Mbit/s at -P 1-2 and "
            f"{mean_of('quiet', 'throughput', patch, many):.0f} at -P 4-8 (simulated "
            f"{mean_of('quiet', 'throughput', patch, few, True):.0f} and "
            f"{mean_of('quiet', 'throughput', patch, many, True):.0f}), and the 4-bridge veth chain "
            f"{mean_of('quiet', 'throughput', ('4-veth',), few):.0f} and "
            f"{mean_of('quiet', 'throughput', ('4-veth',), many):.0f} (simulated "
            f"{mean_of('quiet', 'throughput', ('4-veth',), few, True):.0f} and "
            f"{mean_of('quiet', 'throughput', ('4-veth',), many, True):.0f}); the cores were "
            f"{busy_m:.0f} % busy on average over the unpinned runs, {busy_s:.0f} % simulated. The collapse "
            "seed 003 describes, and 25 Nov's campaign showed (patch chains "
            f"{mean_of('loaded', 'throughput', patch, few):.0f} -> "
            f"{mean_of('loaded', 'throughput', patch, many):.0f} Mbit/s), came with other jobs on the "
            "cores: that campaign ran at load average 1.7-3.5 with the cores 80-100 % busy, so it is shown "
            "here as 'loaded' (throughput only). Busy state: the machine's other jobs kept both cores at "
            "~100 %, so only throughput is compared.")
    pin_note = _pinned_note(tb)
    if pin_note:
        tb.notes.append(pin_note)
    return tb


def _pinned_note(tb: TestbedResult) -> str:
    """Pinned (``taskset -c 0``) against unpinned runs, per state: the mean ratio of their throughputs over
    the configurations that have both, measured and simulated."""
    parts = []
    for state in ("quiet", "loaded", "busy"):
        pairs = []
        rows = {r.config: r for r in tb.rows if r.metric == "throughput" and r.config.startswith(f"{state}: ")}
        for cfg, r in rows.items():
            if " taskset -c " in cfg:
                base = rows.get(cfg.split(" taskset -c ")[0])
                if base is not None and base.measured and base.simulated:
                    pairs.append((r.measured / base.measured, r.simulated / base.simulated))
        if pairs:
            m = sum(p[0] for p in pairs) / len(pairs)
            s = sum(p[1] for p in pairs) / len(pairs)
            parts.append(f"{state} {m:.2f} measured, {s:.2f} simulated ({len(pairs)} configurations)")
    if not parts:
        return ""
    return ("**Pinned against unpinned** (client and server under `taskset -c 0`, the workload's `cpus`; the "
            "netdev datapath's thread free to run on the other core): mean throughput ratio pinned / unpinned, "
            + "; ".join(parts) + ".")
