"""One documented order of parameter sources (ovssim.precedence), the same in run, whatif, sweep, fit, validate.

The fixture: the scenario names profile SCEN (sets A and D), its [params] set A and B, the caller's
profile CLI sets A and C, and --set gives C.  Documented outcome:

    without a caller's profile: A from [params] (over SCEN), B from [params], C default, D from SCEN
    with CLI as the caller's:   A from CLI (over [params]), B from [params], C from CLI, D default
    --set beats everything:     C from --set
"""
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import ovssim.runner as runner
from ovssim import precedence
from ovssim.cli import cli
from ovssim.profile import Profile
from ovssim.scenario import from_dict, load_scenario

A, B, C, D = "app.rr_processing", "patch.translate", "veth.cpu_per_packet", "app.send_per_call"
DEFAULT = Profile.default()
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = f"""
[scenario]
name = "prec"
duration = "0.05s"
reps = 1
profile = "scen"

[params]
"{A}" = "11us"
"{B}" = "12us"

[[host]]
name = "h"
cores = 2

[[bridge]]
name = "br0"
host = "h"

[[vm]]
name = "vm1"
host = "h"
bridge = "br0"

[[vm]]
name = "vm2"
host = "h"
bridge = "br0"

[[workload]]
name = "ping"
tool = "ping"
from = "vm1"
to = "vm2"
c = 2
i = "0.01s"
"""


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "scen.toml").write_text(
        f'[profile]\nname = "scen"\n[params]\n"{A}" = "21us"\n"{D}" = "24us"\n')
    (tmp_path / "calibration" / "cli.toml").write_text(
        f'[profile]\nname = "cli"\n[params]\n"{A}" = "31us"\n"{C}" = "33us"\n')
    path = tmp_path / "prec.toml"
    path.write_text(SCENARIO)
    return tmp_path, path


def values(prof):
    return tuple(prof.time(k) for k in (A, B, C, D))


def runs(captured):
    return np.array([values(p) for p in captured])


WITHOUT = (11e-6, 12e-6, DEFAULT.time(C), 24e-6)
WITH_CLI = (31e-6, 12e-6, 33e-6, DEFAULT.time(D))
SET_C = 45e-6


def test_the_documented_order(setup):
    tmp, path = setup
    sc = load_scenario(path)
    assert values(precedence.resolve(sc).profile) == pytest.approx(WITHOUT)
    cli_prof = tmp / "calibration" / "cli.toml"
    res = precedence.resolve(sc, profile=str(cli_prof))
    assert values(res.profile) == pytest.approx(WITH_CLI)
    res = precedence.resolve(sc, profile=str(cli_prof), sets={C: "45us", A: "46us"})
    assert values(res.profile) == pytest.approx((46e-6, 12e-6, SET_C, DEFAULT.time(D)))
    notes = "\n".join(res.notes())
    assert "--profile cli" in notes and f"[params] of {path}: {A}" in notes          # who beat whom
    assert "--set overrides" in notes and "the scenario's profile 'scen'" in notes
    # a caller's profile that sets nothing (the default) leaves the scenario's [params] standing
    assert values(precedence.resolve(sc, profile="default").profile) == pytest.approx(
        (11e-6, 12e-6, DEFAULT.time(C), DEFAULT.time(D)))


def test_a_misspelt_param_is_an_error_even_where_the_profile_wins(setup):
    tmp, path = setup
    sc = load_scenario(path)
    sc.data["params"][A] = "not a time"
    with pytest.raises(Exception, match=A):
        precedence.resolve(sc, profile=str(tmp / "calibration" / "cli.toml"))


@pytest.fixture
def captured(monkeypatch):
    """The profile every replication really ran with (the simulation itself is skipped)."""
    seen = []

    def fake(sc, profile, rep, seed=None):
        seen.append(profile)
        return [{"rep": rep, "workload": "ping", "metric": "rtt_mean", "unit": "ms", "value": 1.0}], {}, {}
    monkeypatch.setattr(runner, "run_replication", fake)
    return seen


def test_run_cli_uses_the_order_and_says_who_overrode_whom(setup, captured):
    tmp, path = setup
    cli_prof = tmp / "calibration" / "cli.toml"
    out = CliRunner().invoke(cli, ["run", str(path), "--workers", "1"])
    assert out.exit_code == 0, out.output
    out = CliRunner().invoke(cli, ["run", str(path), "--workers", "1", "--profile", str(cli_prof)])
    assert out.exit_code == 0, out.output
    assert f"--profile cli ({cli_prof}) overrides [params] of {path}: {A}" in out.output
    out = CliRunner().invoke(cli, ["run", str(path), "--workers", "1", "--profile", str(cli_prof),
                                   "--set", f'params.{C}="45us"'])
    assert out.exit_code == 0, out.output
    assert runs(captured) == pytest.approx(np.array([WITHOUT, WITH_CLI, WITH_CLI[:2] + (SET_C,) + WITH_CLI[3:]]))


def test_run_scenario_takes_the_callers_profile_above_params(setup, captured):
    tmp, path = setup
    runner.run_scenario(path, reps=1)
    runner.run_scenario(path, reps=1, profile=Profile.load(tmp / "calibration" / "cli.toml"))
    assert runs(captured) == pytest.approx(np.array([WITHOUT, WITH_CLI]))


def test_validate_runs_a_fitted_profile_above_params_and_trial_values_above_all(setup, captured):
    from ovssim.validate.simulate import Config, Runner
    tmp, path = setup
    data = load_scenario(path).data
    data["scenario"]["profile"] = "default"        # validation scenarios name the default
    with Runner(workers=1) as r:
        r.run([Config("x", data)], Profile.load(tmp / "calibration" / "cli.toml"), overrides={C: "45us"}, reps=1)
    assert values(captured[0]) == pytest.approx((31e-6, 12e-6, SET_C, DEFAULT.time(D)))


def test_fit_calibration_trials_are_set_above_the_scenarios_profile_and_params(setup, captured):
    from ovssim.fit.calibrate import Param, SimulationModel
    _tmp, path = setup
    model = SimulationModel(path, [Param.parse(f"{C}=1us..100us")], reps=1)
    model({C: 45e-6})
    assert values(captured[0]) == pytest.approx(WITHOUT[:2] + (SET_C,) + WITHOUT[3:])


def test_sweep_and_whatif_points_use_the_same_order(setup, captured):
    from ovssim.sweep.worker import run_task
    from ovssim.whatif import whatif_sweep
    _tmp, path = setup
    sw = whatif_sweep(path, [{"kind": "pfifo"}, {"kind": "sfq"}], reps=1, fixed={f"params.{C}": "45us"})
    for task in sw.tasks():
        rec = run_task(task)
        assert rec["status"] == "ok", rec
    assert runs(captured) == pytest.approx(np.array([WITHOUT[:2] + (SET_C,) + WITHOUT[3:]] * 2))
