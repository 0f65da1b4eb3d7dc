"""TBF: a burst at line rate up to the bucket, then the rate; peakrate; limit/latency; tc errors."""
import numpy as np
import pytest

from ovssim.errors import ConfigError
from ovssim.qdisc import make_qdisc

from qdisc_testlib import conserved, pkt, run_port

LINE = 100e6
WIRE = (1514 + 24) * 8 / LINE            # one frame at line rate


def _departures(spec, n=200):
    port, rec, _ = run_port(spec, [pkt(0, 1514, 0.0, seq=k) for k in range(n)], LINE, until=2.0)
    assert conserved(port.qdisc)
    return np.array([t for t, _ in rec.got]), port


def test_burst_at_line_rate_then_the_rate():
    burst = 30000
    t, _ = _departures({"kind": "tbf", "rate": "10mbit", "burst": burst, "limit": "1mb"})
    gaps = np.diff(t)
    at_line = int(np.sum(gaps < 1.5 * WIRE)) + 1
    # the bucket holds 19.8 packets; it also refills for the ~2.4 ms the burst takes
    expect = int((burst + 1e6 / 8 * at_line * WIRE) // 1514)
    assert abs(at_line - expect) <= 1 and at_line >= burst // 1514
    steady = gaps[at_line + 5:]
    assert np.allclose(steady, 1514 * 8 / 10e6, rtol=0.01)      # then exactly the rate


def test_peakrate_caps_the_burst_speed():
    t, _ = _departures({"kind": "tbf", "rate": "10mbit", "burst": 30000, "limit": "1mb",
                        "peakrate": "50mbit", "mtu": 1514})
    gaps = np.diff(t)[:10]
    assert np.allclose(gaps, 1514 * 8 / 50e6, rtol=0.01)


def test_latency_sets_the_byte_limit():
    q = make_qdisc({"kind": "tbf", "rate": "8mbit", "burst": "10kb", "latency": "50ms"})
    assert q.limit == int(1e6 * 0.05 + 10240)
    _, port = _departures({"kind": "tbf", "rate": "8mbit", "burst": "10kb", "latency": "50ms"})
    assert port.qdisc.stats.drops > 0
    assert port.qdisc.stats.overlimits > 0


def test_oversized_packet_is_dropped():
    q = make_qdisc({"kind": "tbf", "rate": "1mbit", "burst": 1000, "limit": 100000})
    assert not q.enqueue(pkt(0, 1514), 0.0) and q.stats.drops == 1


@pytest.mark.parametrize("spec, msg", [
    ({"burst": 10000, "limit": 10000}, '"rate" is required'),
    ({"rate": "1mbit", "limit": 10000}, '"burst" is required'),
    ({"rate": "1mbit", "burst": 10000}, 'either "limit" or "latency"'),
    ({"rate": "1mbit", "burst": 10000, "limit": 1, "latency": "1ms"}, 'either "limit" or "latency"'),
    ({"rate": "1mbit", "burst": 10000, "limit": 10000, "peakrate": "2mbit"}, '"mtu"'),
    ({"rate": "1mbit", "burst": 10000, "limit": 10000, "peakrate": "1mbit", "mtu": 1514}, "greater than rate"),
])
def test_tc_like_errors(spec, msg):
    with pytest.raises(ConfigError, match=msg):
        make_qdisc({"kind": "tbf", **spec})


@pytest.mark.parametrize("lookahead", [False, True])
def test_a_late_watchdog_costs_a_one_frame_bucket_its_lateness_but_not_a_deep_one(lookahead):
    """qdisc.watchdog_latency L: with a bucket of one frame every frame waits for the watchdog, so
    frames leave every T + L (T = one frame at the rate); a 10-frame bucket refills during L and
    the rate is kept."""
    import simpy
    from ovssim.path.port import EgressPort
    from qdisc_testlib import Recorder
    rate, lat = 10e6, 2e-3
    frame = 1514 * 8 / rate

    def gaps(burst):
        env = simpy.Environment()
        rec = Recorder(env)
        port = EgressPort(env, rate_bps=None, qdisc=make_qdisc({"kind": "tbf", "rate": "10mbit", "burst": burst,
                                                                 "limit": "1mb"}),
                          out=rec, lookahead=lookahead)
        port.watchdog_latency = lat
        for k in range(300):
            port.put(pkt(0, 1514, 0.0, seq=k))
        env.run(until=2.0)
        return np.diff([t for t, _ in rec.got])[50:]

    assert np.allclose(gaps(1514), frame + lat, rtol=1e-6)
    assert np.mean(gaps(10 * 1514)) == pytest.approx(frame, rel=0.01)
