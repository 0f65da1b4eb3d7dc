"""Seed 002 (XenServer two-host): ping RTT of Table V, and the TCP throughput of Table IV.

Split: ``calibration/xenserver_two_host.toml`` is fitted on the **non-virtual**
and **same-host** RTT means of Table V (2 parameters: the NIC/host receive
delay and the PV vif's backend delay); the **different-hosts** RTT and the
TCP throughput of Table IV are held out.  The paper gives mean, min and max
only, so there is no measured CI and no measured ECDF: the "band" of a row is
the rounding band of the printed mean.
"""
from __future__ import annotations

from ..fit.calibrate import Param, Target, target_sigma
from . import plots
from .base import shown, Settings, TestbedResult, fit_profile, fit_summary, load_scenario_dict, variant
from .compare import Comparison, mean_ci
from .seed_data import SEED_DIR, xenserver_table
from .simulate import Config, Runner


def _config(virtual: bool, tcp: bool = False, udp_rate: float | None = None) -> Config:
    base = load_scenario_dict("xenserver_two_host.toml")
    edits = {}
    if not virtual:
        for vm in ("vm1", "vm2", "vm3"):
            edits[f"vm.{vm}"] = {"vif": "bare-metal"}
    wl = [w for w in base["workload"] if virtual or w["name"] == "ping_diff"]
    label = "virtual" if virtual else "non-virtual"
    if tcp:
        wl = [{"name": "tcp", "tool": "netperf", "test": "TCP_STREAM", "from": "vm1", "to": "vm3", "l": "0.3s"}]
        edits["scenario"] = {"duration": "0.3s"}
        label = "tcp"
    if udp_rate is not None:     # Table IV's UDP stream (NTttcp UDP; iperf's 1470-byte datagrams stand in)
        wl = [{"name": "udp", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm3", "b": int(udp_rate),
               "l": 1470}]
        edits["scenario"] = {"duration": "0.3s"}
        label = "udp"
    return Config(label, variant(base, workloads=wl, **edits), {"virtual": virtual})


def run(runner: Runner, settings: Settings) -> list[TestbedResult]:
    t5 = xenserver_table("Table V")
    t4 = xenserver_table("Table IV", derived=True)
    csv = SEED_DIR / "seed002_xenserver_tables.csv"
    fit_cfgs = [_config(True), _config(False)]
    targets = []
    for label, wl, case in (("virtual", "ping_same", "vms_same_host"), ("non-virtual", "ping_diff", "non_virtual")):
        y = float(t5.loc[case, "mean"])
        sigma, how = target_sigma(y, resolution=0.01, rel_sigma=0.01)
        targets.append(Target(f"{label}/{wl}", "rtt_mean", y, sigma, "ms", source=how))
    params = [Param.parse("nic.rx_delay:scale=2us..200us"),
              Param.parse("vif.xen-vif.backend_delay:scale=2us..200us")]
    path, res = fit_profile(runner, settings, name="xenserver_two_host", configs=fit_cfgs, params=params,
                            targets=targets, data_files=[csv],
                            description="Seed 002 XenServer two-host testbed: fitted on Table V's non-virtual and "
                                        "same-host RTT means; different-hosts RTT and TCP throughput held out",
                            method_note="targets: Table V means (ms), sigma = rounding band floored at 1%",
                            x0={"nic.rx_delay:scale": 60e-6, "vif.xen-vif.backend_delay:scale": 40e-6},
                            max_evals=2 * settings.max_evals)
    t6 = xenserver_table("Table VI")
    udp_rate = float(t4.loc["udp_untagged", "mean"]) * 1e6
    cfgs = [_config(True), _config(False)] + ([] if settings.fast else [_config(True, tcp=True),
                                                                        _config(True, udp_rate=udp_rate),
                                                                        _config_dom0(_hold()[1])])
    sims = runner.run(cfgs, str(path), reps=settings.reps, seed=202)
    tb = TestbedResult("xenserver_two_host", "Seed 002: XenServer, two hosts (ping RTT, TCP)",
                       profile=shown(path))
    tb.split = ("Fitted on Table V's non-virtual and same-host RTT means (2 parameters, 2 targets); the "
                "different-hosts RTT and Table IV's TCP throughput are held out.")
    tb.fit = fit_summary(res, path)
    for label, wl, case, split in (("virtual", "ping_same", "vms_same_host", "in-sample"),
                                   ("virtual", "ping_diff", "vms_different_hosts", "held-out"),
                                   ("non-virtual", "ping_diff", "non_virtual", "in-sample")):
        y = float(t5.loc[case, "mean"])
        m, lo, hi = mean_ci(sims[label].values(wl, "rtt_mean"))
        tb.rows.append(Comparison(tb.name, case, "rtt", "ms", y, y - 0.005, y + 0.005, m, lo, hi, split, "rtt",
                                  band="rounding band",
                                  note=f"published min {t5.loc[case, 'min']:g}, max {t5.loc[case, 'max']:g} ms"))
    if "virtual-dom0" in sims:
        # Table V's maxima: the ms tails of a vCPU (or netback) waking while dom0 holds its core
        for wl, case in (("ping_same", "vms_same_host"), ("ping_diff", "vms_different_hosts")):
            y = float(t5.loc[case, "max"])
            m, lo, hi = mean_ci(sims["virtual-dom0"].values(wl, "rtt_max"))
            tb.rows.append(Comparison(tb.name, f"{case} with dom0 (max)", "rtt_max", "ms", y, y / 2, y * 2,
                                      m, lo, hi, "held-out", "", band="factor 2 (issue 16)",
                                      note="Table V maximum; dom0 and the vCPUs as host threads (Tables VII/VIII)"))
    if "tcp" in sims:
        y = float(t4.loc["tcp_untagged", "mean"])
        m, lo, hi = mean_ci(sims["tcp"].values("tcp", "throughput"))
        tb.rows.append(Comparison(tb.name, "TCP VMs different hosts", "throughput", "Mbit/s", y, float("nan"),
                                  float("nan"), m, lo, hi, "held-out", "throughput", band="-",
                                  note="Table IV (MB/s x 8.388608); simulated with Table I's 1000 Mbit/s NICs"))
    for label, case in (("tcp", "tcp_untagged"), ("udp", "udp_untagged")):
        if label not in sims:
            continue
        # Table VI: the VM's CPU during the Table IV stream; the model's sending guest vCPU (issue 16 report)
        y = float(t6.loc[case, "mean"])
        m, lo, hi = mean_ci(sims[label].values("system", "cpu_util.vm1.vcpu0"))
        tb.rows.append(Comparison(tb.name, f"{label.upper()} sender vCPU", "cpu_utilisation", "%", y,
                                  float(t6.loc[case, "min"]), float(t6.loc[case, "max"]), m, lo, hi, "held-out", "",
                                  band="published min-max", note="Table VI (NTttcp, no VLAN tag)"))
    if "tcp" in sims and "udp" in sims:
        y = float(t6.loc["udp_untagged", "mean"]) / float(t6.loc["tcp_untagged", "mean"])
        r = (sims["udp"].values("system", "cpu_util.vm1.vcpu0")
             / sims["tcp"].values("system", "cpu_util.vm1.vcpu0"))
        m, lo, hi = mean_ci(r)
        tb.rows.append(Comparison(tb.name, "UDP / TCP sender vCPU", "cpu_utilisation_ratio", "1", y, float("nan"),
                                  float("nan"), m, lo, hi, "held-out", "", band="-",
                                  note="Table VI means 57.56 % / 5.42 %"))
    if not settings.fast:
        _scheduling_rows(tb)
    rows = [r for r in tb.rows if r.metric == "rtt"]
    plots.bars(settings.figures_dir / "seed002_rtt.png", "Seed 002 Table V: ping RTT", "RTT (ms)", rows)
    tb.figures.append(("seed002_rtt.png", "Table V mean RTT (grey, rounding band) vs simulated"))
    series = [(lab, sims[c].samples.get(f"{wl}:rtt", []) * 1e3, st) for lab, c, wl, st in
              (("same host", "virtual", "ping_same", "C0-"), ("different hosts", "virtual", "ping_diff", "C1-"),
               ("non-virtual", "non-virtual", "ping_diff", "C2-"))]
    plots.ecdfs(settings.figures_dir / "seed002_rtt_ecdf.png", "Seed 002: simulated ping RTT", "RTT (ms)", series)
    tb.figures.append(("seed002_rtt_ecdf.png", "Simulated ping RTT ECDFs (the paper gives min/mean/max only: "
                                               f"same host {t5.loc['vms_same_host', 'min']:g}/"
                                               f"{t5.loc['vms_same_host', 'mean']:g}/{t5.loc['vms_same_host', 'max']:g} ms)"))
    tb.notes.append(
        "**Different hosts** is the held-out RTT: the two fitted delays (NIC/host receive and PV vif backend), "
        "composed by the model along the longer path (two vif crossings, two NIC crossings each way), predict it. "
        "The paper's min/max (e.g. 0.34-12.44 ms) show a heavy tail that a single log-normal per element cannot "
        "produce; the default profile's mixture for the Xen VIF had to be replaced by a log-normal to be "
        "calibrated (see the scenario's [params]), so tail quantiles are not validated here.")
    if "virtual-dom0" in sims:
        same = sims["virtual-dom0"].values("ping_same", "rtt_mean")
        tb.notes.append(
            "**RTT maxima** (Table V, held out): the virtual case again with each host's dom0 and the guests' "
            "vCPUs as host threads (the Tables VII/VIII fit: dom0 holds a core up to "
            f"{_hold()[1] * 1e3:.2f} ms about once a second), and the paper's 5000 pings 0.2 s apart. A ping "
            "whose vCPU or netback thread wakes while dom0 holds its core waits up to that hold: the ms tail. "
            "The maxima are single extreme values of one run each, so a factor of 2 is the allowance. The same "
            f"run's same-host mean is {float(same.mean()):.3f} ms (fitted without dom0: the rows above), so "
            "dom0's turns cannot be much more frequent than assumed. The non-virtual maximum (12.3 ms, no "
            "hypervisor) and most of the different-hosts one show waits the model does not have (the hosts' "
            "own housekeeping, the physical switch).")
    tb.notes.append(
        "**Guest CPU** (Table VI, held out): the sending VM's vCPU utilisation during the TCP and UDP streams "
        "(the paper: 5.4 % vs 57.6 %), as `cpu_util.vm1.vcpu0` -- the guest work the model charges (the "
        "application's per-send and per-segment costs, software GSO), not a fitted figure.")
    tb.notes.append(
        "**TCP throughput** (Table IV, 94.9 Mbit/s) is simulated with Table I's 1000 Mbit/s NICs and misses by "
        "far: the published value is the TCP goodput of a 100 Mbit/s link, i.e. some 100 Mbit/s element (switch "
        "port, NIC negotiation) the paper does not describe. With `rate = \"100mbit\"` the model gives the same "
        "ceiling as the thesis testbed (~94 Mbit/s). We report the documented configuration's prediction.")
    return [tb]


# dom0's turns: about once a second per core (an assumption, see _scheduling_rows); not a multiple of the
# pings' 0.2 s, or every fifth ping would meet dom0 at the same phase (1.0 s and 1.1 s: same-host max 1.3 ms;
# 0.93, 0.97, 1.03 s: 3.6-3.7 ms)
DOM0_PERIOD = 0.97


def _hold() -> tuple[float, float]:
    """(loop, hold): the probe's loop (Table VII's minimum) and how long Xen runs dom0 before a guest's vCPU
    gets its core back (Table VII's VM maximum less the loop and one context switch): closed-form fit."""
    from ..cpu.defaults import CONTEXT_SWITCH
    t7 = xenserver_table("Table VII")
    loop = float(t7.loc["1vm_1proc", "min"]) * 1e-6
    return loop, float(t7.loc["1vm_1proc", "max"]) * 1e-6 - loop - CONTEXT_SWITCH


def _dom0(cores: int, hold: float) -> dict:
    """A XenServer host's dom0 as scenario keys: one vCPU per core, busy for two turns of ``hold`` once per
    ``DOM0_PERIOD``; a guest's vCPU that needs the core waits at most ``hold`` (the host's slice)."""
    return {"background_threads": cores, "background_period": DOM0_PERIOD, "background_on": 2 * hold,
            "sched_slice": hold}


def _config_dom0(hold: float) -> Config:
    """The virtual case with dom0 on both hosts and the guests' vCPUs as host threads: Table V's tails."""
    c = _config(True)
    edits = {f"host.{h['name']}": _dom0(h["cores"], hold) for h in c.scenario["host"]}
    seen: dict = {}
    for v in c.scenario["vm"]:              # each host's guests pinned to its cores in turn, as the probe's
        i = seen[v["host"]] = seen.get(v["host"], -1) + 1
        cores = next(h["cores"] for h in c.scenario["host"] if h["name"] == v["host"])
        edits[f"vm.{v['name']}"] = {"vcpus_on_host": True, "vcpu_pin": [[i % cores]]}
    # maxima grow with the sample: the paper's 5000 probes 0.2 s apart (cheap: nothing else runs)
    pings = [{**w, "c": 5000, "i": "0.2s"} for w in c.scenario["workload"]]
    edits["scenario"] = {"duration": "1001s"}
    return Config("virtual-dom0", variant(c.scenario, workloads=pings, **edits), {"virtual": True, "dom0": True})


def _probe(vms: int, physical: bool, loop: float, hold: float, duration: float = 2 * DOM0_PERIOD):
    """Tables VII/VIII's probe on one XenServer host (the scenario's cores): ``vms`` guests of one vCPU
    each running the loop (or, ``physical``, as many processes on the bare host, no dom0).  Returns the
    first guest's (process's) report intervals."""
    import simpy
    from ..cpu import CpuPool, GuestCpus, Thread
    from ..cpu.probe import scheduling_gaps
    env = simpy.Environment()
    cores = load_scenario_dict("xenserver_two_host.toml")["host"][0]["cores"]
    if physical:
        host = CpuPool(env, cores, "xs1")
        loops = [(host, host.add_thread(Thread(f"probe{i}", "app"))) for i in range(vms)]
    else:
        d = _dom0(cores, hold)
        host = CpuPool(env, cores, "xs1", slice=d["sched_slice"])
        host.add_background(d["background_threads"], period=d["background_period"], on=d["background_on"])
        guests = [GuestCpus(env, 1, f"vm{i}", host, pin=[[i % cores]]) for i in range(vms)]
        loops = [(g, g.add_thread(Thread("probe", "app"))) for g in guests]
    return scheduling_gaps(loops, duration, loop)[0]


def _scheduling_rows(tb: TestbedResult) -> None:
    """Tables VII and VIII: the probe's scheduling time in a VM and on the bare host (us).

    Fitted in closed form on Table VII's VM row (:func:`_hold`).  Held out: Table VIII (two VMs, two
    processes) and the bare host's rows."""
    t7, t8 = xenserver_table("Table VII"), xenserver_table("Table VIII")
    loop, hold = _hold()
    cases = (("Table VII", t7, "1vm_1proc", 1, False, "VM, 1 process"),
             ("Table VII", t7, "physical_1proc", 1, True, "bare host, 1 process"),
             ("Table VIII", t8, "2vm_1proc_each", 2, False, "2 VMs, 1 process each"),
             ("Table VIII", t8, "physical_2proc", 2, True, "bare host, 2 processes"))
    for table, t, case, n, physical, label in cases:
        g = _probe(n, physical, loop, hold) * 1e6
        fitted = case == "1vm_1proc"
        for stat, sim in (("mean", float(g.mean())), ("max", float(g.max()))):
            y = float(t.loc[case, stat])
            lo, hi = (y - 0.5, y + 0.5) if stat == "mean" else (y / 2, y * 2)
            tb.rows.append(Comparison(tb.name, f"{table} {label} ({stat})", "scheduling_time", "us", y, lo, hi,
                                      sim, sim, sim, "in-sample" if fitted else "held-out", "",
                                      band="rounding band" if stat == "mean" else "factor 2 (issue 16)",
                                      note=f"{table}, published min {t.loc[case, 'min']:g} us"))
    tb.notes.append(
        "**Scheduling time** (Tables VII, VIII): the authors' probe loop (`ovssim.cpu.probe`) in a one-vCPU "
        "guest whose vCPU is a thread of the host's cores (two-level scheduling, `ovssim.cpu.GuestCpus`), "
        "each guest's vCPU pinned to a core of its own (the paper does not say; unpinned, the model's wake-up "
        "balancing moves a vCPU to the other core whenever dom0 takes its own, and no wait shows). "
        f"Fitted in closed form on Table VII's VM row: the loop is its minimum ({loop * 1e6:.0f} us) and the "
        f"time Xen runs dom0 before the guest's vCPU gets its core back is its maximum less the loop and a "
        f"context switch ({hold * 1e3:.3f} ms, the host's `sched_slice`). dom0 is one vCPU per core, busy for "
        f"two such turns once every {DOM0_PERIOD:g} s (phases spread over the cores): the paper does not say "
        "what dom0 ran or how often; "
        "Table VII's mean (2 us) only bounds dom0's share below ~20 %, and Table V's ping means (fitted "
        "without dom0) leave room for ~1 % at most (each vCPU or netback wake-up that lands in a turn waits "
        "up to 3 ms). The probe is deterministic (no CI); it runs two dom0 periods. Held out: Table VIII -- "
        "the model places the two VMs' vCPUs on the two cores and never lets them meet (no periodic load "
        "balancing), so it predicts Table VII again, where the measured maximum doubled -- and the bare "
        "host, where the model has no housekeeping work (interrupts, timers, kernel threads) to delay a "
        "process at all.")
