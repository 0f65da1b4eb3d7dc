"""Across states (issue 17): a profile fitted on one day's data predicting the other day's, and fitted on
some bridge configurations predicting the rest.

The namespace testbed was measured in two machine states (:data:`ovssim.validate.local.STATES`): quiet
(``data/local/2026-11-24/local-bridges``; ``calibration/local_netns*.toml``, fitted by the ``local``
section) and busy (``data/local/local-bridges``, 22 Nov; ``calibration/local_netns_busy*.toml``, fitted
here).  Each profile predicts every unshaped configuration (OVS and Linux bridge, chains of 1, 2 and 4
bridges) of both days.  On the other day it is moved to that day's state alone: CPU costs scaled by the
ratio of speed indices (:meth:`ovssim.profile.Profile.scaled`) and the busy share the netdev thread's
wake-ups find (``[state] cpu_busy``).  Nothing is refitted for the other day.

Split: the 1-bridge runs of the profile's own day are in-sample (what it was fitted on); its own day's
chains are held out (other bridge configurations); every row of the other day is held out (other state).
"""
from __future__ import annotations

import numpy as np

from ..profile import Profile
from .base import Settings, TestbedResult, shown
from .compare import Comparison, ks_distance, mean_ci
from .local import BUSY, FIT_KEYS, METRICS, QUIET, STATES, _config, fit_state, load_measured
from .simulate import Runner

WORKLOADS = ["tcp", "rr", "ping"]


def _short(which) -> str:
    return which[3].split(",")[0]            # "quiet" / "busy"


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    from ..collect.store import load_samples
    days = {}
    for which in STATES:
        if which is BUSY:
            df, state, _, (path, _) = fit_state(runner, settings, BUSY)
        else:                                  # the local section fits the quiet profiles
            df, path = load_measured(which[0]), settings.calibration_dir / f"{which[2]}.toml"
            state = Profile.load(str(path)).state
        samples = load_samples(which[0], "rtt")
        days[which] = (df, state, path, samples[samples["workload"] == "ping"])
    tb = TestbedResult("across_states", "Across states: one day's profile predicting the other day (this machine)",
                       profile=", ".join(shown(days[w][2]) for w in STATES), section="states")
    tb.split = ("Each day's profile is fitted on its own 1-bridge unshaped runs (OVS and Linux bridge: TCP "
                "throughput, TCP_RR RTT, the Linux bridge's ping, then the OVS thread's wake-up after idling on the "
                "OVS ping) and predicts, without refitting, its own day's chains (held out: other bridge "
                "configurations) and every configuration of the other day (held out: other state), moved to that "
                "day's state by its speed index (CPU costs) and busy share (the netdev thread's wake-ups). "
                "Neither dataset has a collector machine state (both predate it): the speed index is estimated "
                "from the Linux bridge's 1-bridge TCP throughput, the busy share is the ping runs' cpu_busy.")
    states, medians = {}, {}
    for prof_day in STATES:
        base = Profile.load(str(days[prof_day][2]))
        for data_day in STATES:
            df, st, _, samples = days[data_day]
            prof = base if data_day is prof_day else base.scaled(st["speed_index"], cpu_busy=st["cpu_busy"])
            states[(_short(prof_day), _short(data_day))] = (base.state.get("speed_index"), st)
            keys = (df[(df["qdisc"] == "none") & df["workload"].isin(WORKLOADS)]
                    .groupby(["bridge", "chain", "link", "qdisc"])["workload"].unique())
            cfgs = [_config(*k, [w for w in wls if w in WORKLOADS]) for k, wls in keys.items()]
            if settings.fast:
                cfgs = [c for c in cfgs if c.label in ("ovs-1", "linux-1")]
            sims = runner.run(cfgs, prof, reps=settings.reps, seed=2026, sample_keys={"ping:rtt"})
            tag = f"{_short(prof_day)}->{_short(data_day)}"
            for c in cfgs:
                k = (c.facts["bridge"], c.facts["chain"], c.facts["link"], c.facts["qdisc"])
                sel = df[(df["bridge"] == k[0]) & (df["chain"] == k[1]) & (df["link"] == k[2])
                         & (df["qdisc"] == k[3])]
                split = "in-sample" if data_day is prof_day and k in FIT_KEYS else "held-out"
                for wl, mm, f, sm, unit, metric in METRICS:
                    if wl not in WORKLOADS:
                        continue
                    runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * f
                    if runs.size == 0:
                        continue
                    y, lo, hi = mean_ci(runs)
                    m, slo, shi = mean_ci(sims[c.label].values(wl, sm))
                    tb.rows.append(Comparison(tb.name, f"{tag} {c.label} {wl}", metric, unit, y, lo, hi, m, slo,
                                              shi, split, metric, note=f"{runs.size} runs"))
                ps = samples[(samples["bridge"] == k[0]) & (samples["chain"] == k[1]) & (samples["link"] == k[2])
                             & (samples["qdisc"] == k[3])]["value"].to_numpy(float) * 1e3
                sim = np.asarray(sims[c.label].samples.get("ping:rtt", []), float) * 1e3
                if tag == "quiet->quiet" and ps.size and sim.size:
                    medians[c.label] = (float(np.median(ps)), float(np.median(sim)))
                if ps.size and sim.size:
                    tb.rows.append(Comparison(tb.name, f"{tag} {c.label} ping", "ks_rtt", "KS", float("nan"),
                                              float("nan"), float("nan"), ks_distance(ps, sim), float("nan"),
                                              float("nan"), split, "ks", band="-",
                                              note=f"{ps.size} measured / {sim.size} simulated RTTs"))
    _notes(tb, states, medians)
    return [tb]


# the table (issue 17): the shipped profile of 25 Nov (fitted on the busy day) on the quiet data
BEFORE = {"ovs-1 rr": "381 us", "ovs-1": "1.30 ms mean (0.37 without the stall)", "ovs-4-patch": "1.30 ms mean",
          "ovs-4-veth": "2.34 ms mean"}


def _notes(tb: TestbedResult, states: dict, medians: dict) -> None:
    rr = next((r for r in tb.rows if r.config == "quiet->quiet ovs-1 rr"), None)
    if rr is not None and medians:
        parts = [f"qperf tcp_lat RTT, 1 OVS bridge: measured {rr.measured * 1e3:.0f} us mean over runs (median "
                 f"129 us), simulated {rr.simulated * 1e3:.0f} us (before: {BEFORE['ovs-1 rr']})"]
        for lab, what in (("ovs-1", "1 OVS bridge"), ("ovs-4-patch", "4 patch-chained OVS bridges"),
                          ("ovs-4-veth", "4 veth-chained OVS bridges")):
            if lab in medians:
                m, s = medians[lab]
                parts.append(f"ping median through {what}: measured {m:.2f} ms, simulated {s:.2f} ms "
                             f"(before: {BEFORE[lab]})")
        tb.notes.append("**Issue 17's table, with the refitted quiet profile** (`calibration/local_netns.toml`): "
                        + "; ".join(parts) + ".")
    tb.notes.append(
        "**Why the other day is missed.** (1) *Latency does not scale like CPU work.* On the busy day the Linux "
        "bridge's TCP_RR was faster (0.060 ms mean) than on the quiet day (0.084 ms) although its TCP throughput "
        "was half: a quiet guest's idle vCPUs are woken for every message (what the quiet fit puts in the "
        "receive stack's latency and the application's wake-up), a busy guest's are running. Scaling every CPU "
        "cost by the speed index (x1.98, x0.504) moves these latencies the wrong way. (2) *The tick stall is "
        "seen only on a busy machine*: at busy share 0.02 the quiet data have 0-0.2 % stalled pings, so the "
        "quiet profile's stall probability stays at the default 0 and the busy day's pings (18-28 % one tick "
        "late) are under-predicted by ~70 %; the busy profile moved to the quiet day predicts no stall, as "
        "measured, but lacks the idle core's wake-up (`ovs.idle_wake`, which busy data cannot show). "
        "(3) *Throughput*: the speed index is estimated from the Linux bridge's 1-bridge TCP throughput itself, "
        "yet scaling the CPU costs by it moves the simulated throughput by about x0.62 / x1.63 instead of x0.50 / "
        "x1.98: part of the simulated path is not in `CPU_COSTS` (segmentation and qdisc costs, fixed latencies). "
        "(4) *Other bridge configurations of the same day*: veth chains' TCP throughput is under-predicted "
        "(the veth crossing's CPU cost is the default profile's, not fitted; the batching section's per-byte "
        "costs are not in these profiles); pings through patch-chained bridges are under-predicted on the quiet "
        "day (measured 0.37 / 0.40 ms for 2 / 4 bridges against 0.24 for one while TCP_RR barely moves): the idle "
        "wake-up grows with the chain in the data, while the model's one thread wakes once per chain.")

    for (p, d), (own, st) in states.items():
        if p != d:
            tb.notes.append(f"**{p} profile -> {d} day**: CPU costs x{own / st['speed_index']:.3g} (speed index "
                            f"{own} -> {st['speed_index']}), busy share {st['cpu_busy']}.")
    counts = []
    for tag in sorted({r.config.split()[0] for r in tb.rows}):
        rows = [r for r in tb.rows if r.config.startswith(tag + " ") and r.split == "held-out"]
        per = {m: [r for r in rows if r.metric == m] for m in ("throughput", "rtt", "ks_rtt")}
        if rows:
            counts.append(f"{tag}: " + ", ".join(f"{m} {sum(1 for r in v if r.meets)}/{len(v)}"
                                                for m, v in per.items() if v))
    tb.notes.append("**Held-out rows meeting their target** (throughput 3 %, mean RTT 10 %, KS <= 0.1): "
                    + "; ".join(counts) + ".")
