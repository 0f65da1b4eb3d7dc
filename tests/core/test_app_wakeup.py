"""The application's wake-up on the request/response paths (app.wakeup; ovssim/workloads/netperf.py, rr.py).

A TCP_RR message wakes its blocked reader (sock_def_readable -> try_to_wake_up) on both ends, so a
transaction pays two wake-ups; an ICMP echo is answered in softirq (icmp_echo, net/ipv4/icmp.c), so ping
pays none.  Measured on this machine, quiet (data/local/2026-11-24, Linux bridge): ping median 72 us,
qperf tcp_lat 85 us.
"""
import copy
from pathlib import Path

import numpy as np
import pytest

from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"
WAKE = 20e-6


def _run(wakeup: float, workload: dict, key: str):
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = "0.5s"
    d.setdefault("params", {})["app.wakeup"] = f"{wakeup * 1e6}us"
    d["workload"] = [{"name": "w", "from": "ns1", "to": "ns2", **workload}]
    res = run_scenario(d, reps=1, seed=3)
    return res, np.asarray(res.samples.get(key, []))


def test_tcp_rr_pays_two_wakeups_per_transaction():
    wl = {"tool": "netperf", "test": "TCP_RR", "r": "1,1", "l": "0.3s"}
    plain, lat0 = _run(0.0, wl, "w:rr_latency")
    woken, lat1 = _run(WAKE, wl, "w:rr_latency")
    assert lat0.size and lat1.size
    # each transaction: the server's and the client's wake-up (ms)
    assert np.median(lat1) - np.median(lat0) == pytest.approx(2 * WAKE * 1e3, rel=0.15)


@pytest.mark.parametrize("workload", [
    {"tool": "qperf", "test": "tcp_lat", "t": "0.3s"},
    {"tool": "qperf", "test": "udp_lat", "t": "0.3s"},
    {"tool": "sockperf", "proto": "udp", "m": "64b", "t": "0.3s"},
])
def test_qperf_and_sockperf_pay_two_wakeups_too(workload):
    """qperf tcp_lat is what the local profiles' app.wakeup is fitted on (simulated there as netperf TCP_RR):
    the tool itself pays the same two wake-ups, TCP or UDP (sk_data_ready = sock_def_readable for both)."""
    _, r0 = _run(0.0, workload, "w:rtt")
    _, r1 = _run(WAKE, workload, "w:rtt")
    assert r0.size and r1.size
    assert np.median(r1) - np.median(r0) == pytest.approx(2 * WAKE * 1e3, rel=0.15)


def test_ping_skips_the_wakeup():
    wl = {"tool": "ping", "c": 30, "i": "10ms"}
    _, r0 = _run(0.0, wl, "w:rtt")
    _, r1 = _run(WAKE, wl, "w:rtt")
    assert r0.size == r1.size == 30
    assert np.array_equal(r0, r1)


@pytest.mark.parametrize("busy", [0.0, 0.25, 1.0])
def test_an_idle_cores_wakeup_is_paid_with_the_idle_share(busy):
    """app.idle_wake (a halted vCPU's wake-up through the hypervisor) is paid per message with the idle share
    1 - [state] cpu_busy: all of it on an idle machine, none on a busy one; ping still pays nothing."""
    from ovssim.profile import Profile

    def prof(idle_wake):
        return Profile({"profile": {"name": "p"}, "state": {"cpu_busy": busy},
                        "params": {"app.idle_wake": f"{idle_wake * 1e6}us"}}, base=Profile.default())

    def run(idle_wake, workload, key):
        d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
        d["scenario"]["duration"] = "0.5s"
        d.pop("params", None)
        d["workload"] = [{"name": "w", "from": "ns1", "to": "ns2", **workload}]
        return np.asarray(run_scenario(d, profile=prof(idle_wake), reps=1, seed=3).samples.get(key, []))

    rr = {"tool": "netperf", "test": "TCP_RR", "r": "1,1", "l": "0.3s"}
    lat0, lat1 = run(0.0, rr, "w:rr_latency"), run(WAKE, rr, "w:rr_latency")
    assert lat0.size and lat1.size
    assert np.median(lat1) - np.median(lat0) == pytest.approx(2 * (1 - busy) * WAKE * 1e3, rel=0.15, abs=1e-4)
    ping = {"tool": "ping", "c": 30, "i": "10ms"}
    assert np.array_equal(run(0.0, ping, "w:rtt"), run(WAKE, ping, "w:rtt"))
