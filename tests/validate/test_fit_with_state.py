"""A calibration evaluates the profile it writes, state included.

The reader's wake-up on an idle core (``app.idle_wake``) is paid with the idle share 1 - ``[state] cpu_busy``;
a profile fitted from ``default`` (which states no busy share, so 1) used to be evaluated without its data's
busy share and written with it: the fit tuned a parameter that had no effect on its own runs.
"""
from __future__ import annotations

from pathlib import Path

from ovssim.fit.calibrate import Param, Target
from ovssim.profile import Profile
from ovssim.validate.base import Settings, fit_profile
from ovssim.validate.simulate import Config, Runner

ROOT = Path(__file__).resolve().parents[2]


def _rr_config() -> Config:
    sc = {"scenario": {"name": "fit-state", "duration": "0.1s", "reps": 1, "seed": 1},
          "host": [{"name": "h", "cores": 2}],
          "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
          "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                 {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
          "workload": [{"name": "rr", "tool": "netperf", "test": "TCP_RR", "from": "a", "to": "b", "l": "0.1s"}]}
    return Config("rr", sc, {})


def test_with_state_sets_the_busy_share_and_keeps_the_values():
    base = Profile.load("default")
    quiet = base.with_state({"cpu_busy": 0.02})
    assert base.busy_share() == 1.0 and quiet.busy_share() == 0.02
    assert quiet.params == base.params and quiet.time("app.idle_wake") == base.time("app.idle_wake")


def test_a_fit_from_default_pays_the_idle_wake_of_the_state_it_writes(tmp_path):
    """Fitting app.idle_wake on a quiet state (cpu_busy 0.02): the TCP_RR RTT must move with it during the
    fit, so the fit lands near the value that gives the target RTT (each message wakes its reader once)."""
    settings = Settings(workers=1, max_evals=12, calibration_dir=tmp_path, figures_dir=tmp_path)
    runner = Runner(1)
    cfg = _rr_config()
    no_wake = runner.run([cfg], Profile.load("default").with_state({"cpu_busy": 0.02}), reps=1, seed=4242)
    rtt0 = float(no_wake["rr"].values("rr", "rtt_mean").mean())          # ms
    target = rtt0 + 2 * 0.98 * 0.030                                      # +30 us per wake, 2 wakes, idle share 0.98
    path, res = fit_profile(
        runner, settings, name="fit_state_probe", configs=[cfg], params=[Param.parse("app.idle_wake=1us..100us")],
        targets=[Target("rr/rr", "rtt_mean", target, 0.0005, "ms")], data_files=[], description="test",
        method_note="test", x0={"app.idle_wake": 5e-6}, state={"cpu_busy": 0.02})
    fitted = res.values["app.idle_wake"]
    assert 20e-6 < fitted < 40e-6, fitted
    assert Profile.load(str(path)).busy_share() == 0.02
