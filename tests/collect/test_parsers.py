"""Parsers against real outputs recorded on this machine (tests/collect/samples/).

Each test checks a relation the tool's output must satisfy (bytes / time =
rate, lost / total = loss, RTT = 2 x half-RTT, counter conservation), not only
that a number came out.
"""
import json
import statistics
from pathlib import Path

import pytest

from ovssim.collect import ovs, qos
from ovssim.collect.tools import ToolFailed, iperf2, iperf3, netperf, ping, qperf, sockperf

S = Path(__file__).parent / "samples"


def read(name):
    return (S / name).read_text()


def test_iperf3_tcp_throughput_is_bytes_over_time_and_cc_recorded():
    r = iperf3.parse(read("iperf3_tcp.json"))
    d = json.loads(read("iperf3_tcp.json"))["end"]["sum_received"]
    assert r.metrics["throughput"][0] == pytest.approx(d["bytes"] * 8 / d["seconds"], rel=1e-6)
    assert r.metrics["throughput"][1] == "bit/s"
    assert r.info["congestion_control"] == "cubic"
    assert r.info["version"].startswith("iperf 3")
    assert r.metrics["retransmits"][0] == 1181
    # receiver cannot get more than the sender sent
    assert r.metrics["throughput"][0] <= r.metrics["throughput_sender"][0] * 1.01
    assert len(r.samples["interval_throughput"][0]) == 2


def test_iperf3_parallel_streams_and_bbr():
    r = iperf3.parse(read("iperf3_tcp_p2.json"))
    d = json.loads(read("iperf3_tcp_p2.json"))
    assert len(d["end"]["streams"]) == 2
    per_stream = sum(s["receiver"]["bits_per_second"] for s in d["end"]["streams"])
    assert r.metrics["throughput"][0] == pytest.approx(per_stream, rel=0.01)
    assert r.info["congestion_control"] == "bbr"


def test_iperf3_udp_loss_jitter_units():
    r = iperf3.parse(read("iperf3_udp.json"))
    lost, total = r.metrics["lost_packets"][0], r.metrics["packets"][0]
    assert r.metrics["loss"][0] == pytest.approx(lost / total)
    assert 0 < r.metrics["jitter"][0] < 0.01          # seconds, not ms
    assert r.metrics["throughput"][0] == pytest.approx(50e6, rel=0.02)   # -b 50M


def test_iperf3_error_and_garbage_are_tool_failures():
    with pytest.raises(ToolFailed, match="unable to connect"):
        iperf3.parse(json.dumps({"start": {}, "intervals": [], "end": {},
                                 "error": "unable to connect to server"}))
    with pytest.raises(ToolFailed):
        iperf3.parse("iperf3: error - the server is busy")


def test_iperf2_server_report():
    r = iperf2.parse_udp_client(read("iperf2_udp_client.txt"))
    assert r.metrics["packets"][0] == 3748 and r.metrics["lost_packets"][0] == 0
    assert r.metrics["jitter"][0] == pytest.approx(0.056e-3)
    assert r.metrics["owd_min"][0] <= r.metrics["owd_mean"][0] <= r.metrics["owd_max"][0]
    assert r.metrics["throughput"][0] == pytest.approx(21.0e6)
    with pytest.raises(ToolFailed):
        iperf2.parse_udp_client(read("iperf2_udp_client.txt").split("Server Report")[0])


def test_qperf_reports_half_round_trip():
    r = qperf.parse(read("qperf_lat.txt"))
    assert r.metrics["tcp_rr_half_rtt"][0] == pytest.approx(101e-6)
    assert r.metrics["tcp_rr_rtt"][0] == pytest.approx(2 * 101e-6)
    assert r.metrics["udp_rr_rtt"][0] == pytest.approx(2 * 106e-6)
    assert r.metrics["tcp_rr_transactions_per_s"][0] == pytest.approx(1 / 202e-6)



def test_qperf_udp_bw_in_bits_per_second():
    # qperf -v ... udp_bw on this machine's loopback (1400-byte messages): SI prefixes, bytes per second
    m = qperf.parse(read("qperf_udp_bw.txt")).metrics
    assert m["udp_bw_send_bw"] == (148e6 * 8, "bit/s")
    assert m["udp_bw_recv_bw"] == (65.5e6 * 8, "bit/s")
    assert m["udp_bw_msg_rate"] == (47e3, "1/s")
    # msg_rate counts what the server read: recv_bw / msg_size, to qperf's rounding
    assert m["udp_bw_msg_rate"][0] == pytest.approx(65.5e6 / 1400, rel=0.01)

def test_sockperf_percentiles_monotone_and_full_log_is_twice_latency():
    r = sockperf.parse_summary(read("sockperf_pp.txt"))
    order = ["half_rtt_min", "half_rtt_p25", "half_rtt_p50", "half_rtt_p75", "half_rtt_p90",
             "half_rtt_p99", "half_rtt_p99.9", "half_rtt_max"]
    vals = [r.metrics[k][0] for k in order]
    assert vals == sorted(vals)
    assert r.metrics["half_rtt_mean"][0] == pytest.approx(87.656e-6)
    text = read("sockperf_full_log.csv")
    rtts = sockperf.parse_full_log(text)
    rows = [ln.split(",") for ln in text.split("latency(usec)\n", 1)[1].splitlines()]
    assert len(rtts) == len(rows) > 10
    for rtt, row in zip(rtts, rows):     # sockperf's latency column is half the round trip
        assert rtt / 2 == pytest.approx(float(row[3]) * 1e-6, abs=2e-9)


def test_ping_per_packet_and_summary_agree():
    text = read("ping.txt")
    r = ping.parse(text)
    rtts = r.samples["rtt"][0]
    assert len(rtts) == 20 and r.metrics["loss"][0] == 0
    # per-packet lines print 3 significant digits, the summary line microseconds
    assert min(rtts) == pytest.approx(r.metrics["rtt_min"][0], abs=5e-6)
    assert max(rtts) == pytest.approx(r.metrics["rtt_max"][0], abs=5e-6)
    assert statistics.fmean(rtts) == pytest.approx(r.metrics["rtt_mean"][0], abs=5e-6)
    assert r.metrics["rtt_max"][0] == pytest.approx(3.077e-3)
    assert r.metrics["rtt_first"][0] == rtts[0]
    assert r.metrics["rtt_rest_median"][0] == pytest.approx(statistics.median(rtts[1:]))


def test_ping_loss():
    text = ("64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.5 ms\n"
            "64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=0.3 ms\n\n"
            "--- 10.0.0.2 ping statistics ---\n4 packets transmitted, 2 received, 50% packet loss\n")
    r = ping.parse(text)
    assert r.metrics["loss"][0] == 0.5
    assert r.samples["seq"][0] == [1, 3]


def test_netperf_keyval():
    r = netperf.parse_keyval("THROUGHPUT=941.23\nTHROUGHPUT_UNITS=10^6bits/s\n", "TCP_STREAM")
    assert r.metrics["throughput"][0] == pytest.approx(941.23e6)
    r = netperf.parse_keyval("THROUGHPUT=12000.5\nMEAN_LATENCY=83.2\n", "TCP_RR")
    assert r.metrics["tcp_rr_rtt"][0] == pytest.approx(83.2e-6)


def test_ovs_dpctl_and_pmd_counters_conserve_packets():
    dp = ovs.parse_dpctl_show(read("ovs_dpctl_show.txt"))
    pmd = ovs.parse_pmd_stats(read("ovs_pmd_stats_show.txt"))
    assert dp == {"dp_hit": 40, "dp_missed": 5, "dp_lost": 0, "dp_flows": 5}
    # every packet the datapath received was an EMC, SMC or megaflow hit or an upcall
    hits = pmd["pmd_emc_hits"] + pmd["pmd_smc_hits"] + pmd["pmd_megaflow_hits"]
    assert hits + pmd["pmd_upcall_ok"] + pmd["pmd_upcall_failed"] == pmd["pmd_packets"]
    assert hits == dp["dp_hit"] and pmd["pmd_upcall_ok"] == dp["dp_missed"]


def test_ovs_dpctl_port_stats():
    ports = ovs.parse_dpctl_ports(read("ovs_dpctl_show_s.txt"))
    assert ports["port_vif1_rx_packets"] == 14 and ports["port_vif2_tx_packets"] == 13
    assert ports["port_br0_tx_dropped"] == 1


def test_ovs_upcall_and_coverage():
    up = ovs.parse_upcall_show(read("ovs_upcall_show.txt"))
    assert up["upcall_flows_current"] == 5 and up["upcall_flow_limit"] == 10000
    cov = ovs.parse_coverage(read("ovs_coverage_show.txt"))
    assert cov["cov_xlate_actions"] == 42 and cov["cov_bridge_reconfigure"] == 14
    assert len(cov) == 9


def test_tc_readback_of_ovs_installed_htb():
    qd = json.loads(read("tc_qdisc_htb.json"))
    c = qos.root_counters(qd)
    assert c["qdisc_packets"] == 22 and c["qdisc_bytes"] == 2136 and c["qdisc_drops"] == 0
    classes = qos.parse_tc_classes(read("tc_class_htb.txt"))
    # OVS's linux-htb: root class 1:fffe at max-rate, queue 0 = class 1:1 with ceil max-rate
    by_id = {c["classid"]: c for c in classes}
    assert by_id["1:fffe"]["rate_bps"] == 50e6 and by_id["1:fffe"]["parent"] is None
    assert by_id["1:1"]["ceil_bps"] == 50e6 and by_id["1:1"]["parent"] == "1:fffe"


def test_pmd_perf_show_of_an_afxdp_port():
    p = ovs.parse_pmd_perf(read("ovs_pmd_perf_show.txt"))
    assert p["pmdperf_rx_packets"] == 11 and p["pmdperf_tx_packets"] == 12
    assert p["pmdperf_cycles_per_packet"] == 5242223
    # passes = megaflow hits + upcalls + lost upcalls (no EMC/SMC hits here)
    assert 4 + p["pmdperf_upcalls"] + p["pmdperf_lost_upcalls"] == p["pmdperf_rx_packets"]
    assert p["pmdperf_us_per_upcall"] == 0.0


def test_af_packet_socket_drops():
    d = ovs.parse_packet_sockets(read("ss_packet_sockets.txt"))
    assert d["afpacket_vif1_drops"] == 2088 and d["afpacket_vif2_drops"] == 0
    assert d["afpacket_vif2_rx_queue"] == 0 and len(d) == 4
    assert not any(k.startswith("afpacket_*") for k in d)


def test_ping_send_times_from_timestamps():
    # ping -D: arrival time of each reply; send time = arrival - RTT (probe 3 lost)
    text = ("[1700000000.100000] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=50.0 ms\n"
            "[1700000000.165000] 64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=100 ms\n"
            "[1700000000.095000] 64 bytes from 10.0.0.2: icmp_seq=4 ttl=64 time=5.00 ms\n\n"
            "--- 10.0.0.2 ping statistics ---\n4 packets transmitted, 3 received, 25% packet loss\n")
    r = ping.parse(text)
    assert r.samples["seq"][0] == [1, 2, 4]
    assert r.samples["send_time"][0] == pytest.approx([0.0, 0.015, 0.04], abs=1e-6)
    assert r.metrics["interval_mean"][0] == pytest.approx(0.04 / 3, abs=1e-6)
    assert r.info["first_send_epoch"] == pytest.approx(1700000000.05)
    assert "send_time" not in ping.parse(read("ping.txt")).samples     # no -D, no send times
