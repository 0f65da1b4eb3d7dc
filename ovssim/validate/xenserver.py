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
