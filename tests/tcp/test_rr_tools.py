"""netperf UDP_RR, qperf tcp_lat/udp_lat/tcp_bw, sockperf ping-pong/under-load on an idle or loaded path.

Idle path (tests/tcp/conftest.py): one-way propagation ``delay`` plus each frame's own
serialization at ``rate``; a request/response exchange then takes exactly
RTT = 2 delay + (request frame + response frame) on the wire, and a closed loop makes
1 / RTT transactions per second.
"""
import pytest

from ovssim.packet import ETH_PREAMBLE_FCS_IFG, tcp_frame_size, udp_frame_size
from ovssim.workloads.registry import make_workload


def run(make_path, table, duration=2.0, delay=0.005, rate=100e6):
    p = make_path(rate=rate, delay=delay)
    w = make_workload(table)
    w.start(p.ctx(duration))
    p.env.run(until=duration + 1.0)
    return {m.name: m.value for m in w.metrics()}, w


def wire(frame, rate=100e6):
    return (frame + ETH_PREAMBLE_FCS_IFG) * 8 / rate


@pytest.mark.parametrize("req, resp", [(1, 1), (1024, 64)])
def test_udp_rr_rate_is_one_over_the_round_trip(make_path, req, resp):
    m, _ = run(make_path, {"tool": "netperf", "test": "UDP_RR", "r": f"{req},{resp}"})
    rtt = 2 * 0.005 + wire(udp_frame_size(req)) + wire(udp_frame_size(resp))
    assert m["transactions"] == pytest.approx(1 / rtt, rel=0.01)
    assert m["latency_mean"] == pytest.approx(rtt * 1e3, rel=1e-6)
    assert m["lost"] == 0


def test_qperf_udp_lat_reports_half_the_round_trip(make_path):
    m, _ = run(make_path, {"tool": "qperf", "test": "udp_lat", "m": 1})
    rtt = 2 * 0.005 + 2 * wire(udp_frame_size(1))
    assert m["latency"] == pytest.approx(rtt / 2 * 1e3, rel=1e-6)
    assert m["transactions"] == pytest.approx(1 / rtt, rel=0.01)


def test_qperf_tcp_lat_over_tcp_with_nodelay(make_path):
    m, _ = run(make_path, {"tool": "qperf", "test": "tcp_lat", "m": 1})
    rtt = 2 * 0.005 + 2 * wire(tcp_frame_size(1))
    assert m["latency"] == pytest.approx(rtt / 2 * 1e3, rel=0.01)


def test_qperf_tcp_bw_fills_the_link(make_path):
    m, _ = run(make_path, {"tool": "qperf", "test": "tcp_bw", "t": "3s"}, duration=3.0, delay=0.001)
    assert m["bw"] == pytest.approx(100 * 1448 / (1514 + ETH_PREAMBLE_FCS_IFG), rel=0.03)


@pytest.mark.parametrize("proto", ["udp", "tcp"])
def test_sockperf_ping_pong_paces_at_mps_and_reports_half_rtt(make_path, proto):
    # 10 ms round trip: at most 100 messages/s by the loop; --mps 50 makes it 50
    m, w = run(make_path, {"tool": "sockperf", "mode": "ping-pong", "m": 64, "mps": 50, "proto": proto})
    frame = udp_frame_size(64) if proto == "udp" else tcp_frame_size(64)
    rtt = 2 * 0.005 + 2 * wire(frame)
    assert m["transactions"] == pytest.approx(50, rel=0.02)
    assert m["half_rtt_mean"] == pytest.approx(rtt / 2 * 1e3, rel=0.01)
    assert m["half_rtt_p50"] <= m["half_rtt_p99"] <= m["half_rtt_max"]
    assert w.samples()["rtt"].mean() == pytest.approx(rtt * 1e3, rel=0.01)


def test_sockperf_under_load_times_every_hundredth_message(make_path):
    m, w = run(make_path, {"tool": "sockperf", "mode": "under-load", "m": 64, "mps": 5000})
    assert w.ex.sent == pytest.approx(5000 * 2, abs=2)
    assert m["transactions"] == pytest.approx(50, rel=0.02)          # 5000/s, one in 100 answered
    rtt = 2 * 0.005 + 2 * wire(udp_frame_size(64))
    assert m["rtt_mean"] == pytest.approx(rtt * 1e3, rel=0.01)


def test_unknown_modes_are_one_clear_error():
    from ovssim.errors import ConfigError
    with pytest.raises(ConfigError, match="qperf"):
        make_workload({"tool": "qperf", "test": "rds_bw"})
    with pytest.raises(ConfigError, match="sockperf"):
        make_workload({"tool": "sockperf", "mode": "throughput"})
