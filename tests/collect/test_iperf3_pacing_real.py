"""ovssim's iperf3 UDP sender against the real iperf3 and kernel (validation/iperf3_pacing_check.py's
measurement, short): the same burst pattern unshaped, and the same spreading of a burst by a real
``tc htb rate 50mbit`` (the first two datagrams pass on the bucket, the rest wait for tokens).

Needs root, iperf3, tc and ip (./setup.sh installs them); skipped otherwise.  ~8 s."""
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
missing = [t for t in ("ip", "tc", "iperf3") if shutil.which(t) is None]
pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build network namespaces"),
    pytest.mark.skipif(bool(missing), reason=f"tools missing: {', '.join(missing)} (run ./setup.sh)"),
]


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("iperf3_pacing_check",
                                                  ROOT / "validation" / "iperf3_pacing_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def measured(check):
    with tempfile.TemporaryDirectory() as d:
        try:
            check.setup()
            out = {htb: check.pattern(check.measure(1.5, htb, Path(d))) for htb in (False, True)}
        finally:
            check.teardown()
    return out


def test_burst_pattern_matches_the_real_iperf3(check, measured):
    real = measured[False]
    sim = check.pattern(check.simulate(1.5, False, real["inner_gap_median_us"] * 1e-6))
    # iperf3 at 40 Mbit/s, 1400-byte datagrams: a burst per pacing tick (1 ms)
    assert sim["burst_mean"] == pytest.approx(real["burst_mean"], rel=0.15)
    assert sim["interval_median_us"] == pytest.approx(real["interval_median_us"], rel=0.15)


def test_htb_spreads_a_burst_as_the_kernel_does(check, measured):
    real = measured[True]
    sim = check.pattern(check.simulate(1.5, True, measured[False]["inner_gap_median_us"] * 1e-6))
    for r in (real, sim):
        rel = r["rel_transit_us"]
        assert len(rel) == 4, r
        assert abs(rel[1]) < 50          # the second datagram still finds tokens
        assert 100 < rel[2] < 300        # the third waits for the tokens the second overdrew
        assert 150 < rel[3] - rel[2] < 260   # the fourth one packet time (231 us at 50 Mbit/s) later
    assert sim["rel_transit_us"][3] == pytest.approx(real["rel_transit_us"][3], abs=80)
    # no namespace of ours is left behind
    assert check.NS_A not in os.popen("ip netns list").read()
