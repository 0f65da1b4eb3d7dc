"""Sequential sweeps, whatif and run: the same replications and stops on every executor; stopping reported."""
import numpy as np
import pandas as pd
import pytest

from ovssim.cli import main
from ovssim.runner import run_scenario
from ovssim.sequential import Precision
from ovssim.sweep import load_results, load_sweep, run_sweep

from sweep_helpers import write_sweep

SEQ = '''
    [sweep]
    base = "tiny.toml"
    seed = 11
    precision = {"udp:throughput" = 0.001, "ping:rtt_mean" = 0.02}
    min_reps = 3
    max_reps = 12
    [grid]
    "vm.vm1.qdisc,vm.vm2.qdisc" = [{kind = "pfifo"}, {kind = "bfifo"}]
    "workload.udp.b" = ["20mbit", "60mbit"]
'''


def _kept(out):
    df, _ = load_results(out)
    df = df[~df["metric"].str.startswith("cpu_util")]
    return df.sort_values(["run", "workload", "metric"]).reset_index(drop=True)[["run", "rep", "metric", "value"]]


def test_sequential_sweep_is_identical_on_every_executor(tmp_path):
    pytest.importorskip("distributed")
    sw = load_sweep(write_sweep(tmp_path, SEQ))
    assert sw.precision.max_reps == 12
    results, stops = {}, {}
    for name, kw in [("one", dict(workers=1)), ("two", dict(workers=2)), ("dask", dict(workers=2, dask="local-threads:2"))]:
        rep = run_sweep(sw, tmp_path / name, **kw)
        assert not rep.failed
        results[name] = _kept(tmp_path / name)
        stops[name] = {k: (v.reps, v.reason) for k, v in rep.stopping.items()}
    assert stops["one"] == stops["two"] == stops["dask"]
    for name in ("two", "dask"):
        pd.testing.assert_frame_equal(results[name], results["one"])
    # every point holds exactly replications 0..n-1 (paired across points under CRN)
    df = results["one"]
    for pid, (n, _) in stops["one"].items():
        assert sorted(df[df["run"].str.startswith(pid)]["rep"].unique()) == list(range(n))
    summ = pd.read_csv(tmp_path / "one" / "summary.csv")
    st = pd.read_csv(tmp_path / "one" / "stopping.csv")
    assert set(st["reason"]) <= {"precision reached", "max-reps"}
    thr = summ[summ["metric"] == "throughput"].set_index("point")
    for row in st.itertuples():
        assert thr.loc[row.point, "reps"] == row.reps
        if row.reason == "precision reached":
            half = (thr.loc[row.point, "ci95_high"] - thr.loc[row.point, "ci95_low"]) / 2
            assert half <= 0.001 * thr.loc[row.point, "mean"] * (1 + 1e-9)


def test_resume_of_a_sequential_sweep_reruns_nothing(tmp_path):
    sw = load_sweep(write_sweep(tmp_path, SEQ))
    first = run_sweep(sw, tmp_path / "o", workers=1)
    again = run_sweep(sw, tmp_path / "o", workers=1, resume=True)
    assert again.ran == 0 and {k: v.reps for k, v in again.stopping.items()} == \
        {k: v.reps for k, v in first.stopping.items()}


def test_run_with_precision_is_the_same_serially_and_on_workers(tmp_path, scenario_file):
    prec = Precision({"udp:throughput": 0.001}, {}, 3, 10)
    a = run_scenario(scenario_file, precision=prec, workers=1)
    b = run_scenario(scenario_file, precision=prec, workers=2)
    assert a.stopping == b.stopping and a.stopping.reps >= 3
    keep = ~a.per_rep["metric"].str.startswith("cpu_util")
    np.testing.assert_array_equal(a.per_rep[keep]["value"], b.per_rep[keep]["value"])


def test_cli_run_reports_replications_and_refuses_reps_with_precision(tmp_path, scenario_file, capsys):
    assert main(["run", str(scenario_file), "--precision", "udp:throughput=0.001", "--max-reps", "6",
                 "--workers", "1", "--format", "csv"]) == 0
    io = capsys.readouterr()
    assert "replications" in io.err and ("precision reached" in io.err or "max-reps" in io.err)
    assert main(["run", str(scenario_file), "--precision", "0.01", "--reps", "5"]) == 2
    assert "ovssim: error:" in capsys.readouterr().err
    assert main(["run", str(scenario_file), "--precision", "2"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_whatif_stops_when_the_ranking_is_settled(tmp_path, scenario_file, capsys):
    out = tmp_path / "w"
    assert main(["whatif", str(scenario_file), "--qdiscs", "pfifo,tbf(rate=5mbit burst=16kb latency=50ms)",
                 "--metric", "throughput", "--until-settled", "--max-reps", "8", "--workers", "1",
                 "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    st = pd.read_csv(out / "stopping.csv")
    assert (st["reason"] == "ranking settled").all() and (st["reps"] == st["reps"].iloc[0]).all()
    assert "ranking settled" in err


def test_precision_keys_in_files(tmp_path):
    from ovssim.errors import ConfigError
    from ovssim.scenario import from_dict, load_scenario
    with pytest.raises(ConfigError, match="reps and precision"):
        load_sweep(write_sweep(tmp_path, SEQ.replace("seed = 11", "seed = 11\n    reps = 4")))
    with pytest.raises(ConfigError, match="out of range"):
        load_sweep(write_sweep(tmp_path, SEQ.replace('"udp:throughput" = 0.001', '"udp:throughput" = 0')))
    sc = load_scenario(tmp_path / "tiny.toml")
    data = dict(sc.data)
    data["scenario"] = {k: v for k, v in data["scenario"].items() if k != "reps"} | {
        "precision": {"udp:throughput": 0.001}, "max_reps": 5}
    sc2 = from_dict(data, file="x.toml", base_dir=tmp_path)
    assert sc2.precision.max_reps == 5 and sc2.precision.bounds("udp", "throughput") == (0.001, None)
    res = run_scenario(sc2, workers=1)
    assert res.stopping is not None and res.stopping.reps == res.per_rep["rep"].nunique()


def test_run_steady_state_gives_batch_means_intervals(scenario_file, capsys):
    assert main(["run", str(scenario_file), "--steady-state", "--format", "csv"]) == 0
    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    row = out[out["series"] == "udp:one_way_delay"].iloc[0]
    assert row["ci95_low"] < row["mean"] < row["ci95_high"] and row["batches"] == 20
    assert main(["run", str(scenario_file), "--steady-state", "--reps", "3"]) == 2
