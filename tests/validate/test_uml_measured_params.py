"""The UML scenarios' measured CPU costs reach their runs (ovssim/validate/uml.py, ovssim/precedence.py).

``app.syscall`` and ``host.idle_busy`` are measured inside the instance (data/uml/2026-11-28/uml-cpucost) and
set by the UML scenarios' ``[params]``; a profile given as ``--profile`` beats ``[params]`` for every key it
sets explicitly.  The UML fit once copied the embedded default's ``app.syscall = 0`` into its profile (a zero
CPU cost "scaled" by UML's factor), so no system call was ever charged: the instance's CPU 5-7 % simulated
against 45-72 % measured.
"""
from __future__ import annotations

import pytest

from ovssim.precedence import resolve
from ovssim.profile import Profile, scale_costs
from ovssim.scenario import from_dict
from ovssim.units import time as seconds
from ovssim.validate import uml
from ovssim.validate.base import CALIBRATION


def test_scaled_costs_leave_zero_costs_unwritten():
    out = scale_costs({"app.syscall": "0us", "app.send_per_packet": "2us",
                             "ovs.actions": {"dist": "lognorm", "s": 0.4, "scale": "1us"}}, 3.0)
    assert "app.syscall" not in out
    assert seconds(out["app.send_per_packet"]) == pytest.approx(6e-6)
    assert seconds(out["ovs.actions"]["scale"]) == pytest.approx(3e-6)


@pytest.mark.parametrize("name", ["uml_linux61", "uml_linux61_quiet"])
def test_measured_cpu_costs_beat_nothing_in_the_fitted_profile(name):
    syscall, wake = uml.syscall_cost(), uml.idle_busy()
    if syscall is None or wake is None:
        pytest.skip(f"no UML CPU-cost data in {uml.DATA_CPUCOST}")
    sc = from_dict(uml._config("pfifo_fast", 0.05, 0.0, udp=True).scenario)
    params = resolve(sc, profile=Profile.load(str(CALIBRATION / f"{name}.toml"))).profile.params
    assert seconds(params["app.syscall"]) == pytest.approx(syscall, rel=1e-3)
    assert seconds(params["host.idle_busy"]) == pytest.approx(wake, rel=1e-2)


def test_a_campaign_s_own_system_call_cost_is_the_mean_of_its_before_and_after_state(tmp_path):
    """ovssim/validate/uml_thesis.py takes a UML campaign's app.syscall from its collector's machine state
    (``benchmark.syscall_us``) where measured, and has none where the campaign predates the probe."""
    import json
    from ovssim.validate import uml_thesis
    assert uml_thesis.campaign_syscall_us(tmp_path) is None
    st = lambda us: {"speed_index": 0.2, "benchmark": {"syscall_us": {"median": us, "rel_spread": 0.1}}}
    (tmp_path / "metadata.json").write_text(json.dumps({"machine_state": {"before": st(18.0), "after": st(22.0)}}))
    assert uml_thesis.campaign_syscall_us(tmp_path) == pytest.approx(20.0)
    (tmp_path / "metadata.json").write_text(json.dumps({"machine_state": {"before": {"speed_index": 0.2,
                                                                                      "benchmark": {}}}}))
    assert uml_thesis.campaign_syscall_us(tmp_path) is None
    assert uml_thesis.campaign_syscall_us(uml_thesis.DATA) is None      # collected before the probe existed
