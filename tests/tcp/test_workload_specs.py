"""The tools' scenario tables: flag-named keys, units, errors that name the key."""
from __future__ import annotations

import pytest

from ovssim.errors import ConfigError
from ovssim.path.cpu import CpuPool
from ovssim.workloads.iperf_tcp import IperfTcp
from ovssim.workloads.netperf import NetperfTcpRR, NetperfTcpStream, netperf_from_spec


def test_netperf_stream_table_in_bytes():
    w = NetperfTcpStream.from_spec({"tool": "netperf", "test": "TCP_STREAM", "l": "10s",
                                    "s": "32k", "S": "32k", "m": "256b"})
    assert (w.length, w.local_buffer, w.remote_buffer, w.message) == (10.0, 32768, 32768, 256)
    assert w.cc is None and w.nodelay is False          # no -K: the host's tcp_congestion_control


def test_netperf_rr_table():
    w = netperf_from_spec({"tool": "netperf", "test": "TCP_RR", "r": "1,1", "K": "reno"})
    assert isinstance(w, NetperfTcpRR)
    assert (w.request, w.response, w.cc, w.nodelay) == (1, 1, "reno", True)
    w = netperf_from_spec({"tool": "netperf", "test": "tcp_rr", "r": [64, "1k"], "D": False})
    assert (w.request, w.response, w.nodelay) == (64, 1024, False)


def test_iperf_table():
    w = IperfTcp.from_spec({"tool": "iperf", "proto": "tcp", "P": 10, "w": "256k", "t": "10s",
                            "C": "cubic"})
    assert (w.parallel, w.window, w.time, w.cc, w.omit) == (10, 262144, 10.0, "cubic", 0.0)
    assert IperfTcp.from_spec({"tool": "iperf", "proto": "tcp", "O": "1s", "t": "5s"}).omit == 1.0
    with pytest.raises(ConfigError, match="-O must be >= 0"):
        IperfTcp(omit=-1.0)
    w = IperfTcp.from_spec({"parallel": 3, "congestion": "newreno", "set-mss": 1000})
    assert (w.parallel, w.cc, w.mss) == (3, "newreno", 1000)


@pytest.mark.parametrize("cls,table,key", [
    (NetperfTcpStream, {"test": "TCP_STREAM", "bogus": 1}, "bogus"),
    (NetperfTcpStream, {"s": "32 furlongs"}, "s"),
    (NetperfTcpStream, {"l": 0}, "l"),
    (NetperfTcpStream, {"K": "vegas"}, "K"),
    (NetperfTcpStream, {"test": "UDP_STREAM"}, "test"),
    (NetperfTcpRR, {"r": "1,2,3"}, "r"),
    (IperfTcp, {"P": 0}, "P"),
    (IperfTcp, {"P": 2.5}, "P"),
    (IperfTcp, {"proto": "udp"}, "proto"),
    (IperfTcp, {"P": 2, "parallel": 3}, "parallel"),
    (IperfTcp, {"window": "big"}, "window"),
])
def test_bad_tables_name_the_key(cls, table, key):
    with pytest.raises(ConfigError) as exc:
        cls.from_spec(table)
    assert exc.value.key == key
    assert key in str(exc.value)


def test_netperf_unknown_test():
    with pytest.raises(ConfigError, match="TCP_MAERTS"):
        netperf_from_spec({"test": "TCP_MAERTS"})


def test_iperf_parallel_streams_and_cpu_charging(make_path):
    p = make_path(rate=50e6, delay=0.001)
    p.a.cpu = CpuPool(p.env, cores=2)
    w = IperfTcp(parallel=3, time=1.0, send_cost=1e-6)
    w.start(p.ctx(1.0))
    p.env.run(until=1.0)
    m = {x.name: x.value for x in w.metrics()}
    assert len(w.streams) == 3
    assert len({c.flow.sport for c, _ in w.streams}) == 3     # distinct ephemeral ports
    assert m["throughput"] == pytest.approx(sum(w.samples()["stream_throughput"]))
    assert m["throughput"] > 40.0
    # one CPU job per data segment the clients sent
    assert p.a.cpu.jobs == sum(c.sender.data_segs_out for c, _ in w.streams)


def test_cwnd_and_rtt_samples_over_time(make_path):
    p = make_path(rate=50e6, delay=0.002)
    w = IperfTcp(parallel=2, time=1.0, cwnd_interval=0.01)
    w.start(p.ctx(1.0))
    p.env.run(until=1.0)
    smp = w.samples()
    # 101 ticks per stream over the second (plus a few logged at loss events)
    assert 2 * 100 <= len(smp["cwnd"]) <= 2 * 101 + 20
    assert smp["cwnd"].min() >= 1
    assert len(smp["tcp_rtt"]) > 1000 and smp["tcp_rtt"].min() >= 4.0   # base RTT 4 ms


def test_small_writes_cost_more_cpu(make_path):
    # netperf -m 256 makes ~5.7 send() calls per 1448-byte segment, -m 16k about 0.09
    busy = {}
    for m in (256, 16384):
        p = make_path(rate=100e6, delay=0.001)
        p.a.cpu = CpuPool(p.env, cores=1)
        w = NetperfTcpStream(length=1.0, message=m, call_cost=2e-6, send_cost=0.0)
        w.start(p.ctx(1.0))
        p.env.run(until=1.0)
        segs = w.client.sender.data_segs_out - w.client.sender.retransmits
        busy[m] = p.a.cpu.busy[0]
        assert busy[m] == pytest.approx(segs * 2e-6 * 1448 / m, rel=0.02)
    assert busy[256] > 50 * busy[16384]


def test_registry_builds_the_tcp_tools():
    from ovssim.workloads.registry import make_workload
    w = make_workload({"name": "s", "tool": "netperf", "test": "TCP_STREAM", "from": "vm1", "to": "vm2",
                       "l": "10s", "s": "32k", "S": "32k", "m": "256b"})
    assert isinstance(w, NetperfTcpStream) and w.name == "s" and w.message == 256
    w = make_workload({"name": "r", "tool": "netperf", "test": "TCP_RR", "r": "1,1"})
    assert isinstance(w, NetperfTcpRR)
    w = make_workload({"name": "i", "tool": "iperf", "proto": "tcp", "P": 10, "w": "256k", "t": "10s",
                       "C": "cubic"})
    assert isinstance(w, IperfTcp) and w.parallel == 10
    with pytest.raises(ConfigError, match="Q"):
        make_workload({"tool": "iperf", "proto": "tcp", "Q": 1})


def test_profile_send_per_call_caps_a_cpu_bound_sender(make_path):
    """No call_cost in the table: the run's profile (app.send_per_call) applies.  With 256-byte writes
    at 30 us each on one core, the sender can do at most 256 B x 8 / 30 us = 68.3 Mbit/s of payload
    on a 100 Mbit/s path (TCP goodput ceiling ~94 Mbit/s), so the CPU, not the link, is the limit."""
    import dataclasses
    res = {}
    for per_call in (0.0, 30e-6):
        p = make_path(rate=100e6, delay=0.0005)
        p.a.cpu = CpuPool(p.env, cores=1)
        w = NetperfTcpStream(length=2.0, message=256, send_cost=0.0)
        ctx = dataclasses.replace(p.ctx(2.0), extra={"app": {"send_per_call": per_call}})
        w.start(ctx)
        p.env.run(until=2.5)
        res[per_call] = next(m.value for m in w.metrics() if m.name == "throughput")
    assert res[0.0] > 90
    assert res[30e-6] == pytest.approx(256 * 8 / 30e-6 / 1e6, rel=0.03)


def test_profile_per_byte_copy_costs_cap_a_cpu_bound_stream(make_path):
    """app.send_per_byte / app.recv_per_byte: the socket copies charged per byte on each end's core,
    apart from the per-skb costs.  At 0.2 ns/byte on one core a sender copies at most 1/0.2ns =
    5 GB/s, far above the 100 Mbit/s path; at 100 ns/byte it copies 10 MB/s = 80 Mbit/s of payload,
    the cap.  The receiver's core is charged payload x its per-byte cost."""
    import dataclasses
    res, busy = {}, {}
    for per_byte in (0.2e-9, 100e-9):
        p = make_path(rate=100e6, delay=0.0005)
        p.a.cpu = CpuPool(p.env, cores=1)
        p.b.cpu = CpuPool(p.env, cores=1)
        w = NetperfTcpStream(length=2.0, send_cost=0.0, recv_cost=0.0)
        ctx = dataclasses.replace(p.ctx(2.0), extra={"app": {"send_per_byte": per_byte,
                                                              "recv_per_byte": per_byte / 2}})
        w.start(ctx)
        p.env.run(until=2.5)
        res[per_byte] = next(m.value for m in w.metrics() if m.name == "throughput")
        rcv = w.server.receiver
        busy[per_byte] = (p.b.cpu.busy[0], rcv.bytes_received * per_byte / 2)
    assert res[0.2e-9] > 90
    assert res[100e-9] == pytest.approx(8 / 100e-9 / 1e6, rel=0.03)
    for got, copied in busy.values():
        assert got == pytest.approx(copied, rel=0.02)


def test_iperf3_one_thread_sends_every_stream_from_one_core(make_path):
    """iperf3 before 3.16 writes all -P streams from one thread: with a CPU-bound write cost on a
    2-core sender, one_thread puts all of it on one core (the other stays idle) and caps the sum at
    what one core can write: on a 100 Mbit/s path, 20 ms per 128 KiB write lets one core write
    128 KiB x 8 / 20 ms = 52 Mbit/s; two cores 105 (the path's ~94 caps them)."""
    res, busy = {}, {}
    for one in (False, True):
        p = make_path(rate=100e6, delay=0.0005)
        p.a.cpu = CpuPool(p.env, cores=2)
        w = IperfTcp(parallel=4, time=3.0, send_cost=0.0, recv_cost=0.0, call_cost=20e-3, one_thread=one,
                     cwnd_interval=0.0)
        w.start(p.ctx(3.0))
        p.env.run(until=3.5)
        res[one] = next(m.value for m in w.metrics() if m.name == "throughput")
        busy[one] = sorted(p.a.cpu.busy)
    assert busy[True][0] == 0.0 and busy[True][1] > 0.0
    assert busy[False][0] > 0.0
    assert res[True] == pytest.approx(131072 * 8 / 20e-3 / 1e6, rel=0.05)
    assert res[False] > 1.5 * res[True]
