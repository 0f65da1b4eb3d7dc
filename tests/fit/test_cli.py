"""`ovssim fit samples|regress|runs|export` end to end, through the top-level CLI."""
import json
import tomllib

import numpy as np
import pandas as pd
import pytest

from ovssim.cli import main
from ovssim.profile import Profile


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _samples(path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    comp = rng.choice(2, size=n, p=[0.8, 0.2])
    x = np.array([12.0, 50.0])[comp] * np.exp(np.array([0.2, 0.3])[comp] * rng.standard_normal(n))
    pd.DataFrame({"delay_us": x, "ram": rng.choice(["0.5GB", "2GB"], n)}).to_csv(path, index=False)
    return x


def test_samples_writes_a_loadable_profile_plots_and_exports(workdir, capsys):
    _samples(workdir / "lookup.csv")
    assert main(["fit", "samples", "lookup.csv", "--param", "ovs.lookup", "--plots", "figs"]) == 0
    out = capsys.readouterr().out
    assert "lognorm_mixture" in out and "chosen" in out
    prof_path = workdir / "calibration" / "lookup.toml"
    doc = tomllib.loads(prof_path.read_text())
    assert doc["params"]["ovs.lookup"]["dist"] == "lognorm_mixture"
    assert doc["provenance"]["command"].startswith("ovssim fit samples lookup.csv")
    assert doc["provenance"]["data"][0]["file"] == "lookup.csv"
    assert doc["fit"]["family"] == "lognorm_mixture" and doc["fit"]["ks"] < 0.05
    assert Profile.load(str(prof_path)).dist("ovs.lookup").mean() > 0
    assert (workdir / "figs" / "lookup_ecdf.png").stat().st_size > 10_000
    assert (workdir / "figs" / "lookup_qq.png").exists()
    assert main(["fit", "export", str(prof_path), "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["spec"] == doc["params"]["ovs.lookup"]
    assert main(["fit", "export", str(prof_path), "-f", "ns3-table", "-o", "lookup.ns3"]) == 0
    lines = (workdir / "lookup.ns3").read_text().splitlines()
    assert lines[-1].endswith(" 1")


def test_samples_by_group_writes_one_profile_per_group(workdir):
    _samples(workdir / "ram.csv")
    assert main(["fit", "samples", "ram.csv", "--by", "ram", "--families", "lognorm,gamma",
                 "--param", "ovs.stats"]) == 0
    assert sorted(p.name for p in (workdir / "calibration").iterdir()) == ["ram-0.5GB.toml", "ram-2GB.toml"]


@pytest.mark.parametrize("content, message", [
    ("delay_us\n", "empty"),
    ("delay_us\n10\n-3\n12\n", "negative"),
    ("delay_us\n10\n10\n10\n", "single repeated value"),
    ("delay_us\n10\nnan\n12\n", "NaN"),
])
def test_bad_data_is_one_line_error(workdir, capsys, content, message):
    (workdir / "bad.csv").write_text(content)
    assert main(["fit", "samples", "bad.csv"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_regress_predicts_and_writes(workdir, capsys):
    rng = np.random.default_rng(1)
    n = 1500
    size = rng.choice([64, 576, 1500], n)
    d = 10 * np.exp(3e-4 * size + 0.2 * rng.standard_normal(n))
    pd.DataFrame({"delay_us": d, "packet_size": size}).to_csv(workdir / "r.csv", index=False)
    assert main(["fit", "regress", "r.csv", "--delay", "delay_us", "--drivers", "packet_size",
                 "--predict", "packet_size=1500b", "--param", "ovs.actions", "--kind", "lognorm"]) == 0
    doc = tomllib.loads((workdir / "calibration" / "r.toml").read_text())
    spec = doc["params"]["ovs.actions"]
    assert spec["dist"] == "lognorm" and spec["scale"] == pytest.approx(10 * np.exp(0.45), rel=0.05)


def test_runs_calibrates_against_a_seed_table(workdir, capsys):
    from ovssim.validate.seed_data import SEED_DIR
    from .test_calibrate import _ping_scenario
    from ovssim.fit.profile_writer import dumps_toml
    sc = _ping_scenario()
    sc["scenario"]["duration"] = "0.3s"
    sc["workload"][0]["i"] = "0.01s"
    (workdir / "s.toml").write_text(dumps_toml({k: v for k, v in sc.items() if isinstance(v, dict)})
                                    + _arrays_of_tables(sc))
    rc = main(["fit", "runs", str(SEED_DIR / "seed000_thesis_tables.csv"), "--scenario", "s.toml",
               "--where", "testbed=thesis_kvm", "--where", "bridge=ovs", "--where", "scheduler=FIFO",
               "--where", "table=Table 4", "-p", "vif.kvm-tap.backend_delay:scale=1us..60us",
               "-t", "rtt=ping:rtt_mean", "--reps", "2", "--max-evals", "12", "--name", "kvm"])
    assert rc == 0
    doc = tomllib.loads((workdir / "calibration" / "kvm.toml").read_text())
    assert "vif.kvm-tap.backend_delay" in doc["params"]
    assert {d.get("role") for d in doc["provenance"]["data"]} == {None, "scenario"}
    assert "ping:rtt_mean" in doc["fit"]["targets"]
    Profile.load(str(workdir / "calibration" / "kvm.toml"))


def _arrays_of_tables(sc):
    out = []
    for sec, items in sc.items():
        if isinstance(items, list):
            for item in items:
                out.append(f"\n[[{sec}]]")
                for k, v in item.items():
                    if isinstance(v, dict):
                        v = "{ " + ", ".join(f'{kk} = "{vv}"' for kk, vv in v.items()) + " }"
                    elif isinstance(v, str):
                        v = f'"{v}"'
                    out.append(f"{k} = {v}")
    return "\n".join(out) + "\n"


def test_runs_calibrates_against_a_collector_campaign(workdir):
    """Per-run values from results.csv and a statistic of the raw samples, both as targets."""
    from .test_calibrate import _ping_scenario
    from ovssim.fit.profile_writer import dumps_toml
    sc = _ping_scenario()
    sc["scenario"]["duration"] = "0.3s"
    sc["workload"][0]["i"] = "0.01s"
    (workdir / "s.toml").write_text(dumps_toml({k: v for k, v in sc.items() if isinstance(v, dict)})
                                    + _arrays_of_tables(sc))
    camp = workdir / "camp"
    (camp / "samples").mkdir(parents=True)
    rng = np.random.default_rng(0)
    res = []
    for r in range(4):
        rtt = rng.normal(300e-6, 20e-6, 30)
        pd.DataFrame({"run_id": f"c-r{r}", "series": "rtt", "index": range(30), "value": rtt, "unit": "s"}
                     ).to_csv(camp / "samples" / f"c-r{r}.csv.gz", index=False)
        res.append({"run_id": f"c-r{r}", "bridge": "ovs", "workload": "ping", "metric": "rtt_mean",
                    "value": rtt.mean(), "unit": "s"})
    pd.DataFrame(res).to_csv(camp / "results.csv", index=False)
    assert main(["fit", "runs", "camp", "--scenario", "s.toml", "--where", "bridge=ovs",
                 "-p", "vif.kvm-tap.backend_delay:scale=1us..60us", "-t", "rtt_mean=ping:rtt_mean",
                 "-t", "samples:rtt:p90=ping:rtt_p99", "--reps", "2", "--max-evals", "8", "--name", "camp"]) == 0
    doc = tomllib.loads((workdir / "calibration" / "camp.toml").read_text())
    assert set(doc["fit"]["targets"]) == {"ping:rtt_mean", "ping:rtt_p99"}
    assert doc["provenance"]["data"][0]["kind"] == "directory"
    assert "4 runs" in doc["fit"]["target_sigma"]["ping:rtt_p99"]


def test_choose_empirical_and_export_errors(workdir, capsys):
    _samples(workdir / "e.csv", n=5000)
    assert main(["fit", "samples", "e.csv", "--families", "empirical,lognorm", "--choose", "empirical",
                 "--smooth", "--param", "ovs.upcall", "--ecdf", "tables"]) == 0
    doc = tomllib.loads((workdir / "calibration" / "e.toml").read_text())
    spec = doc["params"]["ovs.upcall"]
    assert spec["dist"] == "empirical" and spec["smooth"] is True and spec["probs"][-1] == 1.0
    eq1 = pd.read_csv(workdir / "tables" / "e_ecdf.csv")
    assert eq1["count"].sum() == 5000 and eq1["ecdf"].iloc[-1] == pytest.approx(1.0)
    capsys.readouterr()
    assert main(["fit", "export", "calibration/e.toml", "-f", "omnetpp"]) == 2
    assert "table" in capsys.readouterr().err
    two = workdir / "two.toml"
    two.write_text('[params]\na = { dist = "expon", scale = "1us" }\nb = { dist = "expon", scale = "2us" }\n')
    assert main(["fit", "export", str(two)]) == 2
    assert "--param" in capsys.readouterr().err
    assert main(["fit", "export", str(two), "--param", "b", "-f", "omnetpp"]) == 0
    assert capsys.readouterr().out.strip() == "exponential(2us)"
