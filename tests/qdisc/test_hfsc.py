"""HFSC: real-time delay bound of a concave curve, link-sharing by m2, upper limit, errors."""
import numpy as np
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc
from ovssim.qdisc.hfsc import RtSc

from qdisc_testlib import conserved, greedy, pkt, run_port

LINK = 10e6
LMAX_TX = (1514 + 24) * 8 / LINK          # one maximum frame on the wire
A, B, C = 0x10010, 0x10020, 0x10030


def _rt_delay(a_rt):
    """Max delay of a sparse class A (one 1514-byte packet every 20 ms) next to a greedy
    real-time class C that reserves the rest of the link, and a greedy link-sharing class B."""
    spec = {"kind": "hfsc", "default": "20", "classes": [
        {"classid": "1:1", "ls": "10mbit"},
        {"classid": "1:10", "parent": "1:1", "rt": a_rt},
        {"classid": "1:20", "parent": "1:1", "ls": "1mbit"},
        {"classid": "1:30", "parent": "1:1", "rt": "8mbit", "ls": "8mbit"}]}
    sparse = [pkt(0, 1514, 0.0031 + k * 0.02, priority=A, seq=k) for k in range(100)]
    bulk = greedy([(1, {"priority": B}), (2, {"priority": C})], 20e6, 2.0)
    port, rec, _ = run_port(spec, sorted(sparse + bulk, key=lambda p: p.t), LINK, until=2.1)
    d = np.array([t - p.created for t, p in rec.got if p.priority == A])
    assert len(d) == 100 and conserved(port.qdisc)
    return d.max()


def test_concave_real_time_curve_bounds_delay():
    # umax 1514 B within dmax 2 ms: the packet must leave by its deadline (+ one frame in progress)
    concave = _rt_delay({"umax": "1514b", "dmax": "2ms", "rate": "2mbit"})
    assert concave <= 0.002 + 2 * LMAX_TX
    # the same long-term rate with a linear curve only promises L / r = 6 ms
    linear = _rt_delay("2mbit")
    assert linear <= 1514 * 8 / 2e6 + 2 * LMAX_TX
    assert concave < linear


def test_link_sharing_splits_excess_by_m2():
    spec = {"kind": "hfsc", "default": "10", "classes": [
        {"classid": "1:1", "ls": "10mbit"},
        {"classid": "1:10", "parent": "1:1", "ls": "2mbit"},
        {"classid": "1:20", "parent": "1:1", "ls": "6mbit"}]}
    packets = greedy([(0, {"priority": A}), (1, {"priority": B})], 20e6, 3.0)
    _, rec, _ = run_port(spec, packets, LINK, until=3.0)
    got = rec.bytes_by(lambda p: p.priority, 0.5, 3.0)
    ratio = got[A] / got[B]
    assert abs(ratio - 1 / 3) < 0.01
    total = (got[A] + got[B]) * 8 / 2.5
    assert total > 0.97 * LINK * 1514 / 1538                   # the link stays busy


def test_upper_limit_caps_a_class():
    spec = {"kind": "hfsc", "default": "10", "classes": [
        {"classid": "1:10", "ls": "5mbit", "ul": "3mbit"}]}
    _, rec, _ = run_port(spec, greedy([0], 20e6, 4.0), LINK, until=4.0)
    got = sum(rec.bytes_by(lambda p: 0, 0.5, 4.0).values()) * 8 / 3.5
    assert abs(got / 3e6 - 1) < 0.01


def test_real_time_class_gets_its_rate_under_link_sharing_pressure():
    spec = {"kind": "hfsc", "default": "20", "classes": [
        {"classid": "1:10", "rt": "3mbit"},
        {"classid": "1:20", "ls": "10mbit"}]}
    packets = greedy([(0, {"priority": A}), (1, {"priority": B})], 20e6, 3.0)
    _, rec, _ = run_port(spec, packets, LINK, until=3.0)
    got = rec.bytes_by(lambda p: p.priority, 0.5, 3.0)
    assert abs(got[A] * 8 / 2.5 / 3e6 - 1) < 0.02             # rt-only: exactly its curve


def test_runtime_curve_min_keeps_what_was_owed():
    sc = (2000.0, 0.01, 1000.0)                                 # concave: 2000 B/s for 10 ms, then 1000
    r = RtSc(sc, 0.0, 0.0)
    assert r.x2y(0.01) == pytest.approx(20.0) and r.x2y(1.01) == pytest.approx(1020.0)
    assert r.y2x(1020.0) == pytest.approx(1.01)
    r.min_with(sc, 2.0, 500.0)             # a new period that starts below the old curve: restart there
    assert (r.x, r.y) == (2.0, 500.0)
    r2 = RtSc(sc, 0.0, 0.0)
    r2.min_with(sc, 0.5, 1e6)              # far above the old curve: the old curve stays
    assert (r2.x, r2.y) == (0.0, 0.0)


def test_unclassified_packets_are_dropped_without_default():
    q = make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:10", "sc": "1mbit"}]})
    assert not q.enqueue(pkt(), 0.0)
    assert q.stats.drops == 1 and conserved(q)


def test_hfsc_errors():
    with pytest.raises(ConfigError, match="upper-limit curve needs a link-sharing curve"):
        make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:10", "rt": "1mbit", "ul": "2mbit"}]})
    with pytest.raises(ConfigError, match="neither a real-time nor a link-sharing"):
        make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:10"}]})
    with pytest.raises(ConfigError, match="children but no link-sharing"):
        make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:1", "rt": "1mbit"},
                                                {"classid": "1:10", "parent": "1:1", "sc": "1mbit"}]})
    with pytest.raises(ConfigError, match="bad rt curve"):
        make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:10", "rt": {"m1": "1mbit"}}]})
    with pytest.raises(ConfigError, match="dmax"):
        make_qdisc({"kind": "hfsc", "classes": [{"classid": "1:10", "rt": {"umax": "1500b", "rate": "1mbit"}}]})
