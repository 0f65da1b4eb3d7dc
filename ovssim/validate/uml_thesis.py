"""The thesis's three tests through the OVS kernel datapath on a real Linux 6.1 kernel (user-mode Linux, issue 22).

Data: ``data/uml/2026-11-29/uml-ovs-kernel`` (``data/campaigns/uml-ovs-kernel.toml``, ``ovssim collect --kernel
uml``): one OVS bridge on ``datapath_type=system`` inside a UML 6.1 instance (one virtual CPU), the schedulers set
through the OVS QoS table on the receiver's port as seed 000 did (``linux-htb`` and ``linux-hfsc`` at 50 Mbit/s,
``linux-sfq``, ``linux-codel``, ``linux-fq_codel``, ``linux-noop``; ``none`` = the veth's own noqueue), and the
thesis's tests: a TCP stream (iperf3 CUBIC, ``-O 1``), 1-byte-class request/response (sockperf TCP ping-pong of
14-byte messages; netperf is not in Debian main) and UDP 1470-byte datagrams at 95 Mbit/s (iperf 2).

Split: nothing is fitted on these rows.  The profile is ``calibration/uml_linux61_quiet.toml`` (the instance's
CPU from the idle kernel datapath's ping, the qdisc watchdog's lateness from the Linux bridge's pfifo_fast runs
of 28 Nov); every row is held out.  Each measured workload is simulated in a run of its own, as the collector
ran it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import ROOT, Settings, TestbedResult, load_scenario_dict, variant
from .compare import Comparison, ks_distance, mean_ci
from .simulate import Config, Runner

DATA = ROOT / "data" / "uml" / "2026-11-29" / "uml-ovs-kernel"
# the campaign's qdiscs (data/campaigns/uml-ovs-kernel.toml) as the OVS QoS table gives them (ovssim/qdisc/ovs_qos.py);
# "none": the port's own default (a veth: noqueue)
RATE_BPS = "50000000"
QOS = {"none": None,
       "noop": {"type": "linux-noop"},
       "htb50": {"type": "linux-htb", "other-config": {"max-rate": RATE_BPS}, "queues": {"0": {"max-rate": RATE_BPS}}},
       "hfsc50": {"type": "linux-hfsc", "other-config": {"max-rate": RATE_BPS},
                  "queues": {"0": {"max-rate": RATE_BPS}}},
       "sfq": {"type": "linux-sfq"}, "codel": {"type": "linux-codel"}, "fq_codel": {"type": "linux-fq_codel"}}
SHAPED = ("htb50", "hfsc50")
# measured workload -> the simulated workload (from/to/start added) and the simulated seconds of its run
WORKLOADS = {
    "tcp": ({"tool": "iperf3", "proto": "tcp", "C": "cubic", "O": "0.1s", "t": "0.4s"}, 0.5),
    "tcp_rr": ({"tool": "sockperf", "proto": "tcp", "m": "14b", "t": "0.3s"}, 0.3),
    "udp95": ({"tool": "iperf2", "proto": "udp", "b": "95mbit", "l": "1470b", "t": "0.4s"}, 0.4),
}
# (measured workload, measured metric, factor to the report's unit, simulated metric, unit, target kind, row name)
METRICS = [("tcp", "throughput", 1e-6, "throughput", "Mbit/s", None, "tcp"),
           ("tcp_rr", "half_rtt_mean", 1e3, "half_rtt_mean", "ms", "rtt", "tcp_rr half-RTT"),
           ("tcp_rr", "half_rtt_p50", 1e3, "half_rtt_p50", "ms", "rtt", "tcp_rr half-RTT p50"),
           ("udp95", "throughput", 1e-6, "throughput", "Mbit/s", "throughput", "udp 95 Mbit/s"),
           ("udp95", "jitter", 1e3, "jitter", "ms", "jitter", "udp 95 Mbit/s"),
           ("udp95", "loss", 100.0, "loss", "%", "", "udp 95 Mbit/s")]      # iperf 2's fraction, the model's %
SEED = 2036


def tcp_kind(qdisc: str) -> str:
    """A shaped stream is held to the shaper's rate; an unshaped one to the instance's one CPU (issue 15's 10 %)."""
    return "shaped_throughput" if qdisc in SHAPED else "cpu_throughput"


def config(qdisc: str, workload: str) -> Config:
    """One measured workload through the kernel datapath with ``qdisc`` on the receiver's port (vif2)."""
    from .uml import uml_edits
    spec, span = WORKLOADS[workload]
    wl = [{"name": workload, "from": "ns1", "to": "ns2", "start": "0s", **spec}]
    sc = variant(load_scenario_dict("local_netns.toml"), workloads=wl, **uml_edits("ovs", QOS[qdisc], tx_offload=True))
    sc["scenario"]["duration"] = f"{span + 0.05:.3f}s"
    sc["scenario"]["name"] = label = f"uml-ovs-kernel {qdisc}: {workload}"
    return Config(label, sc, {"qdisc": qdisc, "workload": workload})


def run(runner: Runner, settings: Settings, data: Path = DATA) -> list[TestbedResult]:
    from .uml import STATE_PROFILE, load_campaign
    tb = TestbedResult("uml_ovs_kernel", "Issue 22: the thesis's three tests through the OVS kernel datapath "
                       "(user-mode Linux 6.1)", profile=f"calibration/{STATE_PROFILE}.toml", section="qdiscs")
    tb.split = ("Nothing fitted on these rows: the profile is the quiet UML state's (`uml_linux61_quiet`: the "
                "instance's CPU from the idle kernel datapath's ping, the qdisc watchdog from the Linux bridge's "
                "pfifo_fast runs); every row is held out.")
    loaded = load_campaign(tb, data, "uml-ovs-kernel")
    if loaded is None:
        return [tb]
    df, rtt = loaded
    rr = rtt[rtt["workload"] == "tcp_rr"] if not rtt.empty else rtt
    qdiscs = [q for q in QOS if (df["qdisc"] == q).any()]
    if settings.fast:
        qdiscs = qdiscs[:1]
    cfgs = [config(q, w) for q in qdiscs for w in WORKLOADS if ((df["qdisc"] == q) & (df["workload"] == w)).any()]
    path = settings.calibration_dir / f"{STATE_PROFILE}.toml"
    own = campaign_syscall_us(data)       # the campaign's own system-call cost where its collector measured it
    sims = runner.run(cfgs, str(path), reps=settings.reps, seed=SEED, sample_keys={"tcp_rr:rtt"},
                      overrides={"app.syscall": f"{own:.3f}us"} if own else None)
    for c in cfgs:
        q, w = c.facts["qdisc"], c.facts["workload"]
        sel = df[(df["qdisc"] == q) & (df["workload"] == w)]
        sim = sims[c.label]
        for mw, mm, f, sm, unit, kind, what in METRICS:
            if mw != w:
                continue
            meas = sel[sel["metric"] == mm]["value"].to_numpy(float) * f
            simv = sim.values(w, sm)
            if not meas.size or not simv.size:
                continue
            y, lo, hi = mean_ci(meas)
            s, slo, shi = mean_ci(simv)
            tb.rows.append(Comparison(tb.name, f"{q}: {what}", mm, unit, y, lo, hi, s, slo, shi, "held-out",
                                      tcp_kind(q) if kind is None else kind, note=f"{meas.size} runs"))
        if w == "tcp_rr":
            # the collector's round trips are in seconds, the model's sockperf samples in ms
            meas_rtt = (rr[rr["qdisc"] == q]["value"].to_numpy(float) * 1e3 if not rr.empty and "qdisc" in rr
                        else np.array([]))
            sim_rtt = np.asarray(sim.samples.get("tcp_rr:rtt", []), float)
            if meas_rtt.size and sim_rtt.size:
                tb.rows.append(Comparison(tb.name, f"{q}: tcp_rr round trips", "ks_rtt", "KS", float("nan"),
                                          float("nan"), float("nan"), ks_distance(meas_rtt, sim_rtt), float("nan"),
                                          float("nan"), "held-out", "ks", band="-",
                                          note=f"{meas_rtt.size} measured / {sim_rtt.size} simulated"))
    tb.notes += notes(df, data)
    tb.notes += miss_notes(df, sims, cfgs, own)
    return [tb]


def _mean(df, qdiscs, workload: str, metric: str, factor: float = 1.0) -> dict:
    sel = df[(df["workload"] == workload) & (df["metric"] == metric) & df["qdisc"].isin(qdiscs)]
    return (sel.groupby("qdisc")["value"].mean() * factor).to_dict()


def campaign_syscall_us(data: Path) -> float | None:
    """The mean of a campaign's measured system-call costs (``metadata.json`` ``machine_state``, before and
    after: ``benchmark.syscall_us``, :func:`ovssim.collect.state.syscall_us`), or None where not measured."""
    import json
    meta = data / "metadata.json"
    if not meta.is_file():
        return None
    states = json.loads(meta.read_text()).get("machine_state") or {}
    vals = [st["benchmark"]["syscall_us"]["median"] for st in states.values()
            if isinstance(st, dict) and "syscall_us" in (st.get("benchmark") or {})]
    return float(np.mean(vals)) if vals else None


def miss_notes(df, sims: dict, cfgs: list[Config], own: float | None = None) -> list[str]:
    """Why the rows land where they do, with the figures behind each reason."""
    import json
    from .uml import syscall_cost
    out = []
    by = {(c.facts["qdisc"], c.facts["workload"]): sims[c.label] for c in cfgs}
    # the runs' app.syscall: the campaign's own measurement, else the scenarios' (ovssim/validate/uml.py _uml_params)
    call = own * 1e-6 if own else (syscall_cost() or 0.0)
    rr_meas = _mean(df, [q for q, w in by if w == "tcp_rr"], "tcp_rr", "half_rtt_mean", 1e6)
    rr_sim = {q: float(np.mean(r.values("tcp_rr", "half_rtt_mean"))) * 1e3 for (q, w), r in by.items() if w == "tcp_rr"}
    probe = ROOT / "data" / "uml" / "2026-11-29" / "uml-rr" / "results-rr.json"
    if rr_meas and rr_sim and call:
        path_rt = 2 * float(np.mean(list(rr_sim.values()))) - 4 * call * 1e6      # the model's path alone, a round trip
        implied = [(2 * v - path_rt) / 4 for v in rr_meas.values()]
        getppid = list(json.loads(probe.read_text()).get("getppid_us", {}).values()) if probe.is_file() else []
        out.append(
            "**Request/response: the tools' own system calls.** sockperf ping-pong makes one sendto() and one "
            "recvfrom() on each end per transaction and nothing else per message (strace -c inside UML, TCP and "
            "UDP: `data/uml/2026-11-29/uml-rr`, `python -m ovssim.collect.uml.cpucost OUT --rr`; it times with the "
            "TSC), and on the instance's one CPU all four lie on the round trip: the model puts them there "
            f"(ovssim/workloads/rr.py), `app.syscall` = {call * 1e6:.1f} us each ("
            + ("getppid() timed by the collector before and after the campaign" if own else
               "getppid() timed on 28 Nov") + "), "
            f"beside {path_rt:.1f} us of the profile's per-packet work per round trip. Measured half round trips "
            f"{min(rr_meas.values()):.1f}-{max(rr_meas.values()):.1f} us (means of 3 runs per scheduler: an empty "
            "qdisc adds nothing measurable) imply "
            f"{min(implied):.1f}-{max(implied):.1f} us per call"
            + (f"; getppid() took {min(getppid):.1f}-{max(getppid):.1f} us beside the probe, run minutes after the campaign with "
               "two other jobs on the host" if getppid else "")
            + ": a call's cost follows the host's state (15-49 us over 28 Nov's seven runs)"
            + ("." if own else ", and this campaign was collected before the collector timed getppid() "
               "(ovssim/collect/state.py `syscall_us`).") + " Before the calls were on the path the model's half round trip "
              "was ~7 us (-85 %). The distribution (KS): the model's round trips are nearly constant, the "
              "instance's spread by its host's scheduling.")
    udp_thr = _mean(df, ["htb50", "hfsc50"], "udp95", "throughput", 1e-6)
    udp_loss = _mean(df, ["htb50", "hfsc50"], "udp95", "loss", 100)
    if udp_thr:
        sim_thr = {q: float(np.mean(by[(q, "udp95")].values("udp95", "throughput"))) for q in udp_thr if (q, "udp95") in by}
        out.append(
            "**UDP at 95 Mbit/s into a 50 Mbit/s shaper: no loss.** Measured: "
            + ", ".join(f"{q} {udp_thr[q]:.1f} Mbit/s, {udp_loss.get(q, float('nan')):.2f} % lost" for q in udp_thr)
            + ". Linux 6.1's veth leaves each datagram's skb charged to the sending socket until the receiver's IP "
              "layer takes it (`skb_scrub_packet` no longer orphans), so the socket's send buffer (net.core."
              "wmem_default = 212,992 B, ~92 skbs of truesize 2,304) fills behind the shaper and iperf 2's "
              "sendto() blocks (`sock_alloc_send_pskb` -> `sock_wait_for_wmem`, woken at half: "
              "`sock_def_write_space`): the sender is held to the shaper's rate and nothing is dropped. The model "
              "does the same (`UdpSendBuffer`, ovssim/workloads/udp_sndbuf.py; before it, 18-32 % of the datagrams were "
              "dropped at the shaper's queue). Simulated: "
            + ", ".join(f"{q} {v:.1f} Mbit/s" for q, v in sim_thr.items())
            + ". OVS's linux-htb gives its classes a burst of one MTU, so every 1,470-byte datagram waits for "
              "the qdisc watchdog, and the profile's watchdog lateness (UML's timer, how the host schedules the "
              "instance: fitted on 28 Nov's host state, `uml_linux61_quiet`) costs the HTB class 30 % of its "
              "rate in the model; this campaign's host ran the instance's timer on time more often (the "
              "same row measured 39 Mbit/s on 25 Nov, loaded, and 28 on 24 Nov). TCP's 64 KB skbs wait for "
              "the watchdog once per skb, so its HTB row barely feels it. HFSC's upper limit is a curve of the class's "
              "cumulative service, so the time a late watchdog loses is made up at once; HTB's tokens stop at "
              "the burst.")
    tcp_meas = _mean(df, ["none", "noop", "sfq", "codel", "fq_codel"], "tcp", "throughput", 1e-9)
    if tcp_meas:
        sim_tcp = [float(np.mean(r.values("tcp", "throughput"))) / 1e3 for (q, w), r in by.items()
                   if w == "tcp" and q not in SHAPED]
        out.append(
            f"**The unshaped TCP stream is CPU-bound in the instance**: measured {min(tcp_meas.values()):.1f}-"
            f"{max(tcp_meas.values()):.1f} Gbit/s (its one CPU 99-100 % busy), the model "
            + (f"{min(sim_tcp):.1f}-{max(sim_tcp):.1f}" if sim_tcp else "?")
            + " Gbit/s. With transmit offloads on (the campaign's `vm_tx_offload`) the stream crosses veth, "
              "datapath and veth as 64 KB skbs, and what the instance spends per byte of them (the copies "
              "through UML's mapping of its physical memory, the page walks of its user access) is not in the "
              "profile, whose costs were fitted on per-frame pings and a 20 Mbit/s-shaped flow. Not fitted here: "
              "the five unshaped rows are one path, so a fit on one would leave the others no test.")
    jit = _mean(df, ["none", "noop", "sfq", "codel", "fq_codel"], "udp95", "jitter", 1e6)
    if jit:
        out.append(f"**Jitter of the unshaped UDP stream**: iperf 2 prints it in ms with three decimals, so the "
                   f"measured {min(jit.values()):.1f}-{max(jit.values()):.1f} us are counted in whole "
                   "microseconds; the model's ~1.5 us is below what the instance shows.")
    return out


def notes(df, data: Path) -> list[str]:
    """The campaign's host state and the instance's CPU, from its metadata and rows."""
    import json
    out = []
    meta = json.loads((data / "metadata.json").read_text()) if (data / "metadata.json").is_file() else {}
    sess = meta.get("uml_sessions", [{}])
    load = [s.get("host_loadavg_1min_start_end") for s in sess if s.get("host_loadavg_1min_start_end")]
    cpu = df[df["metric"] == "cpu_busy"].groupby("workload")["value"].mean() * 100
    out.append(f"**The campaign** (`{data.relative_to(ROOT)}`, {meta.get('started', '?')[:16]} UTC, "
               f"{meta.get('repetitions', '?')} runs per configuration, interleaved): host load average "
               + ", ".join(f"{a:.2f} -> {b:.2f}" for a, b in load)
               + " over the campaign; the instance's one CPU was busy "
               + ", ".join(f"{w} {v:.0f} %" for w, v in cpu.items()) + " (UML's /proc/stat).")
    return out
