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
                                                                        _config(True, udp_rate=udp_rate)])
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


XEN_ACCT_PERIOD = 30e-3      # xen/common/sched_credit.c: 30 ms tslice = 3 ticks of 10 ms (credit accounting)


def _probe(vms: int, physical: bool, loop: float, hold: float, duration: float = 0.3):
    """Tables VII/VIII's probe on one 2-core XenServer host (the scenario's): ``vms`` guests of one
    vCPU each running the loop (or, ``physical``, as many processes on the bare host); dom0 is one
    bursty vCPU per core, busy ``2 * hold`` in every credit accounting period, and Xen hands the core
    back to a guest after ``hold`` (the host pool's slice).  Returns the first guest's (process's) gaps."""
    import simpy
    from ..cpu import CpuPool, GuestCpus, Thread
    from ..cpu.probe import scheduling_gaps
    env = simpy.Environment()
    cores = load_scenario_dict("xenserver_two_host.toml")["host"][0]["cores"]
    host = CpuPool(env, cores, "xs1", slice=hold)
    if physical:
        threads = [(host, host.add_thread(Thread(f"probe{i}", "app"))) for i in range(vms)]
    else:
        for c in range(cores):
            host.add_background(1, affinity=[c], period=XEN_ACCT_PERIOD, on=2 * hold)
        guests = [GuestCpus(env, 1, f"vm{i}", host) for i in range(vms)]
        threads = [(g, g.add_thread(Thread("probe", "app"))) for g in guests]
    gaps = None
    for pool, th in reversed(threads):      # the first one last: the others' loops already hold their cores
        gaps = scheduling_gaps(pool, th, duration, loop)
    return gaps


def _scheduling_rows(tb: TestbedResult) -> None:
    """Tables VII and VIII: the probe's scheduling time in a VM and on the bare host (us).

    Fitted in closed form on Table VII's VM row: the loop is its minimum (2 us) and the time Xen
    gives dom0 before returning to the guest's vCPU is its maximum less the loop.  Held out: Table
    VIII (two VMs, two processes) and the bare host's rows."""
    t7, t8 = xenserver_table("Table VII"), xenserver_table("Table VIII")
    loop = float(t7.loc["1vm_1proc", "min"]) * 1e-6
    hold = float(t7.loc["1vm_1proc", "max"]) * 1e-6 - loop
    hold -= 2e-6                                     # the context switch back (ovssim.cpu.defaults)
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
        "guest whose vCPU is a thread of the host's cores (two-level scheduling). Fitted in closed form on "
        f"Table VII's VM row: the loop is its minimum ({loop * 1e6:.0f} us) and the time Xen runs dom0 before "
        f"the guest's vCPU gets its core back is its maximum less the loop ({hold * 1e3:.3f} ms); dom0 is one "
        "vCPU per core busy for two such turns in every 30 ms credit accounting period (sched_credit.c; an "
        "assumption, the paper does not say what dom0 ran). The simulation is deterministic (no CI). Held out: "
        "Table VIII -- the model places the two VMs' vCPUs on the two cores and never lets them meet (no "
        "periodic load balancing), so it predicts Table VII again, where the measured maximum doubled -- and "
        "the bare host, where the model has no housekeeping work (interrupts, timers, kernel threads) to "
        "delay a process at all.")
