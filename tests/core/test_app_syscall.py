"""An application's system calls as busy time that delays no packet (profile ``app.syscall``).

In a user-mode-Linux instance every system call of a guest process is a ptrace round trip through the host
(14-51 us a getppid(), data/uml/2026-11-28/uml-cpucost), and a ping beside a loop of them is not slowed.
Behaviour checked: ``CpuPool.account`` adds exactly what it is given to one core's busy time and moves no
completion; a TCP reader's calls follow its loop (a wake-up's ``wake_calls`` when the data find it asleep,
one read more while its calls still run); ping's and iperf 2's UDP ends' calls are exactly their per-probe /
per-datagram counts times ``app.syscall`` in a whole simulation; a ping RTT moves by the one call between its
stamp and its send, a throughput not at all; the default (0) changes nothing.
"""
import copy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import simpy

from ovssim.cpu import CpuPool
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario
from ovssim.tcp.receiver import TcpReceiver
from ovssim.topology import ARP_SETTLE
from ovssim.workloads.iperf_tcp import IPERF3_SERVER_WAKE_CALLS
from ovssim.workloads.ping import PING_CALLS
from ovssim.workloads.udp import IperfUdp

C = 25e-6


def test_account_adds_busy_time_to_one_core_and_delays_nothing():
    env = simpy.Environment()
    plain, calls = CpuPool(env, 2, "a"), CpuPool(env, 2, "b")
    d0 = [plain.serve(t, 10e-6, key=1) for t in (1e-3, 1.005e-3, 2e-3)]
    calls.account(3 * C, key=1)
    d1 = [calls.serve(t, 10e-6, key=1) for t in (1e-3, 1.005e-3, 2e-3)]
    calls.account(C, key=1)
    calls.account(0.0, key=0)
    assert d1 == d0
    assert calls.busy[1] - plain.busy[1] == pytest.approx(4 * C)
    assert calls.busy[0] == plain.busy[0] == 0.0
    assert calls.call_busy_time == pytest.approx(4 * C)
    calls.account(C)                    # no key: the least busy core
    assert calls.busy[0] == pytest.approx(C)


def test_a_tcp_reader_pays_a_wake_up_when_asleep_and_one_read_while_in_its_loop():
    env = simpy.Environment()
    cpu = CpuPool(env, 1, "uml")
    r = TcpReceiver(SimpleNamespace(env=env), mss=1448, rcvbuf=1 << 20, cpu=cpu)
    r.syscall, r.wake_calls = C, IPERF3_SERVER_WAKE_CALLS
    # asleep at 0: 5 calls, its loop ends at 125 us; data at 50 us: one read more (loop to 150 us); at 1 ms asleep
    for t in (0.0, 50e-6, 1e-3):
        r._reader_calls(t)
    assert r.reader_calls == 2 * IPERF3_SERVER_WAKE_CALLS + 1
    assert cpu.busy[0] == pytest.approx(11 * C)
    assert r._loop_end == pytest.approx(1e-3 + 5 * C)


def test_a_reader_without_wake_calls_counts_nothing():
    env = simpy.Environment()
    cpu = CpuPool(env, 1, "x")
    r = TcpReceiver(SimpleNamespace(env=env), mss=1448, rcvbuf=1 << 20, cpu=cpu)
    assert r.wake_calls == 0 and r.syscall == 0.0       # the defaults: on_data never calls _reader_calls


SCENARIO = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"


def run(workloads, syscall: float | None, duration: float = 1.1):
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = f"{duration}s"
    d["bridge"][0]["kind"] = "linux"
    d["host"][0]["cores"] = 1
    if syscall is not None:
        d.setdefault("params", {})["app.syscall"] = f"{syscall * 1e6}us"
    d["workload"] = workloads
    res = run_scenario(d, reps=1, seed=7)
    per = res.per_rep.groupby(["workload", "metric"])["value"].first()
    return per, res.samples


PING = [{"name": "ping", "tool": "ping", "from": "ns1", "to": "ns2", "i": "2ms", "c": 500}]


def test_ping_pays_its_calls_per_probe_and_one_calls_latency_before_its_probe():
    """iputils stamps a probe before its sendmsg() and the reply in the kernel (SO_TIMESTAMP): each RTT holds
    one system call's round trip, the stamp's return and the send's entry, and nothing more."""
    p0, s0 = run(PING, None)
    p1, s1 = run(PING, C)
    pz, sz = run(PING, 0.0)
    np.testing.assert_allclose(s1["ping:rtt"], s0["ping:rtt"] + C, rtol=0, atol=1e-12)
    assert p0["system", "cpu_util.local"] == pz["system", "cpu_util.local"]     # default 0: nothing
    # 500 probes x 7.7 calls x 25 us over the run (ARP settling + 1.1 s)
    assert p1["system", "cpu_util.local"] - p0["system", "cpu_util.local"] == pytest.approx(
        100 * 500 * PING_CALLS * C / (ARP_SETTLE + 1.1), rel=1e-9)


UDP = [{"name": "udp", "tool": "iperf", "proto": "udp", "from": "ns1", "to": "ns2", "b": "1mbit", "l": 1470,
        "t": "1s"}]


def test_iperf2_udp_pays_its_ends_calls_per_datagram_and_no_latency():
    p0, _ = run(UDP, None)
    p1, _ = run(UDP, C)
    for m in ("throughput", "delay_mean", "loss"):
        assert p1["udp", m] == p0["udp", m]
    n = round(1e6 * 1.0 / (1470 * 8))              # 85 datagrams, all received on an idle path
    assert p0["udp", "loss"] == 0.0
    calls = n * (IperfUdp.CLIENT_CALLS + IperfUdp.SERVER_CALLS)
    assert p1["system", "cpu_util.local"] - p0["system", "cpu_util.local"] == pytest.approx(
        100 * calls * C / (ARP_SETTLE + 1.1), rel=0.02)


TCP = [{"name": "tcp", "tool": "iperf3", "proto": "tcp", "from": "ns1", "to": "ns2", "t": "1s"}]


def test_iperf3_server_loop_costs_cpu_but_moves_no_segment():
    p0, _ = run(TCP, None)
    p1, _ = run(TCP, C)
    assert p1["tcp", "throughput"] == p0["tcp", "throughput"]
    assert p1["system", "cpu_util.local"] > p0["system", "cpu_util.local"]
    # iperf 2's TCP server loop is not counted (unmeasured): no change
    q0, _ = run([{**TCP[0], "tool": "iperf"}], None)
    q1, _ = run([{**TCP[0], "tool": "iperf"}], C)
    assert q1["system", "cpu_util.local"] == q0["system", "cpu_util.local"]


@pytest.mark.parametrize("proto", ["udp", "tcp"])
def test_a_ping_pong_pays_its_four_calls_on_every_round_trip(proto):
    """sockperf ping-pong makes one send() and one recv() on each end per transaction (strace inside UML,
    data/uml/2026-11-29/uml-rr), all on the message's path: on one otherwise idle core each round trip grows
    by exactly four calls, the transaction rate falls with it, and each call is booked once as busy time."""
    rr = [{"name": "rr", "tool": "sockperf", "proto": proto, "m": "14b", "mps": "max", "t": "0.2s",
           "from": "ns1", "to": "ns2"}]
    p0, s0 = run(rr, None, duration=0.3)
    p1, s1 = run(rr, C, duration=0.3)
    r0, r1 = np.asarray(s0["rr:rtt"]) * 1e-3, np.asarray(s1["rr:rtt"]) * 1e-3
    # (the path's own costs are random draws: a call more or less would move it by 25 %)
    assert np.median(r1) - np.median(r0) == pytest.approx(4 * C, rel=0.02)
    assert r1.size == pytest.approx(r0.size * r0.mean() / r1.mean(), rel=0.02)     # closed loop: 1 / RTT
    # the core's busy share: the path's work per transaction (from the run without calls) plus four calls each
    span = ARP_SETTLE + 0.3
    path = p0["system", "cpu_util.local"] / 100 * span / r0.size
    assert p1["system", "cpu_util.local"] == pytest.approx(100 * r1.size * (path + 4 * C) / span, rel=0.02)
