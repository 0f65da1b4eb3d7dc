"""Across states (issue 17): a profile fitted on one day's data predicting the other day's, and fitted on
some bridge configurations predicting the rest.

Two pairs of one namespace testbed in two machine states (:data:`PAIRS`): quiet and busy 25 Nov (the same
campaign, ``local-offloads``, collected twice with the collector's measured speed index before and after;
``calibration/local_netns_quiet25*.toml``, ``local_netns_busy25*.toml``, fitted here) and quiet 24 / busy 22 Nov
(``local-bridges``, no collector state; ``calibration/local_netns*.toml`` fitted by the ``local`` section,
``local_netns_busy*.toml`` here).  Each profile predicts every unshaped configuration of its own day and of the
other day of its pair.  On the other day it is moved to that day's state alone: CPU costs by the ratio of speed
indices, wake-up latencies by the ratio of latency indices (:meth:`ovssim.profile.Profile.scaled`), and the
busy share the wake-ups find (``[state] cpu_busy``).  Nothing is refitted for the other day.

Split: the 1-bridge runs of the profile's own day are in-sample (what it was fitted on); its own day's chains
are held out (other bridge configurations); every row of the other day is held out (other state) except the
rows its state indices were estimated from (:func:`ovssim.validate.local.measured_state`).
"""
from __future__ import annotations

import numpy as np

from ..profile import Profile
from .base import Settings, TestbedResult, shown
from .compare import Comparison, ks_distance, mean_ci
from .local import (BUSY, BUSY25, METRICS, QUIET, QUIET25, _config, fit_state, fitted_row, load_measured,
                    measured_state, without_offloads)
from .simulate import Runner

WORKLOADS = ["tcp", "rr", "ping"]
# a day's speed index, when estimated (local.measured_state), comes from its Linux bridge's 1-bridge TCP
# throughput, its latency index (always estimated) from that bridge's ping: a profile moved to that day by them
# has seen those rows, which are then not held out
SPEED_INDEX_ROW = (("linux", 1, "-", "none"), "tcp")
LATENCY_INDEX_ROW = (("linux", 1, "-", "none"), "ping")
# (quiet, busy) pairs of the same testbed: measured states first (25 Nov), then the older estimated ones
PAIRS = ((QUIET25, BUSY25), (QUIET, BUSY))


def _short(which) -> str:
    day = which[3].split(", ")
    return day[0] + day[1].split()[0]           # "quiet25", "busy22"


def _day(runner: Runner, settings: Settings, which):
    """(results, state, profile path, ping samples) of one dataset; the local section fits the 24-Nov one."""
    from ..collect.store import load_samples
    if which is QUIET:
        df = without_offloads(load_measured(which[0]))
        path = settings.calibration_dir / f"{which[2]}.toml"
        state = measured_state(df, which[0])
    else:
        df, state, _, (path, _) = fit_state(runner, settings, which)
    samples = without_offloads(load_samples(which[0], "rtt"))
    return df, state, path, samples[samples["workload"] == "ping"]


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    pairs = [p for p in PAIRS if all((w[0] / "results.csv.gz").is_file() for w in p)]
    days = {w: _day(runner, settings, w) for pair in pairs for w in pair}
    tb = TestbedResult("across_states", "Across states: one day's profile predicting the other day (this machine)",
                       profile=", ".join(shown(days[w][2]) for w in days), section="states")
    tb.split = ("Each day's profile is fitted on its own 1-bridge unshaped runs (OVS and Linux bridge, transmit "
                "offloads off: TCP throughput, TCP_RR RTT, the Linux bridge's ping, then the OVS thread's wake-up "
                "after idling on the OVS ping) and predicts, without refitting, its own day's chains (held out: "
                "other bridge configurations) and every configuration of the other day of its pair (held out: "
                "other state), moved to that day's state alone: its speed index (CPU costs), its latency index "
                "(wake-up latencies: the receive stack's, the reader's, the idle netdev thread's) and its busy "
                "share (which wake-ups the thread and the reader pay). Pairs: quiet/busy 25 Nov (the same campaign, local-offloads, "
                "with the collector's measured speed index before and after each) and quiet 24 / busy 22 Nov "
                "(local-bridges, no collector state: the index estimated on the collector's scale from the Linux "
                "bridge's 1-bridge TCP throughput, so that row of the other day is in-sample too). No campaign "
                "measured a latency index yet: it is estimated for every day from the Linux bridge's 1-bridge "
                "ping, so that row of the other day is in-sample.")
    states, medians = {}, {}
    for pair in pairs:
        for prof_day in pair:
            base = Profile.load(str(days[prof_day][2]))
            for data_day in pair:
                df, st, _, samples = days[data_day]
                prof = base if data_day is prof_day else base.scaled(st["speed_index"], cpu_busy=st["cpu_busy"],
                                                                     latency_index=st["latency_index"])
                tag = f"{_short(prof_day)}->{_short(data_day)}"
                states[tag] = (base.state, st)
                _compare(tb, runner, settings, tag, prof, data_day is prof_day, df, st, samples, medians)
    _notes(tb, states, medians)
    return [tb]


def _compare(tb, runner, settings, tag, prof, own_day, df, st, samples, medians) -> None:
    keys = (df[(df["qdisc"] == "none") & df["workload"].isin(WORKLOADS)]
            .groupby(["bridge", "chain", "link", "qdisc"])["workload"].unique())
    cfgs = [_config(*k, [w for w in wls if w in WORKLOADS]) for k, wls in keys.items()]
    if settings.fast:
        cfgs = [c for c in cfgs if c.label in ("ovs-1", "linux-1")]
    sims = runner.run(cfgs, prof, reps=settings.reps, seed=2026, sample_keys={"ping:rtt"})
    estimated = "speed_index estimated" in str(st.get("note", ""))
    for c in cfgs:
        k = (c.facts["bridge"], c.facts["chain"], c.facts["link"], c.facts["qdisc"])
        sel = df[(df["bridge"] == k[0]) & (df["chain"] == k[1]) & (df["link"] == k[2]) & (df["qdisc"] == k[3])]
        for wl, mm, f, sm, unit, metric in METRICS:
            if wl not in WORKLOADS:
                continue
            split = "in-sample" if own_day and fitted_row(k, wl) else "held-out"
            seen = (k, wl) == LATENCY_INDEX_ROW or (estimated and (k, wl) == SPEED_INDEX_ROW)
            row_split = "in-sample" if seen and not own_day else split
            runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * f
            if runs.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(sims[c.label].values(wl, sm))
            tb.rows.append(Comparison(tb.name, f"{tag} {c.label} {wl}", metric, unit, y, lo, hi, m, slo,
                                      shi, row_split, metric, note=f"{runs.size} runs"))
        ps = samples[(samples["bridge"] == k[0]) & (samples["chain"] == k[1]) & (samples["link"] == k[2])
                     & (samples["qdisc"] == k[3])]["value"].to_numpy(float) * 1e3
        sim = np.asarray(sims[c.label].samples.get("ping:rtt", []), float) * 1e3
        if own_day and ps.size and sim.size:
            medians[(tag, c.label)] = (float(np.median(ps)), float(np.median(sim)))
        if ps.size and sim.size:
            ks_split = "in-sample" if (k, "ping") == LATENCY_INDEX_ROW and not own_day else split
            tb.rows.append(Comparison(tb.name, f"{tag} {c.label} ping", "ks_rtt", "KS", float("nan"),
                                      float("nan"), float("nan"), ks_distance(ps, sim), float("nan"),
                                      float("nan"), ks_split, "ks", band="-",
                                      note=f"{ps.size} measured / {sim.size} simulated RTTs"))


# the table (issue 17): the shipped profile of 25 Nov (fitted on the busy day) on the quiet data
BEFORE = {"ovs-1 rr": "381 us", "ovs-1": "1.30 ms mean (0.37 without the stall)", "ovs-4-patch": "1.30 ms mean",
          "ovs-4-veth": "2.34 ms mean"}


def _notes(tb: TestbedResult, states: dict, medians: dict) -> None:
    own = "quiet24->quiet24"
    rr = next((r for r in tb.rows if r.config == f"{own} ovs-1 rr"), None)
    if rr is not None and medians:
        parts = [f"qperf tcp_lat RTT, 1 OVS bridge: measured {rr.measured * 1e3:.0f} us mean over runs (median "
                 f"129 us), simulated {rr.simulated * 1e3:.0f} us (before: {BEFORE['ovs-1 rr']})"]
        for lab, what in (("ovs-1", "1 OVS bridge"), ("ovs-4-patch", "4 patch-chained OVS bridges"),
                          ("ovs-4-veth", "4 veth-chained OVS bridges")):
            if (own, lab) in medians:
                m, sim = medians[(own, lab)]
                parts.append(f"ping median through {what}: measured {m:.2f} ms, simulated {sim:.2f} ms "
                             f"(before: {BEFORE[lab]})")
        tb.notes.append("**Issue 17's table, with the refitted quiet profile** (`calibration/local_netns.toml`): "
                        + "; ".join(parts) + ".")
    tb.notes.extend(WHY)
    for tag, (own, st) in states.items():
        p, d = tag.split("->")
        if p != d:
            how = "estimated" if "speed_index estimated" in str(st.get("note", "")) else "measured"
            tb.notes.append(
                f"**{p} profile -> {d} day**: CPU costs x{own['speed_index'] / st['speed_index']:.3g} (speed index "
                f"{own['speed_index']} -> {st['speed_index']}, {how}), wake-up latencies "
                f"x{own['latency_index'] / st['latency_index']:.3g} (latency index {own['latency_index']} -> "
                f"{st['latency_index']}, estimated), busy share {own.get('cpu_busy')} -> {st['cpu_busy']}.")
    counts = []
    for tag in states:
        rows = [r for r in tb.rows if r.config.startswith(tag + " ") and r.split == "held-out"]
        per = {m: [r for r in rows if r.metric == m] for m in ("throughput", "rtt", "ks_rtt")}
        if rows:
            counts.append(f"{tag}: " + ", ".join(f"{m} {sum(1 for r in v if r.meets)}/{len(v)}"
                                                for m, v in per.items() if v))
    tb.notes.append("**Held-out rows meeting their target** (throughput 3 %, mean RTT 10 %, KS <= 0.1): "
                    + "; ".join(counts) + ".")


# what the rows show, from `ovssim validate --only states` (rewritten when the model or the data change)
WHY = [
    "**Latency has its own index.** Two quiet evenings of one speed index (24 Nov estimated 1.11, 25 Nov measured "
    "1.04; Linux-bridge TCP 3.5 and 3.6 Gbit/s) had Linux-bridge pings of 70 us and 15-45 us (mean 28): this "
    "guest's wake-up latencies (cpuidle-haltpoll with guest_halt_poll_ns=0: an idle vCPU halts and is woken "
    "through the hypervisor) move with something the CPU benchmark does not see. So the idle exits, the "
    "reader's and the idle netdev thread's wake-ups scale by a latency index (the Linux bridge's 1-bridge "
    "ping, relative to 24 Nov's) and the CPU costs by the speed index; the receive stack has no latency of its "
    "own in these profiles (`host.stack_delay` 0: its work, and the kernel's answer to a ping, are CPU, "
    "`host.icmp_echo`, held by the warm ping of a quiet day). Cross-day RTT "
    "rows of 24 / 22 Nov meeting 10 %: 2/32 before, 7/30 now (the two ping rows the index comes from are "
    "in-sample now); median error 43 % -> 30 %. The collector now records a spaced veth ping (30 echoes "
    "10 ms apart) with its machine state, from which later campaigns can take a measured latency index.",
    "**Throughput follows the measured speed index where the path is the fitted one.** 25 Nov, measured "
    "indices 1.04 / 0.58: Linux bridge 1-bridge -9 % (quiet profile on the busy day) / -4 % (busy on quiet), "
    "OVS 1-bridge +7 % / -11 %, OVS patch chains +2..+5 % / -4..-10 %; median cross-day error 9 % against 45 % "
    "for the estimated indices of 24 / 22 Nov, where OVS fell x0.36 and the Linux bridge x0.50 between the "
    "days (the netdev thread needs a whole core that the busy day's other jobs shared). The CPU costs that "
    "were missing from the scaled set (segmentation, NAPI, patch ports, qdiscs) scale now. Linux-bridge "
    "veth chains' throughput misses by -4..-47 % (-9 / -17 % at 2 / 4 bridges on the quiet 24 Nov with its own "
    "profile; -36..-63 % while the link priced a veth crossing at the default profile's 2 us per skb, 8x the "
    "namespace veth's fitted cost, ovssim/topology.py veth_cost_key): every frame of that testbed crosses every "
    "hop alone (eth0's software GSO, no GRO on veth or in netif_rx), and the measured iperf3 client -- whose "
    "core runs all of the chain's softirq work -- spent 3.07 / 4.01 / 5.81 us per segment at 1 / 2 / 4 "
    "bridges, 0.92 us per hop, where the model's sender core spends 1.5 us per hop but too little at 1 bridge "
    "(2.5 us: the model charges 2 us of receive work per segment, app.recv_per_packet, to the reader's core, "
    "where the measured iperf3 server spent 1.09 us; Linux runs tcp_v4_rcv in the sender's softirq, except what "
    "the socket backlog leaves to the reader's release_sock). Pings 10 ms apart pay more per hop than bulk frames: 3.1-4.7 us per hop and direction "
    "(2.5-4.9 busy), against the client's 0.6 us per frame and hop in bulk (0.92 us per segment, with half an "
    "ACK); the model's hop is one CPU cost for both, so its chain pings are 11-19 % short on the quiet day "
    "(TCP_RR's per-hop increments, 3.7 then 0.4 us quiet, are too noisy to tell which it follows).",
    "**What still does not carry over.** (1) *TCP_RR on a busy day is faster than the quiet profile predicts* "
    "(Linux bridge +39 % / +64 %, 25 / 22 Nov): the fits put the round trip common to ping and TCP_RR in the "
    "receive stack's latency and leave the reader's idle-core wake-up (`app.idle_wake`, 1.5 / 4.6 us) small, "
    "so dropping it on a busy day moves little, while the tools' default CPU costs (about 13 us per transaction) "
    "scale up. (2) *The tick stall is seen only on busy days* (9-16 % of OVS pings one tick late on 25 Nov, "
    "18-28 % on 22 Nov, 0-0.3 % quiet): a quiet profile predicts none, so busy-day OVS ping means are "
    "under-predicted by 46-83 % (9 of 10 rows); the stall probability that busy data give (fitted 0.20 on 22 "
    "Nov; on 25 Nov the fit stayed at its start, 0.20) is a "
    "property of the scheduler on a busy core, not of the quiet data. (3) *The quiet 25-Nov campaign is "
    "partly busy*: its first repetition ran at cpu_busy 1.0 (pings 0.18 ms median through OVS, 1.1 ms "
    "mean), the other two at 0.02-0.55 (0.06 ms): 3 runs per configuration give its OVS rows wide spreads "
    "(fitted `ovs.idle_wake` 352 us, against 81 us on 24 Nov) and its chain rows no order (4 patch-chained "
    "bridges 0.17 ms mean, 1 bridge 0.44).",
    "**Chained bridges' pings (24 Nov, quiet): not modelled.** Measured medians 0.235 / 0.351 / 0.389 ms "
    "through 1 / 2 / 4 patch-chained OVS bridges (one datapath pass each) while TCP_RR grows by ~20 us per "
    "bridge; the model's one thread wakes once per chain and gives 0.23 for all. In OVS, the netdev "
    "datapath's non-PMD thread polls each port's receive queue once per pass (`dpif_netdev_run`, in port-hash "
    "order) and ovs-vswitchd's main loop runs every bridge's `ofproto_run` between passes; ping's echo "
    "reply is queued during the thread's own send (ICMP echo is answered in softirq), so it waits for the "
    "next pass -- every bridge's work -- unless its port comes later in the same pass. The per-bridge cost of "
    "that loop is what the chains would need; it is not in the model.",
    "**KS 0 of 44.** The measured ping ECDFs are far wider (scheduling outliers of a shared 2-core guest, "
    "first packets after a flow purge) than the simulated ones, whose spread is the lognormal steps' alone.",
]
