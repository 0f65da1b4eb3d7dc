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
    states = {}
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
                if ps.size and sim.size:
                    tb.rows.append(Comparison(tb.name, f"{tag} {c.label} ping", "ks_rtt", "KS", float("nan"),
                                              float("nan"), float("nan"), ks_distance(ps, sim), float("nan"),
                                              float("nan"), split, "ks", band="-",
                                              note=f"{ps.size} measured / {sim.size} simulated RTTs"))
    _notes(tb, states)
    return [tb]


def _notes(tb: TestbedResult, states: dict) -> None:
    for (p, d), (own, st) in states.items():
        if p != d:
            tb.notes.append(f"**{p} profile -> {d} day**: CPU costs x{own / st['speed_index']:.3g} (speed index "
                            f"{own} -> {st['speed_index']}), busy share {st['cpu_busy']}.")
    for tag in sorted({r.config.split()[0] for r in tb.rows}):
        rows = [r for r in tb.rows if r.config.startswith(tag + " ") and r.split == "held-out"]
        meets = sum(1 for r in rows if r.meets)
        errs = [f"{r.config.split(' ', 1)[1]} {r.measured:.3g} vs {r.simulated:.3g}" for r in rows
                if r.metric != "ks_rtt"]
        if errs:
            tb.notes.append(f"**{tag}** (measured vs simulated, held out; {meets}/{len(rows)} rows meet their target)"
                            f"): " + "; ".join(errs) + ".")
