"""The thesis fit's warm start: the committed profile's values, inside each parameter's bounds."""
from ovssim.fit.calibrate import Param
from ovssim.validate.thesis import FIT_PARAMS, X0, warm_start


def test_warm_start_reads_the_profile_and_clamps_to_the_bounds(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text('[profile]\nname = "p"\nbase = "default"\n[params]\n'
                    '"vif.kvm-tap.backend_delay" = { dist = "lognorm", s = 0.01, scale = "31us" }\n'
                    '"linux_bridge.forward" = { dist = "lognorm", s = 0.2, scale = "500us" }\n')
    params = [Param.parse(p) for p in FIT_PARAMS]
    x0 = warm_start(prof, params, X0)
    assert abs(x0["vif.kvm-tap.backend_delay:scale"] - 31e-6) < 1e-12
    assert x0["vif.kvm-tap.backend_delay:s"] == 0.05           # below its bound 0.05..1.5: clamped
    assert abs(x0["linux_bridge.forward:scale"] - 200e-6) < 1e-12   # above 200 us: clamped
    assert x0["linux_bridge.forward:s"] == 0.2


def test_warm_start_without_a_profile_uses_the_fallback(tmp_path):
    params = [Param.parse(p) for p in FIT_PARAMS]
    assert warm_start(tmp_path / "missing.toml", params, X0) == X0
