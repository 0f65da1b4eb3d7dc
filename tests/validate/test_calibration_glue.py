"""The validation's calibration glue recovers a known parameter and writes a loadable profile."""
import copy

import pytest

from ovssim.fit.calibrate import Param, Target
from ovssim.profile import Profile
from ovssim.validate.base import Settings, fit_profile, load_scenario_dict
from ovssim.validate.simulate import Config, MultiConfigModel, Runner


def _ping_config():
    sc = load_scenario_dict("xenserver_two_host.toml")
    sc = copy.deepcopy(sc)
    sc["workload"] = [{"name": "p", "tool": "ping", "from": "vm1", "to": "vm3", "c": 40, "i": "0.01s"}]
    sc["scenario"]["duration"] = "0.5s"
    return Config("two-host", sc)


def test_recovers_a_known_nic_delay(tmp_path):
    """Synthetic target from a known nic.rx_delay scale (40 us); the fit must land near it."""
    cfg = _ping_config()
    param = Param.parse("nic.rx_delay:scale=5us..300us")
    runner = Runner(1)
    truth = MultiConfigModel(runner, [cfg], [param], reps=1, seed=4242)({param.label: 40e-6})
    y = truth[("two-host/p", "rtt_mean")][0]
    settings = Settings(workers=1, max_evals=30, calibration_dir=tmp_path, fit=True)
    path, res = fit_profile(runner, settings, name="glue_test", configs=[cfg], params=[param],
                            targets=[Target("two-host/p", "rtt_mean", y, 0.002 * y, "ms")], data_files=[],
                            description="test", method_note="synthetic", x0={param.label: 120e-6})
    assert res.values[param.label] == pytest.approx(40e-6, rel=0.08)
    prof = Profile.load(str(path))
    assert prof.provenance["command"] == "ovssim validate"
    assert "nic.rx_delay" in prof.own_params
    assert prof.dist("nic.rx_delay") is not None


def test_no_fit_returns_committed_profile(tmp_path):
    s = Settings(fit=False, calibration_dir=tmp_path)
    path, res = fit_profile(Runner(1), s, name="x", configs=[], params=[], targets=[], data_files=[],
                            description="", method_note="")
    assert res is None and path == tmp_path / "x.toml"


def test_tied_and_fixed_parameters_go_with_the_fitted_ones():
    """A tied parameter takes the fitted one's value, a fixed one its given value; both reach the scenario's
    overrides (what each evaluation runs with and what the written profile holds)."""
    cfg = _ping_config()
    params = [Param.parse("app.send_per_byte=0.01ns..20ns")]
    model = MultiConfigModel(Runner(1), [cfg], params, tied={"app.recv_per_byte": "app.send_per_byte"},
                             fixed={"app.send_per_call": "7us"})
    out = model.overrides({"app.send_per_byte": 2e-9})
    assert Profile.load("default").time("app.send_per_byte") == 0.0
    assert out["app.send_per_byte"] == out["app.recv_per_byte"]
    assert float(out["app.recv_per_byte"].removesuffix("us")) == pytest.approx(2e-3)
    assert out["app.send_per_call"] == "7us"
