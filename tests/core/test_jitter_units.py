import pytest

from ovssim import units
from ovssim.errors import UnitError
from ovssim.intervals import interval
from ovssim.metrics import JitterEstimator


def test_rfc3550_jitter_hand_computed():
    # transit times 10, 12, 11, 15 ms -> D = 2, 1, 4 ms
    j = JitterEstimator()
    sends = [0.0, 1.0, 2.0, 3.0]
    transits = [0.010, 0.012, 0.011, 0.015]
    for s, tr in zip(sends, transits):
        j.update(s, s + tr)
    expected = 0.0
    for d in (0.002, 0.001, 0.004):
        expected += (d - expected) / 16
    assert j.jitter == pytest.approx(expected, abs=1e-15)
    assert j.jitter == pytest.approx(0.00041845703125, rel=1e-12)   # by hand: 0.000125, 0.0001796875, 0.00041845703125


@pytest.mark.parametrize("text,value", [("100mbit", 100e6), ("1gbit", 1e9), ("12.5mbps", 100e6),
                                        ("1kibit", 1024), (95000000, 95e6)])
def test_rates(text, value):
    assert units.rate(text) == pytest.approx(value)


@pytest.mark.parametrize("text,value", [("1470b", 1470), ("32k", 32768), ("1mb", 1048576), ("8kbit", 1000)])
def test_sizes(text, value):
    assert units.size(text) == pytest.approx(value)


@pytest.mark.parametrize("text,value", [("5ms", 5e-3), ("100us", 1e-4), ("10s", 10.0), (0.2, 0.2), ("3ns", 3e-9)])
def test_times(text, value):
    assert units.time(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["fast", "10 parsecs", "-5ms", True, [1], "nan"])
def test_bad_units(bad):
    with pytest.raises(UnitError):
        units.time(bad)


def test_ci95_student_t():
    m, lo, hi = interval([1.0, 2.0, 3.0, 4.0])
    # t(0.975, 3) = 3.182446; s = 1.290994; half = t*s/2
    assert m == 2.5
    assert hi - m == pytest.approx(3.182446305 * 1.2909944487 / 2, rel=1e-6)
    assert m - lo == pytest.approx(hi - m)
