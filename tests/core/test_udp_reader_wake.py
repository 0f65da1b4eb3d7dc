"""A datagram that finds iperf's server blocked wakes it first, and the wake-ups' spread is jitter.

iperf's server takes a datagram's receive time in user space after its read, so the reader's wake-up
(sock_def_readable -> try_to_wake_up) is in the delay it reports; each wake-up is drawn from a lognormal
of shape READER_WAKE_SHAPE around the run's mean app wake-up (sockperf across this machine's cores: 25.5
/ 35 us median / 90th percentile).  For a lognormal of mean m and shape s, E|X1 - X2| = 2 sigma / sqrt(pi)
with sigma = m sqrt(exp(s^2) - 1).
"""
from __future__ import annotations

import math

import pytest

from ovssim.profile import Profile
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict
from ovssim.workloads.udp import READER_WAKE_SHAPE


def _udp(wakeup: str) -> dict:
    sc = {"scenario": {"name": "udp-wake", "duration": "1s", "reps": 1, "seed": 5},
          "host": [{"name": "h", "cores": 2}],
          "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
          "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                 {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
          "workload": [{"name": "u", "tool": "iperf", "proto": "udp", "from": "a", "to": "b",
                        "b": "10mbit", "l": "1400b"}]}
    prof = Profile.load("default").with_overrides({"app.wakeup": wakeup, "host.stack_delay": "5us"})
    df = run_scenario(from_dict(sc, file="<test>"), profile=prof).per_rep
    m = df[df["workload"] == "u"].set_index("metric")["value"]
    return m


def test_each_datagram_wakes_the_blocked_reader_and_the_wakes_spread_is_jitter():
    quiet, woken = _udp("0us"), _udp("26us")
    sigma = 26e-6 * math.sqrt(math.exp(READER_WAKE_SHAPE ** 2) - 1)
    expected = 2 * sigma / math.sqrt(math.pi) * 1e3          # ms
    assert quiet["jitter_mean"] < 0.3 * expected             # the path's own spread (bridge forwarding draws)
    # independent spreads: the wake-ups' add to the path's (in quadrature, to first order)
    assert math.sqrt(woken["jitter_mean"] ** 2 - quiet["jitter_mean"] ** 2) == pytest.approx(expected, rel=0.15)
    assert woken["delay_mean"] - quiet["delay_mean"] == pytest.approx(26e-3, rel=0.05)   # ms: one wake each
    assert woken["throughput"] == pytest.approx(quiet["throughput"], rel=0.01)   # no datagram lost
