"""Simulation-based calibration (ovssim.fit.calibrate)."""
import copy
import math

import numpy as np
import pandas as pd
import pytest

from ovssim.errors import ConfigError, DataError
from ovssim.fit.calibrate import (Param, SimulationModel, Target, calibrate, overrides_for, parse_mapping,
                                  target_sigma, targets_from_table)
from ovssim.validate.seed_data import SEED_DIR


def test_param_parsing():
    p = Param.parse("vif.kvm-tap.backend_delay:scale=5us..100us")
    assert (p.name, p.field, p.is_time, p.log) == ("vif.kvm-tap.backend_delay", "scale", True, True)
    assert p.lo == pytest.approx(5e-6) and p.hi == pytest.approx(1e-4)
    q = Param.parse("ovs.upcall:s=0.1..1.5")
    assert not q.is_time and q.lo == 0.1
    r = Param.parse("vif.kvm-tap.cpu_per_packet=0us..20us")
    assert r.field is None and r.log is False          # a zero lower bound cannot be searched on a log scale
    for u in (0.0, 0.3, 1.0):
        assert p.to_unit(p.from_unit(u)) == pytest.approx(u)
    for bad in ("ovs.upcall", "ovs.upcall=5us", "ovs.upcall=9us..5us", "x:scale=5us..abc"):
        with pytest.raises(ConfigError):
            Param.parse(bad)


def test_overrides_keep_the_base_distribution_shape():
    base = {"ovs.upcall": {"dist": "lognorm", "s": 0.5, "scale": "100us"}}
    ps = [Param.parse("ovs.upcall:scale=10us..1ms"), Param.parse("ovs.upcall:s=0.1..2")]
    out = overrides_for(ps, {"ovs.upcall:scale": 250e-6, "ovs.upcall:s": 0.8}, base)
    assert out == {"ovs.upcall": {"dist": "lognorm", "s": 0.8, "scale": "250us"}}
    assert base["ovs.upcall"]["scale"] == "100us"   # not mutated


def test_target_sigma_sources():
    assert target_sigma(10.0, ci_low=9.0, ci_high=11.0)[0] == pytest.approx(1 / 1.959964)
    assert target_sigma(10.0, std=2.0, n=16)[0] == pytest.approx(0.5)
    assert target_sigma(90.82, resolution=0.01, rel_sigma=1e-5)[0] == pytest.approx(0.01 / math.sqrt(12))
    assert target_sigma(0.31, rel_sigma=0.02)[0] == pytest.approx(0.0062)


def _cheap_model(noise_seed=None):
    """Two metrics with different dependence on two parameters, like RTT mean and tail."""
    def model(v):
        a, b = v["x:scale"] * 1e6, v["y:s"]
        m1 = 2 * a + 10 * b
        m2 = a * math.exp(2 * b)
        return {("w", "m1"): (m1, 0.01 * m1), ("w", "m2"): (m2, 0.01 * m2)}
    return model


@pytest.mark.parametrize("method", ["least_squares", "Nelder-Mead"])
def test_recovers_parameters_of_a_cheap_model_within_reported_uncertainty(method):
    ps = [Param.parse("x:scale=1us..100us"), Param.parse("y:s=0.1..2")]
    truth = {"x:scale": 20e-6, "y:s": 0.5}
    model = _cheap_model()
    out = model(truth)
    tg = [Target("w", m, out[("w", m)][0] * f, 0.02 * out[("w", m)][0])
          for m, f in (("m1", 1.01), ("m2", 0.99))]     # measured values off by ~1/2 sigma
    res = calibrate(model, ps, tg, method=method)
    assert res.success and not res.at_bound
    for lab, v in truth.items():
        assert abs(res.values[lab] - v) <= 3 * res.std[lab], (lab, res.values[lab], res.std[lab])
        lo, hi = res.ci95[lab]
        assert lo < res.values[lab] < hi
        assert res.std[lab] < 0.2 * v


@pytest.mark.parametrize("method", ["least_squares", "Nelder-Mead"])
def test_a_metric_missing_in_part_of_the_space_does_not_break_the_fit(method):
    """Where the simulation gives no value (the jitter of a stream it lost entirely: NaN), the fit
    steers away instead of failing ('residuals are not finite') or being misled by a NaN objective."""
    ps = [Param.parse("x:scale=1us..100us")]

    def model(v):
        a = v["x:scale"] * 1e6
        return {("w", "m"): (float("nan") if a > 60 else 2 * a, 0.01)}

    # Nelder-Mead starts inside the region without a value; Gauss-Newton (which needs a slope) next to it
    x0 = 70e-6 if method == "Nelder-Mead" else 55e-6
    res = calibrate(model, ps, [Target("w", "m", 40.0, 0.5)], method=method, x0={"x:scale": x0})
    assert np.isfinite(res.objective)
    if method == "Nelder-Mead":
        assert res.values["x:scale"] == pytest.approx(20e-6, rel=0.02)
    else:             # its finite differences straddle the edge: it must not step over it (nor raise)
        assert res.values["x:scale"] <= 60e-6


def test_non_identifiable_parameters_are_reported():
    # both parameters only enter through their sum: no information to split them
    ps = [Param.parse("a=1us..100us"), Param.parse("b=1us..100us")]
    model = lambda v: {("w", "m"): ((v["a"] + v["b"]) * 1e6, 0.01)}  # noqa: E731
    res = calibrate(model, ps, [Target("w", "m", 50.0, 0.5)])
    assert math.isinf(res.std["a"]) and math.isinf(res.std["b"])
    assert "NOT identifiable" in res.uncertainty_method


def test_bootstrap_over_measured_runs():
    ps = [Param.parse("x:scale=1us..100us")]
    model = lambda v: {("w", "m"): (v["x:scale"] * 1e6 * 3, 0.0)}   # noqa: E731
    runs = np.random.default_rng(3).normal(60.0, 3.0, 25)
    tg = [Target("w", "m", runs.mean(), runs.std(ddof=1) / 5, runs=runs)]
    res = calibrate(model, ps, tg, bootstrap=40)
    assert res.values["x:scale"] == pytest.approx(runs.mean() / 3 * 1e-6, rel=2e-3)
    # the bootstrap s.e. of mean/3 is about s/sqrt(n)/3
    assert res.std["x:scale"] == pytest.approx(runs.std() / 5 / 3 * 1e-6, rel=0.35)
    assert "bootstrap" in res.uncertainty_method


def test_targets_from_seed_table_and_tidy_runs():
    seeds = pd.read_csv(SEED_DIR / "seed000_thesis_tables.csv")
    sel = seeds[(seeds.testbed == "thesis_kvm") & (seeds.bridge == "ovs") & (seeds.scheduler == "FIFO")
                & (seeds.table.isin(["Table 3", "Table 4", "Table 5"]))]
    tg = targets_from_table(sel, [parse_mapping("rtt=ping:rtt_mean"), parse_mapping("jitter=udp:jitter"),
                                  parse_mapping("throughput=tcp:throughput")])
    by = {t.metric: t for t in tg}
    assert by["rtt_mean"].value == pytest.approx(0.31) and by["rtt_mean"].unit == "ms"
    assert by["throughput"].value == pytest.approx(90.82)
    assert by["jitter"].sigma > 0
    with pytest.raises(DataError, match="narrow --where"):
        targets_from_table(seeds, [parse_mapping("rtt=ping:rtt_mean")])
    tidy = pd.DataFrame({"run_id": range(6), "metric": "rtt", "value": [310, 300, 320, 305, 315, 310],
                         "unit": "us"})
    (t,) = targets_from_table(tidy, [parse_mapping("rtt=ping:rtt_mean")])
    assert t.value == pytest.approx(0.31) and t.runs.size == 6
    assert t.sigma == pytest.approx(np.std([0.31, 0.30, 0.32, 0.305, 0.315, 0.31], ddof=1) / math.sqrt(6))
    with pytest.raises(ConfigError):
        parse_mapping("rtt->ping")


def _ping_scenario():
    """Two KVM guests on two hosts, OVS bridges, 100 Mbit/s switch (seed 000 Fig. 10), ping every 2 ms."""
    return {
        "scenario": {"name": "calib-ping", "duration": "0.6s", "reps": 4, "seed": 1, "profile": "default"},
        "host": [{"name": "h1", "cores": 4}, {"name": "h2", "cores": 4}],
        "bridge": [{"name": "br0", "host": "h1", "kind": "ovs", "uplink": "eth0"},
                   {"name": "br1", "host": "h2", "kind": "ovs", "uplink": "eth1"}],
        "nic": [{"name": "eth0", "host": "h1", "rate": "100mbit", "switch": "sw0", "qdisc": {"kind": "pfifo"}},
                {"name": "eth1", "host": "h2", "rate": "100mbit", "switch": "sw0", "qdisc": {"kind": "pfifo"}}],
        "switch": [{"name": "sw0"}],
        "vm": [{"name": "vm1", "host": "h1", "vif": "kvm-tap", "bridge": "br0", "qdisc": {"kind": "pfifo"}},
               {"name": "vm2", "host": "h2", "vif": "kvm-tap", "bridge": "br1", "qdisc": {"kind": "pfifo"}}],
        "workload": [{"name": "ping", "tool": "ping", "from": "vm1", "to": "vm2", "i": "0.002s"}],
    }


@pytest.mark.slow
def test_calibration_recovers_simulated_parameters():
    """Data simulated with a known VIF backend delay is calibrated back within the reported uncertainty."""
    from ovssim.runner import run_scenario
    truth = {"vif.kvm-tap.backend_delay:scale": 20e-6, "vif.kvm-tap.backend_delay:s": 0.5}
    measured = copy.deepcopy(_ping_scenario())
    measured["params"] = {"vif.kvm-tap.backend_delay": {"dist": "lognorm", "s": 0.5, "scale": "20us"}}
    meas = run_scenario(measured, reps=6, seed=777).summary.set_index(["workload", "metric"])
    targets = []
    for metric in ("rtt_mean", "rtt_p99"):
        row = meas.loc[("ping", metric)]
        targets.append(Target("ping", metric, row["mean"], (row["ci95_high"] - row["ci95_low"]) / (2 * 1.96)))
    params = [Param.parse("vif.kvm-tap.backend_delay:scale=5us..80us"),
              Param.parse("vif.kvm-tap.backend_delay:s=0.1..1.2")]
    model = SimulationModel(_ping_scenario(), params, reps=4, seed=1)   # other seed than the "measurement"
    # ping RTT statistics are smooth in these parameters: Gauss-Newton needs ~25 simulations
    res = calibrate(model, params, targets, method="least_squares", max_evals=80)
    assert not res.at_bound
    for lab, v in truth.items():
        assert abs(res.values[lab] - v) <= 3 * res.std[lab], (lab, res.values[lab], res.std[lab])
        assert res.std[lab] < 0.25 * v         # and the data did pin it down
    assert all(abs(z) < 1 for z in res.fit_table()["z"])


def test_targets_from_raw_samples_one_statistic_per_run():
    from ovssim.fit.calibrate import targets_from_samples
    rng = np.random.default_rng(2)
    rows = []
    p99 = []
    for run in range(5):
        v = rng.lognormal(np.log(300e-6), 0.3, 400)        # seconds, as the collector stores them
        p99.append(np.quantile(v, 0.99) * 1e3)
        rows.append(pd.DataFrame({"run_id": f"r{run}", "series": "rtt", "index": range(400), "value": v,
                                  "unit": "s"}))
    rows.append(pd.DataFrame({"run_id": "r0", "series": "seq", "index": [0], "value": [1.0], "unit": "count"}))
    df = pd.concat(rows)
    (t,) = targets_from_samples(df, [parse_mapping("samples:rtt:p99=ping:rtt_p99")])
    assert t.unit == "ms" and t.runs.size == 5
    assert t.value == pytest.approx(np.mean(p99))
    assert t.sigma == pytest.approx(np.std(p99, ddof=1) / math.sqrt(5))
    with pytest.raises(ConfigError, match="statistic"):
        targets_from_samples(df, [parse_mapping("samples:rtt:q3=ping:rtt_p99")])
    with pytest.raises(DataError, match="series"):
        targets_from_samples(df, [parse_mapping("samples:owd:mean=ping:rtt_mean")])
