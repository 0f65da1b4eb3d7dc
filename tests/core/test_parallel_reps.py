"""Replications on several processes give what a serial run gives, and their errors stay one line."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ovssim.errors import ConfigError
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "thesis_kvm_ovs.toml"


def _sc(**changes):
    return load_scenario(EXAMPLE).replace(**{"scenario.duration": "0.3s", **changes})


def test_two_workers_give_the_serial_results():
    serial = run_scenario(_sc(), reps=3, seed=11, workers=1)
    parallel = run_scenario(_sc(), reps=3, seed=11, workers=2)
    assert serial.per_rep.equals(parallel.per_rep)
    assert serial.summary.equals(parallel.summary)
    assert serial.samples.keys() == parallel.samples.keys()
    for k, v in serial.samples.items():
        assert np.array_equal(v, parallel.samples[k]), k
    assert serial.counters == parallel.counters
    # the replications differ from each other (seeds per replication, not per process)
    jit = parallel.per_rep.query("workload == 'udp' and metric == 'jitter'")["value"]
    assert jit.nunique() == 3


def test_more_workers_than_replications():
    one = run_scenario(_sc(), reps=1, seed=3, workers=4)
    assert one.per_rep.equals(run_scenario(_sc(), reps=1, seed=3).per_rep)


def test_an_error_in_a_scenario_reaches_the_caller_before_any_worker():
    """A bad qdisc is found when the scenario is read (every qdisc and workload is built once there),
    so no worker process starts for it."""
    bad = load_scenario(EXAMPLE).data
    bad = {k: v for k, v in bad.items() if not k.startswith("_")}
    bad["vm"][0]["qdisc"] = {"kind": "wfq"}
    with pytest.raises(ConfigError, match="unknown qdisc kind"):
        run_scenario(bad, reps=2, workers=2)


def test_cli_workers_option(tmp_path):
    text = EXAMPLE.read_text().replace('duration = "10s"', 'duration = "0.2s"').replace("reps = 10", "reps = 2")
    sc = tmp_path / "s.toml"
    sc.write_text(text)
    outs = []
    for w in ("1", "2"):
        out = tmp_path / f"w{w}.csv"
        r = subprocess.run([sys.executable, "-m", "ovssim", "run", str(sc), "--workers", w, "--format", "csv",
                            "--out", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('qdisc = { kind = "pfifo_fast" }', 'qdisc = { kind = "wfq" }', 1))
    r = subprocess.run([sys.executable, "-m", "ovssim", "run", str(bad), "--workers", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "unknown qdisc kind" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_calibration_model_on_a_pool_evaluates_as_serially():
    """A calibration evaluates the same simulated metrics with its replications on a shared pool."""
    from ovssim.fit.calibrate import Param, SimulationModel
    from ovssim.runner import ReplicationPool
    sc = load_scenario(EXAMPLE).replace(**{"scenario.duration": "0.2s"}).data
    params = [Param.parse("vif.kvm-tap.backend_delay:scale=5us..80us")]
    serial = SimulationModel(sc, params, reps=3, seed=4)
    with ReplicationPool(2) as pool:
        pooled = SimulationModel(sc, params, reps=3, seed=4, pool=pool)
        for scale in (10e-6, 40e-6):            # two evaluations on the one pool
            v = {"vif.kvm-tap.backend_delay:scale": scale}
            assert pooled(v) == serial(v)


def test_cli_runs_the_tests_separately(tmp_path):
    """The thesis's three tests share one path: together the UDP stream starves TCP; --separately runs
    each on its own, as the thesis did, and TCP_STREAM reaches the 100 Mbit/s link's goodput."""
    import csv
    src = EXAMPLE.parent / "thesis_tests_kvm.toml"
    sc = tmp_path / "tests.toml"
    sc.write_text(src.read_text().replace('duration = "10s"', 'duration = "0.5s"').replace("reps = 100", "reps = 2"))

    def stream_throughput(*extra):
        out = tmp_path / "out.csv"
        r = subprocess.run([sys.executable, "-m", "ovssim", "run", str(sc), "--format", "csv", "--out", str(out),
                            "--force", *extra], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        rows = list(csv.DictReader(out.open()))
        return rows, next(float(x["mean"]) for x in rows if x["workload"] == "stream" and x["metric"] == "throughput")

    rows, alone = stream_throughput("--separately")
    _, together = stream_throughput()
    assert alone > 90 and together < 0.5 * alone
    assert {"system (stream)", "system (rr)", "system (udp)"} <= {x["workload"] for x in rows}
