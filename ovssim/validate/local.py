"""This machine's namespace testbed (``data/local/2026-11-24/local-bridges``, collected by ``ovssim collect``).

Split: the profile is fitted on the **single-bridge, unshaped** runs (port
qdisc ``none``) in two stages: ``calibration/local_netns_host.toml`` on iperf3
TCP throughput and qperf ``tcp_lat`` RTT (simulated as netperf TCP_RR) of OVS
and the Linux bridge and the Linux bridge's ping mean;
``calibration/local_netns.toml`` (based on it) adds the OVS datapath thread's
wake-up after idling, fitted on the 1-bridge OVS ping mean.  Held out: 2- and
4-bridge chains with patch ports and veth pairs (and their pings), the
pfifo_fast / HTB / TBF configurations (the 50 Mbit/s shaping rate is never
seen by the fit), the iperf3 UDP and iperf 2 jitter runs.

The same testbed measured on a busy machine (22 Nov, ``data/local/local-bridges``)
is the second state (:data:`BUSY`, ``calibration/local_netns_busy*.toml``,
fitted by :mod:`ovssim.validate.states`, which predicts each day from the other).

Issue 4's check (HTB, TBF and pfifo_fast against the real kernel) is the
shaped part of this testbed; its rows carry ``kind = shaped_throughput``
(target 2%) and are reported in their own section.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import units
from ..fit.calibrate import Param, Target
from . import plots
from .base import ROOT, shown, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, variant
from .cold import cold_start, day_idle_states, idle_exit_spec, idle_params, warm_exit, warm_ping_runs
from .compare import Comparison, ks_distance, mean_ci
from .simulate import Config, Runner

DATA = ROOT / "data" / "local" / "2026-11-24" / "local-bridges"
# measured workload -> (sim workload table without from/to/start, simulated span in s)
WORKLOADS = {
    # iperf3 -O 1 in the collector (slow start and a shaper's initial burst left out): -O here too
    "tcp": ({"tool": "iperf", "proto": "tcp", "C": "cubic", "cc_after_connect": True, "O": "0.1s", "t": "0.2s"}, 0.3),
    "rr": ({"tool": "netperf", "test": "TCP_RR", "r": "1,1", "l": "0.2s"}, 0.2),
    "ping": ({"tool": "ping", "c": 100, "i": "10ms"}, 1.0),
    # the chain-ping probe's warm ping, 0.2 ms apart (the core never idles): a fit target, not a measured row
    "ping_warm": ({"tool": "ping", "c": 200, "i": "0.2ms"}, 0.05),
    "udp40": ({"tool": "iperf3", "proto": "udp", "b": "40mbit", "l": "1400b", "t": "0.5s"}, 0.5),
    "jitter_iperf2": ({"tool": "iperf2", "proto": "udp", "b": "20mbit", "l": "1470b", "t": "0.5s", "port": 5002}, 0.5),
}
# run order inside one simulated run: TCP last, so its standing queue (e.g. 1000 packets behind a 50 Mbit/s
# shaper drain for ~0.24 s) and its CPU backlog cannot spill into the other workloads
ORDER = ["ping_warm", "udp40", "jitter_iperf2", "ping", "rr", "tcp"]
# (measured workload, measured metric, factor to sim unit, sim metric, unit, report metric)
METRICS = [("tcp", "throughput", 1e-6, "throughput", "Mbit/s", "throughput"),
           ("rr", "tcp_rr_rtt", 1e3, "rtt_mean", "ms", "rtt"),
           ("ping", "rtt_mean", 1e3, "rtt_mean", "ms", "rtt"),
           ("udp40", "throughput", 1e-6, "throughput", "Mbit/s", "throughput"),
           ("udp40", "jitter", 1e3, "jitter", "ms", "jitter"),
           ("jitter_iperf2", "jitter", 1e3, "jitter", "ms", "jitter")]
SHAPED = {"htb50", "tbf50"}


def qdisc_spec(name: str, bridge: str):
    """The collector's qdisc configurations (data/campaigns/local-bridges.toml, ovssim/collect/qos.py)."""
    if name in ("none", "-"):
        return None               # veth's default (noqueue); the simulator's port default stands in
    if name == "pfifo_fast":
        return {"kind": "pfifo_fast"}
    if name == "htb50":           # OVS QoS table (max-rate on QoS and queue 0); tc htb 1:1 rate=ceil on Linux
        return {"type": "linux-htb", "other-config": {"max-rate": "50000000"},
                "queues": {"0": {"max-rate": "50000000"}}}
    if name == "htb50_pfifo_fast":   # tc htb 1:1 rate=ceil 50mbit, its leaf pfifo_fast (data/campaigns/local-prio.toml)
        return {"kind": "htb", "default": "1", "classes": [
            {"classid": "1:1", "parent": "1:", "rate": "50mbit", "ceil": "50mbit", "qdisc": {"kind": "pfifo_fast"}}]}
    if name == "tbf50":           # tc tbf rate 50mbit burst max(10 frames, 4 ms of rate) latency 50ms
        return {"kind": "tbf", "rate": "50mbit", "burst": 25000, "latency": "50ms"}
    raise KeyError(name)


def load_measured(data: Path = DATA) -> pd.DataFrame:
    from ..collect.store import load_results
    df = load_results(data)
    return df[df["status"] == "ok"].copy()


def _label(bridge, chain, link, qdisc) -> str:
    s = f"{bridge}-{chain}"
    if int(chain) > 1:
        s += f"-{link}"
    return s + ("" if qdisc == "none" else f"-{qdisc}")


def _config(bridge: str, chain: int, link: str, qdisc: str, workloads: list[str]) -> Config:
    base = load_scenario_dict("local_netns.toml")
    edits = {"bridge.br": {"kind": bridge, "chain": int(chain), "link": "patch" if link == "-" else link}}
    q = qdisc_spec(qdisc, bridge)
    if q is not None:
        edits["vm.ns2"] = {"qdisc": q}
    if int(chain) > 1:
        edits["vm.ns2"] = {**edits.get("vm.ns2", {}), "bridge": f"br-{int(chain)}"}
    wls, t = [], 0.0
    for w in sorted(workloads, key=ORDER.index):
        spec, span = WORKLOADS[w]
        wls.append({"name": w, "from": "ns1", "to": "ns2", "start": f"{t:.3f}s", **spec})
        t += span + 0.1
    sc = variant(base, workloads=wls, **edits)
    sc["scenario"]["duration"] = f"{t:.3f}s"
    return Config(_label(bridge, chain, link, qdisc), sc,
                  {"bridge": bridge, "chain": int(chain), "link": link, "qdisc": qdisc})


# the machine states of this testbed: (data, host profile, profile, title).  Quiet 24 Nov (the latest data of
# local-bridges, what local_netns*.toml are fitted on) and busy 22 Nov (local_netns_busy*.toml): no collector
# machine state, the speed index estimated (measured_state).  Quiet and busy 25 Nov: the same campaign
# (local-offloads: OVS 1, 2 and 4 bridges, Linux bridge 1) with the collector's measured state before and after.
QUIET = (DATA, "local_netns_host", "local_netns", "quiet, 24 Nov")
BUSY = (ROOT / "data" / "local" / "local-bridges", "local_netns_busy_host", "local_netns_busy", "busy, 22 Nov")
QUIET25 = (ROOT / "data" / "local" / "2026-11-25-quiet" / "local-offloads", "local_netns_quiet25_host",
           "local_netns_quiet25", "quiet, 25 Nov")
BUSY25 = (ROOT / "data" / "local" / "2026-11-25" / "local-offloads", "local_netns_busy25_host",
          "local_netns_busy25", "busy, 25 Nov")
STATES = (QUIET, BUSY)
MEASURED_STATES = (QUIET25, BUSY25)
FIT_KEYS = [("ovs", 1, "-", "none"), ("linux", 1, "-", "none")]
# stage 2 also fits the share of a netdev pass that is its delivery into the receiving stack
# (``ovs.deliver_share``) and the netdev thread's main-loop run per bridge (``ovs.bridge_run``) on this chain, where a
# day's data have it
CHAIN_FIT_KEY = ("ovs", 2, "veth", "none")
CHAIN_FIT_WORKLOADS = ("tcp", "rr")      # its TCP throughput (deliver_share) and TCP_RR RTT (bridge_run)


def fitted_row(key: tuple, workload: str) -> bool:
    """Whether a row of a day's own data is one its profiles were fitted on (``fit_state``)."""
    return key in FIT_KEYS or (key == CHAIN_FIT_KEY and workload in CHAIN_FIT_WORKLOADS)


# A container's receive stack has no latency that is not CPU work: it runs in the sender's softirq (net/core/dev.c:
# veth_xmit -> __netif_rx -> process_backlog at local_bh_enable).  With host.stack_delay standing for it
# (lognormal, ~9 us on each delivery) a warm ping took 26 us where Linux's takes 8 (the chain-ping probe's, pings
# 0.2 ms apart), and every round trip -- BBR's min_rtt among them -- was ~18 us too long.  The local fits leave
# that latency out and price the ping's own work as CPU, which contends and runs slower on a cold core: the
# kernel's answer to each echo (host.icmp_echo).  The veth's backend_delay (1 us, the default) stays: at 0 the
# model runs a container's whole path, the receiver's stack included, as its sender's work, and a 64 KB-skb flow
# fell from 25 to 12 Gbit/s (measured 23-39) -- a limit of the model's run-to-completion chain, not Linux's
STACK_FIXED = {"host.stack_delay": "0us"}

# starting points of stage 1 (a shorter search): near a first fit of each state
X0_QUIET = {"ovs.stats:scale": 4.9e-6, "vif.container-veth.cpu_per_packet": 0.26e-6, "host.icmp_echo": 5e-6,
            "ovs.latency": 35e-6, "linux_bridge.forward:scale": 0.59e-6, "app.idle_wake": 38e-6}
X0_BUSY = {"ovs.stats:scale": 17.5e-6, "vif.container-veth.cpu_per_packet": 0.55e-6, "host.icmp_echo": 8e-6,
           "ovs.latency": 130e-6, "linux_bridge.forward:scale": 1.4e-6, "app.wakeup": 1e-6}


def without_offloads(df: pd.DataFrame) -> pd.DataFrame:
    """The runs with the namespaces' transmit offloads off (what the netdev datapath needs; local-offloads
    also ran the Linux bridge with them on)."""
    if "vm_tx_offload" not in df:
        return df
    return df[~df["vm_tx_offload"].astype(str).str.lower().isin(["true", "1"])]


def _linux_tcp(d: pd.DataFrame) -> float:
    """Mean iperf3 TCP throughput over the 1-bridge unshaped Linux bridge, offloads off."""
    d = without_offloads(d)
    sel = d[(d["bridge"] == "linux") & (d["chain"] == 1) & (d["qdisc"] == "none") & (d["workload"] == "tcp")
            & (d["metric"] == "throughput")]
    return float(sel["value"].mean())


# latency index 1.0: the mean RTT of pings (every 10 ms) through one Linux bridge on the quiet 24 Nov
# (data/local/2026-11-24/local-bridges, 10 runs of 100)
REFERENCE_PING = 70.1e-6
LATENCY_NOTE = ("; latency_index estimated: 70.1 us (the quiet 24-Nov Linux bridge's 1-bridge ping mean) over "
                "this day's")


# the campaign whose collector measured the idle exit (ovssim/collect/state.py) beside a Linux-bridge ping
IDLE_EXIT_DATA = ROOT / "data" / "local" / "2026-11-27-quiet" / "local-offloads"


def idle_exit_of(state: dict) -> tuple[float, str]:
    """``host.idle_exit`` (s) for a day of ``state``, and where it comes from: the collector's measurement
    where the day's campaign has one, else the one of :data:`IDLE_EXIT_DATA` moved to the day's latency index
    (it is a wake-up latency, :data:`ovssim.profile.LATENCIES`): measured x that campaign's index / the day's.
    Either way less the spaced ping's own cold work (:func:`ovssim.validate.cold.warm_exit`), which the
    profile's ``host.cold_factor`` adds back."""
    cold = cold_start()
    if state.get("idle_exit_us") is not None:
        step, exchange, work = state["idle_exit_us"] * 1e-6, state.get("pingpong_us"), state.get("pingpong_rtt_us")
        value = warm_exit(step, None if exchange is None else exchange * 1e-6, cold,
                          None if work is None else work * 1e-6)
        return value, (f"measured by the collector's spaced veth ping (ovssim/collect/state.py): {step * 1e6:.1f} us"
                       + _less_cold(exchange, cold, work))
    ref_us, ref_index, ref_exchange = _reference_idle_exit()
    warm = warm_exit(ref_us * 1e-6, None if ref_exchange is None else ref_exchange * 1e-6, cold)
    value = warm * ref_index / state["latency_index"]
    return value, (f"estimated: {ref_us:.1f} us measured on {shown(IDLE_EXIT_DATA)} (latency index "
                   f"{ref_index:.3f}){_less_cold(ref_exchange, cold)}, moved to this day's latency index "
                   f"{state['latency_index']:.3f}")


def _less_cold(exchange_us: float | None, cold, work_us: float | None = None) -> str:
    ex = f"its hot ping-pong's {exchange_us:.1f} us per exchange" if exchange_us is not None else "nothing"
    work = (f"{work_us:.1f} us, the hot ping-pong's RTT" if work_us is not None else
            f"{cold.veth_rtt_us:.1f} us, the chain probe's")
    return (f", plus {ex}, less the spaced ping's warm work ({work}) x the cold factor "
            f"{cold.factor:.2f} (ovssim/validate/cold.py)")


@lru_cache(maxsize=1)
def _reference_idle_exit() -> tuple[float, float, float | None]:
    """:data:`IDLE_EXIT_DATA`'s measured idle exit (us), its latency index and its hot ping-pong's time per
    exchange (us), read once per process (every day without a measurement of its own is moved from it)."""
    from ..fit.profile_writer import machine_state_of
    ref = machine_state_of([IDLE_EXIT_DATA / "results.csv.gz"])
    return ref["idle_exit_us"], REFERENCE_PING / _linux_ping(load_measured(IDLE_EXIT_DATA)), ref.get("pingpong_us")


def _linux_ping(d: pd.DataFrame) -> float:
    """Mean ping RTT over the 1-bridge unshaped Linux bridge, offloads off (s)."""
    d = without_offloads(d)
    sel = d[(d["bridge"] == "linux") & (d["chain"] == 1) & (d["qdisc"] == "none") & (d["workload"] == "ping")
            & (d["metric"] == "rtt_mean")]
    return float(sel["value"].mean())


def measured_state(df: pd.DataFrame, data: Path | None = None) -> dict:
    """A profile's ``[state]`` for the data ``df`` (of campaign directory ``data``).

    ``cpu_busy``: the median busy share of the cores during the ping runs (ping itself uses next to no CPU,
    so it is what the other jobs kept busy).  ``speed_index``: the collector's (the mean of its before/after
    measurements, :func:`ovssim.fit.profile_writer.machine_state_of`) where the campaign has one; else
    estimated on the collector's scale from the Linux bridge's 1-bridge TCP throughput (one flow, CPU-bound
    in the kernel, the kind of work ovssim.collect.state's veth ping-pong times): that throughput times the
    geometric mean of (measured index / the same throughput) over the campaigns of :data:`MEASURED_STATES`.
    ``latency_index`` (no campaign measures one yet): :data:`REFERENCE_PING` over the Linux bridge's 1-bridge
    ping mean -- the simplest path's wake-ups and receive stack, what :data:`ovssim.profile.LATENCIES` scale with.
    """
    from ..fit.profile_writer import machine_state_of
    ping = df[(df["workload"] == "ping") & (df["metric"] == "cpu_busy")]["value"]
    state = {"cpu_busy": round(float(ping.median()), 3),
             "latency_index": round(REFERENCE_PING / _linux_ping(df), 3)}
    measured = machine_state_of([data / "results.csv.gz"]) if data is not None else {}
    if measured:
        return {**measured, **state, "note": measured["note"] + LATENCY_NOTE}
    refs = []
    for ref in MEASURED_STATES:
        st = machine_state_of([ref[0] / "results.csv.gz"])
        if st and (ref[0] / "results.csv.gz").is_file():
            refs.append((st["speed_index"], _linux_tcp(load_measured(ref[0])), ref[0]))
    if not refs:
        raise FileNotFoundError("no campaign with a measured machine state to put the estimate on the collector's "
                                f"scale: {', '.join(str(r[0]) for r in MEASURED_STATES)}")
    per_bit = float(np.exp(np.mean([np.log(i / t) for i, t, _ in refs])))
    state["speed_index"] = round(_linux_tcp(df) * per_bit, 3)
    state["note"] = ("no machine_state in these data: cpu_busy = median cpu_busy of the ping runs; speed_index "
                     "estimated on the collector's scale: the Linux bridge's 1-bridge TCP throughput times "
                     f"{per_bit * 1e9:.4g} per Gbit/s, the geometric mean of measured index / that throughput "
                     "over " + ", ".join(f"{Path(p).parent.name}/{Path(p).name} ({i:.3f} at {t / 1e9:.2f} Gbit/s)"
                                         for i, t, p in refs)
                     + LATENCY_NOTE + " (ovssim/validate/local.py, measured_state)")
    return state


def fit_state(runner: Runner, settings: Settings, which=QUIET):
    """Fit the two profiles of one machine state on its 1-bridge unshaped runs (OVS and Linux bridge).

    Stage 1 (``which[1]``): TCP throughput, TCP_RR RTT and the Linux bridge's ping mean (which, beside its
    TCP_RR, pins the application's wake-up).  Stage 2 (``which[2]``, based on stage 1): the netdev thread's
    wake-up after idling on the 1-bridge OVS ping mean -- the idle core's wake-up where the data's cores were
    mostly idle, the tick stall where they were busy -- and, where the data have the 2-bridge veth chain,
    ``ovs.deliver_share`` on its TCP throughput and ``ovs.bridge_run`` on its TCP_RR RTT.  Returns (df, state, (host path, result), (path, result)).
    """
    data, host_name, name, title = which
    df = without_offloads(load_measured(data))
    state = measured_state(df, data)
    data_files = [data / "results.csv.gz"] if (data / "results.csv.gz").is_file() else []
    # a quiet day's fit also targets the chain-ping probe's warm ping (a quiet machine's, 28 Nov): the path's own
    # work and the receive stack's latency apart from idle exits, which the day's spaced pings cannot separate
    busy = state["cpu_busy"] > 0.5
    warm = None if busy else warm_ping_runs()
    linux_wls = ["ping", "rr", "tcp"] + ([] if busy else ["ping_warm"])
    fit_cfgs = [_config("ovs", 1, "-", "none", ["tcp", "rr"]), _config("linux", 1, "-", "none", linux_wls)]
    targets = []
    for k in FIT_KEYS:
        sel = df[(df["bridge"] == k[0]) & (df["chain"] == k[1]) & (df["qdisc"] == k[3])]
        for wl, mm, f, sm, unit, _ in METRICS[:3]:
            if wl == "ping" and k[0] == "ovs":
                continue                          # stage 2's target
            runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * f
            targets.append(Target.from_runs(f"{_label(*k)}/{wl}", sm, runs, unit))
    if warm is not None:
        targets.append(Target.from_runs(f"{_label(*FIT_KEYS[1])}/ping_warm", "rtt_mean", warm, "ms"))
    params = [Param.parse("ovs.stats:scale=0.5us..200us"),
              Param.parse("vif.container-veth.cpu_per_packet=0.05us..20us"),
              Param.parse("host.icmp_echo=0.05us..30us"),
              Param.parse("ovs.latency=0us..400us"),
              Param.parse("linux_bridge.forward:scale=0.1us..20us"),
              # the reader's wake-up: on a quiet machine an idle core's (app.idle_wake, paid with the idle share,
              # so a busy state does not pay it), on a busy one a running core's (app.wakeup)
              Param.parse("app.wakeup=0.1us..60us" if busy else "app.idle_wake=0.1us..60us")]
    idle_exit, idle_src = idle_exit_of(state)
    x0 = dict(X0_BUSY if busy else X0_QUIET)
    if state.get("idle_exit_us") is None:
        # a day whose collector did not measure its idle exit: the estimate moved from another day is the
        # start, the spaced ping (beside the warm one, which holds the path's own work) decides
        params.append(Param.parse("host.idle_exit:scale=5us..200us"))
        x0["host.idle_exit:scale"] = units.time(idle_exit_spec(idle_exit)["scale"])
        idle_src = f"fitted on the spaced ping from a start {idle_src}"
    cold = cold_start()
    host = fit_profile(runner, settings, name=host_name, configs=fit_cfgs, params=params, targets=targets,
                       data_files=data_files, state=state,
                       fixed={**idle_params(idle_exit, state), **STACK_FIXED},
                       description=f"This machine's namespace testbed ({title}; 2 shared cores; OVS 3.1 netdev "
                                   "datapath and Linux bridge): fitted on single-bridge unshaped runs only",
                       method_note="targets: iperf3 TCP throughput and qperf tcp_lat RTT of the 1-bridge, "
                                   "qdisc=none runs of OVS and Linux bridge, and the Linux bridge's ping mean"
                                   + (f" and the chain-ping probe's warm 1-bridge ping ({warm.mean() * 1e3:.1f} "
                                      "us, pings 0.2 ms apart, 28 Nov)" if warm is not None else "") + "; "
                                   f"host.idle_exit: mean {idle_exit * 1e6:.1f} us, {idle_src}; "
                                   "host.stack_delay 0 (ovssim/validate/local.py STACK_FIXED); "
                                   f"{cold.describe()}; "
                                   f"{day_idle_states(state)[3]}; "
                                   "sigma = std/sqrt(n) of the runs",
                       x0=x0, max_evals=90)
    # -- stage 2: the netdev thread's wake-up after idling, on the 1-bridge OVS ping mean, stage 1 fixed ------
    # (stage 1's OVS targets never idle the datapath, so its wake-up cannot change them).  Which wake-up the
    # data can show follows from their busy share: an idle core's (idle_wake) or the tick stall (its share).
    sel = df[(df["bridge"] == "ovs") & (df["chain"] == 1) & (df["qdisc"] == "none") & (df["workload"] == "ping")
             & (df["metric"] == "rtt_mean")]
    runs = sel["value"].to_numpy(float) * 1e3
    busy = state["cpu_busy"] > 0.5
    param = "ovs.idle_stall_prob=0..0.6" if busy else "ovs.idle_wake=1us..600us"
    x0 = {"ovs.idle_stall_prob": 0.2} if busy else {"ovs.idle_wake": 100e-6}
    cfgs2 = [_config("ovs", 1, "-", "none", ["ping"])]
    params2 = [Param.parse(param)]
    targets2 = [Target.from_runs("ovs-1/ping", "rtt_mean", runs, "ms")]
    rows = df[(df["bridge"] == CHAIN_FIT_KEY[0]) & (df["chain"] == CHAIN_FIT_KEY[1]) & (df["link"] == CHAIN_FIT_KEY[2])
              & (df["qdisc"] == CHAIN_FIT_KEY[3])]
    chain = rows[(rows["workload"] == "tcp") & (rows["metric"] == "throughput")]
    what, note = "wake-up after idling, fitted on the 1-bridge OVS ping RTT", ""
    if len(chain) >= 2:
        tput = chain["value"].to_numpy(float) * 1e-6
        # the row's own workloads, as it is predicted (TCP last: the others warm the path before it)
        cfgs2.append(_config(*CHAIN_FIT_KEY, [w for w in rows["workload"].unique() if w in WORKLOADS]))
        params2.append(Param.parse("ovs.deliver_share=0..0.95"))
        targets2.append(Target.from_runs(f"{_label(*CHAIN_FIT_KEY)}/tcp", "throughput", tput, "Mbit/s"))
        x0 = {**x0, "ovs.deliver_share": 0.6}
        what = ("wake-up after idling and the share of a pass that is its delivery into the receiving stack, "
                "fitted on the 1-bridge OVS ping RTT and the 2-bridge veth chain's TCP throughput")
        note = "; ovs.deliver_share on the mean TCP throughput of the 2-bridge veth-chain OVS runs"
        rr = rows[(rows["workload"] == "rr") & (rows["metric"] == "tcp_rr_rtt")]["value"].to_numpy(float) * 1e3
        if rr.size >= 2:
            params2.append(Param.parse("ovs.bridge_run=0us..200us"))
            targets2.append(Target.from_runs(f"{_label(*CHAIN_FIT_KEY)}/rr", "rtt_mean", rr, "ms"))
            x0 = {**x0, "ovs.bridge_run": 15e-6}
            what += " and TCP_RR RTT (the thread's main-loop run per bridge)"
            note += ", ovs.bridge_run on its mean TCP_RR RTT"
    stage2 = fit_profile(
        runner, settings, name=name, configs=cfgs2, params=params2, targets=targets2,
        data_files=data_files, base_profile=host_name, state=state,
        description=f"This machine's namespace testbed ({title}): {host_name} plus the OVS netdev datapath's "
                    + what,
        method_note="target: the mean ping RTT of the 1-bridge, qdisc=none OVS runs (one probe every 10 ms)"
                    + note + "; the other parameters fixed at " + host_name + "; sigma = std/sqrt(n) of the runs",
        x0=x0, max_evals=14 + 8 * (len(params2) - 1))
    return df, state, host, stage2


def run(runner: Runner, settings: Settings, data: Path = DATA) -> list[TestbedResult]:
    df, state, (host_path, res), (path, res_stall) = fit_state(runner, settings, (data, *QUIET[1:]))
    keys = ["bridge", "chain", "link", "qdisc"]
    measured_wl = df.groupby(keys)["workload"].unique()
    fit_keys = FIT_KEYS
    # -- predict everything measured -----------------------------------------------------------
    cfgs = []
    for k, wls in measured_wl.items():
        wls = [w for w in wls if w in WORKLOADS]
        if not wls:
            continue
        if settings.fast and _label(*k) not in ("ovs-2-patch", "linux-1-tbf50"):
            continue
        cfgs.append(_config(*k, wls))
    sims = runner.run(cfgs, str(path), reps=settings.reps, seed=2026)
    tb = TestbedResult("local_netns", "This machine: namespace testbed (data/local/2026-11-24/local-bridges, quiet)",
                       profile=shown(path))
    shaped = TestbedResult("local_qdiscs", "Issue 4: HTB, TBF and pfifo_fast against the real kernel (this machine)",
                           profile=shown(path), section="qdiscs")
    tb.split = ("Fitted on the 1-bridge unshaped runs of OVS and Linux bridge in two stages: TCP throughput, "
                "TCP_RR RTT and the Linux bridge's ping mean (6 parameters, 5 targets: OVS's CPU cost per packet, "
                "its non-CPU latency, the veth crossing, the Linux bridge's forwarding, the receive stack and the "
                "application's wake-up on TCP_RR, which ping does not pay; `calibration/local_netns_host.toml`; "
                "six parameters on five targets leave one direction undetermined), then, with those fixed, the OVS "
                "datapath thread's wake-up after idling on the 1-bridge OVS ping mean and the share of a netdev pass "
                "that is its delivery into the receiving stack (`ovs.deliver_share`) and the thread's main-loop run "
                "per bridge (`ovs.bridge_run`) on the 2-bridge veth chain's TCP throughput and TCP_RR "
                "RTT (`calibration/local_netns.toml`). Fixed, measured: the idle exit (`host.idle_exit`, the collector's spaced "
                "ping) and the cold core's slowdown after it (`host.cold_factor`, validation/chain_ping/probe.sh). Held out: chains of 2 and 4 bridges (patch ports, "
                "veth pairs) but those two rows, with their pings, qdisc configurations, UDP and jitter runs, and every ping RTT distribution's "
                f"shape. Machine state of the data: {state}.")
    shaped.split = ("Nothing about the qdiscs is fitted: the shaped rate (50 Mbit/s) and the qdiscs' parameters "
                    "come from the campaign file, the host parameters from the unshaped fit.")
    tb.fit = fit_summary(res, host_path)
    stall = fit_summary(res_stall, path)          # stage 2's parameter joins stage 1's in the report
    for part in ("params", "ci95", "uncertainty"):
        if stall.get(part):
            tb.fit[part] = {**tb.fit.get(part, {}), **stall[part]}
    for c in cfgs:
        k = (c.facts["bridge"], c.facts["chain"], c.facts["link"], c.facts["qdisc"])
        sel = df[(df["bridge"] == k[0]) & (df["chain"] == k[1]) & (df["link"] == k[2]) & (df["qdisc"] == k[3])]
        sim = sims[c.label]
        for wl, mm, f, sm, unit, metric in METRICS:
            runs = sel[(sel["workload"] == wl) & (sel["metric"] == mm)]["value"].to_numpy(float) * f
            if runs.size == 0:
                continue
            y, lo, hi = mean_ci(runs)
            m, slo, shi = mean_ci(sim.values(wl, sm))
            kind = metric
            if metric == "throughput" and k[3] in SHAPED:
                kind = "shaped_throughput"
            split = ("in-sample" if (k in fit_keys and wl in ("tcp", "rr", "ping"))
                     or (k == CHAIN_FIT_KEY and wl in CHAIN_FIT_WORKLOADS) else "held-out")
            row = Comparison(tb.name, f"{c.label} {wl}", metric, unit, y, lo, hi, m, slo, shi, split, kind,
                             note=f"{runs.size} runs")
            (shaped if k[3] in SHAPED or k[3] == "pfifo_fast" else tb).rows.append(row)
    _ping_distributions(tb, df, sims, cfgs, data, settings)
    _figures(tb, shaped, settings)
    notes(tb, shaped)
    shaped.notes.append(
        "This campaign measured no RTT *under load*; issue 4's RTT-under-load check is the next section's, from "
        "`data/local/local-load` (ping every 10 ms alongside the shaped iperf3 flow).")
    return [tb, shaped]


def _ping_distributions(tb: TestbedResult, df, sims, cfgs, data: Path, settings: Settings) -> None:
    from ..collect.store import load_samples
    try:
        samples = load_samples(data, "rtt")
    except Exception as exc:  # noqa: BLE001 - report, don't die, if the samples are unreadable
        tb.notes.append(f"Ping samples could not be read ({exc}); no ECDFs.")
        return
    samples = samples[samples["workload"] == "ping"]
    series = []
    for c in cfgs:
        if c.facts["qdisc"] != "none" or "ping" not in {w["name"] for w in c.scenario["workload"]}:
            continue
        f = c.facts
        sel = samples[(samples["bridge"] == f["bridge"]) & (samples["chain"] == f["chain"]) &
                      (samples["link"] == f["link"]) & (samples["qdisc"] == f["qdisc"])]
        meas = sel["value"].to_numpy(float) * 1e3
        sim = np.asarray(sims[c.label].samples.get("ping:rtt", []), float) * 1e3
        if meas.size == 0 or sim.size == 0:
            continue
        d = ks_distance(meas, sim)
        tb.rows.append(Comparison(tb.name, f"{c.label} ping", "ks_rtt", "KS", float("nan"), float("nan"),
                                  float("nan"), d, float("nan"), float("nan"),
                                  # the stall share was fitted on this configuration's ping mean
                                  "in-sample" if c.label in ("ovs-1", "linux-1") else "held-out", "ks",
                                  band="-", note=f"{meas.size} measured / {sim.size} simulated RTTs"))
        series.append((c.label, meas, sim))
    tb.extra["ping_series"] = [(lab, meas.size, sim.size) for lab, meas, sim in series]
    for bridge in ("ovs", "linux"):
        sub = [s for s in series if s[0].startswith(bridge)]
        if not sub:
            continue
        colours = ["C0", "C1", "C2", "C3", "C4", "C5"]
        lines = []
        for i, (lab, meas, sim) in enumerate(sub):
            lines.append((f"{lab} measured", meas, f"{colours[i % 6]}-"))
            lines.append((f"{lab} simulated", sim, f"{colours[i % 6]}--"))
        fn = f"local_ping_ecdf_{bridge}.png"
        plots.ecdfs(settings.figures_dir / fn, f"This machine, {bridge}: ping RTT", "RTT (ms)", lines, logx=True)
        tb.figures.append((fn, f"Ping RTT ECDFs, {bridge}: measured (solid) vs simulated (dashed); all held out"))


def _figures(tb: TestbedResult, shaped: TestbedResult, settings: Settings) -> None:
    for res, prefix in ((tb, "local"), (shaped, "local_qdisc")):
        for metric, unit in (("throughput", "Mbit/s"), ("rtt", "ms"), ("jitter", "ms")):
            rows = [r for r in res.rows if r.metric == metric]
            if not rows:
                continue
            fn = f"{prefix}_{metric}.png"
            plots.bars(settings.figures_dir / fn, f"{res.title.split(':')[0]}: {metric}", f"{metric} ({unit})", rows)
            res.figures.insert(0, (fn, f"{metric}: measured (grey, 95% CI over runs) vs simulated "
                                       f"(blue in-sample, red held-out; 95% CI over {settings.reps} replications)"))


def notes(tb: TestbedResult, shaped: TestbedResult) -> None:
    get = {(r.config, r.metric): r for r in tb.rows + shaped.rows}
    o_tcp, o_rr = get.get(("ovs-1 tcp", "throughput")), get.get(("ovs-1 rr", "rtt"))
    l_tcp, l_rr = get.get(("linux-1 tcp", "throughput")), get.get(("linux-1 rr", "rtt"))
    if o_tcp and o_rr and l_tcp and l_rr:
        tb.notes.append(
            f"**OVS (userspace netdev datapath): latency that is not CPU work.** With every OVS step as CPU "
            "work, the per-packet time that makes the netdev datapath's RTT also caps its packet rate, and no fit "
            "gives both. The netdev datapath's latency on this machine is mostly *not* CPU work (the non-PMD "
            "thread's wake-ups and polling, batching), so the fit has `ovs.latency`, a per-pass latency that holds "
            f"no core: OVS TCP_RR RTT {o_rr.measured * 1e3:.0f} us measured, {o_rr.simulated * 1e3:.0f} us "
            f"simulated; TCP {o_tcp.measured:.0f} vs {o_tcp.simulated:.0f} Mbit/s. Linux bridge: "
            f"{l_tcp.measured:.0f} vs {l_tcp.simulated:.0f} Mbit/s, TCP_RR {l_rr.measured * 1e3:.0f} vs "
            f"{l_rr.simulated * 1e3:.0f} us (measured vs simulated).")
    wake = (tb.fit.get("params") or {}).get("ovs.idle_wake")
    if wake is not None:
        tb.notes.append(
            "**OVS pings: the netdev thread's wake-up after idling depends on the machine's state.** On this "
            "quiet machine (cpu_busy 0.02 during the ping runs) every ping through OVS took ~0.1 ms more than "
            "qperf's tcp_lat round trip (0.23 vs 0.13 ms, 1 bridge) and almost none (0-0.2 %) took the extra "
            "timer tick that 18-28 % took on the busy machine of 22 Nov (cpu_busy 1.0; section 'Across "
            "states'). The model's thread, woken after idling more than `ovs.idle_after`, finds its core "
            "idle with probability 1 - cpu_busy and pays `ovs.idle_wake` (fitted on the 1-bridge ping mean: "
            f"{wake}), else busy and waits a tick with probability `ovs.idle_stall_prob` (fitted on the busy "
            "day). TCP_RR wakes its reader on both ends, ping none (its echo is answered in softirq): on this "
            "quiet machine the reader's core is idle (a halted vCPU), so the fit puts that wake-up in "
            "`app.idle_wake`, paid with the idle share 1 - cpu_busy.")
    lines = []
    for bridge, link in (("ovs", "patch"), ("ovs", "veth"), ("linux", "veth")):
        base = get.get((f"{bridge}-1 tcp", "throughput"))
        for n in (2, 4):
            r = get.get((f"{bridge}-{n}-{link} tcp", "throughput"))
            if base and r and base.measured and base.simulated:
                lines.append(f"{bridge} {link} x{n}: measured {r.measured / base.measured:.2f}, "
                             f"simulated {r.simulated / base.simulated:.2f}")
    if lines:
        tb.notes.append(
            "**Chains** (TCP throughput relative to 1 bridge): " + "; ".join(lines) + ". Patch ports cost nothing "
            "in the model's fast path (`patch.translate` = 0; seed 003's flat curve). A veth pair costs what the "
            "namespace's veth costs, fitted on the 1-bridge rows (the same driver path, `veth_xmit` -> "
            "`__netif_rx` -> `process_backlog`: ovssim/topology.py `veth_cost_key`; the default profile's 2 us "
            "per skb before, which took a 2-bridge Linux-bridge chain to 0.45 of one bridge's throughput), plus "
            "the next bridge's forwarding or one more datapath pass -- for the "
            "netdev datapath a pass without its delivery into the receiving stack (`ovs.deliver_share` of a pass "
            "is that delivery, fitted on the 2-bridge row), since a middle bridge's sendto() only queues the frame "
            "on the next bridge's AF_PACKET socket. There it waits for the rest of ovs-vswitchd's main-loop run, "
            "which runs every bridge (`ofproto_run`) before poll() returns: bridges x `ovs.bridge_run` (fitted on "
            "the 2-bridge row's TCP_RR), so the wait grows with the chain, as measured (each extra veth-linked "
            "bridge adds 60 us per pass to a TCP_RR round trip at 2 bridges, 81 us at 4), and through patch "
            "ports a reply that comes back before the run's end waits for it too.")
    chain = [get.get((f"linux-{n}{'-veth' if n > 1 else ''} ping", "rtt")) for n in (1, 2, 4)]
    if all(chain):
        us = lambda v: f"{v * 1e3:.0f}"
        tb.notes.append(
            "**Lone pings pay a cold core.** Pings 10 ms apart find the sender's core halted: each pays the idle "
            "exit (`host.idle_exit`), and its path then runs on a core whose caches the idle state lost. "
            f"{cold_start().describe()}; the model runs a core's first `host.cold_work` of work after an exit that "
            "many times slower (ovssim/cpu/pool.py), and the fit takes the collector's measured exit less the spaced "
            "ping's own cold work. Linux-bridge pings through 1 / 2 / 4 bridges: measured "
            + " / ".join(us(r.measured) for r in chain) + " us, simulated "
            + " / ".join(us(r.simulated) for r in chain) + " us (bulk frames, which never find the core halted, "
            "pay the warm cost).")
    ks = [(r.config.split()[0], r.simulated) for r in tb.rows if r.metric == "ks_rtt"]
    if ks:
        pings = {r.config.split()[0]: r for r in tb.rows if r.metric == "rtt" and r.config.endswith(" ping")}
        desc = "; ".join(f"{c}: KS {d:.2f}, mean {pings[c].measured:.3f} vs {pings[c].simulated:.3f} ms"
                         for c, d in ks if c in pings)
        tb.notes.append(
            f"**Ping RTT distributions** (measured vs simulated): {desc}. The simulated ICMP path uses the host "
            "stack delay fitted on TCP_RR and, through OVS, the datapath latency fitted on TCP_RR. The "
            "measured series include the first packet after a flow purge (the upcall) and scheduling outliers of "
            "a shared 2-core VM, which widen the measured ECDF's tail.")
    tb.notes.append(
        "**Noise.** These data were taken on a quiet machine (`cpu_busy` 0.01-0.05 during the ping runs, load "
        "average 0.7-0.9), yet unshaped TCP throughput still varies by +-10-15 % between runs (1-bridge OVS: "
        "interquartile 931-1116 Mbit/s), so the 3% target is tighter than the measurement itself.")
    shaped.notes.append(
        "**Shaped TCP throughput** (HTB via the OVS QoS table or tc, TBF via tc, both at 50 Mbit/s) is predicted "
        "from the qdisc parameters alone, without fitting; these rows are the check of issue 4 (target 2%).")
    shaped.notes.append(
        "**Shaped UDP and jitter.** A 40 Mbit/s UDP stream through a 50 Mbit/s shaper should pass whole; where the "
        "simulated UDP throughput is below 40 Mbit/s the simulated iperf measured over a shortened interval, or the "
        "shaper dropped datagrams -- read the rows before trusting either. The udp40 runs are iperf3's and are "
        "simulated with its sender (`tool = \"iperf3\"`): its 1 ms pacing timer sends bursts of 3-4 datagrams, "
        "HTB's one-packet bucket spreads them (jitter ~0.17-0.18 ms simulated) and TBF's 25 kB bucket passes them "
        "whole. On a quiet machine the real ones agree (`validation/iperf3_pacing_check.md`: 0.176 ms measured "
        "behind tc htb vs 0.170 simulated; `data/local/2026-11-24`: 0.18 / 0.20 ms Linux / OVS behind HTB, "
        "0.010-0.016 ms behind TBF); this dataset's 0.29-0.35 ms behind HTB were measured on a busy machine, where "
        "iperf3's timer wakes late and its bursts grow, which the model (timer slack 50 us) does not follow. "
        "OVS's userspace datapath adds jitter of its own (0.13-0.17 ms here even unshaped and with iperf 2's even "
        "spacing: its polling and batching), which the model lacks.")
    shaped.notes.append(
        "**pfifo_fast** on an unshaped veth port behaves as the port default (noqueue) in the model; the "
        "pfifo_fast rows are held-out repeats of the unshaped configuration.")
