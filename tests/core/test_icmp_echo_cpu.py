"""The kernel's answer to an ICMP echo as CPU work (``host.icmp_echo``, ovssim/workloads/ping.py).

``icmp_rcv`` -> ``icmp_echo`` -> ``icmp_reply`` builds the reply and transmits it in the softirq that received
the request (net/ipv4/icmp.c).  For a container behind a veth that softirq runs on the connection's core, so
the work adds to a warm round trip exactly once, and runs ``host.cold_factor`` times slower on a core just out
of a long idle -- which a latency (``host.stack_delay``) would not.
"""
from __future__ import annotations

import pytest

from ovssim.profile import Profile
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict

COLD = 3.0
QUIET_PATH = {"host.stack_delay": "0us", "vif.container-veth.backend_delay": "0us", "linux_bridge.forward": "0.5us",
              "host.idle_exit": "40us", "host.idle_exit_after": "5ms", "host.cold_factor": COLD,
              "host.cold_work": "30us"}


def _ping(spacing: str, echo: str, count: int, vif: str = "container-veth"):
    sc = from_dict({
        "scenario": {"name": "echo", "duration": "1s", "reps": 1, "seed": 3, "profile": "default"},
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
        "vm": [{"name": n, "host": "h", "vif": vif, "bridge": "br"} for n in ("a", "b")],
        "workload": [{"name": "ping", "tool": "ping", "from": "a", "to": "b", "c": count, "i": spacing}]})
    res = run_scenario(sc, reps=1, seed=3, profile=Profile.load("default"),
                       sets={**QUIET_PATH, "host.icmp_echo": echo})
    rows = res.per_rep[(res.per_rep["workload"] == "ping") & (res.per_rep["metric"] == "rtt_mean")]
    return float(rows["value"].iloc[0]) * 1e-3, res


def test_a_warm_ping_pays_the_echo_once():
    (base, _), (more, _) = _ping("0.2ms", "0us", 200), _ping("0.2ms", "2.5us", 200)
    assert more - base == pytest.approx(2.5e-6, rel=0.01)


def test_a_lone_ping_runs_the_echo_cold():
    """Pings 10 ms apart find the core out of its deep idle: the echo's work runs cold_factor times slower."""
    (base, _), (more, _) = _ping("10ms", "0us", 60), _ping("10ms", "2.5us", 60)
    assert more - base == pytest.approx(COLD * 2.5e-6, rel=0.02)

