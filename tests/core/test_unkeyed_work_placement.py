"""Where unkeyed work (a receiving application's recv()) runs when a run-to-completion sender shares the host
(ovssim/cpu/pool.py ``serve``): on a core no sending task keeps busy, while one is idle.

A container's sender runs each datagram through the kernel on its own core and sends the next when that
work is done.  The receiver's recv() of a datagram is booked when the datagram is forwarded, ahead of its
arrival (lookahead); booked on the sender's core it held the sender's next send back until then, so the
send rate followed the receive stack's latency -- one datagram per ``host.stack_delay`` -- which no
kernel does (select_idle_sibling wakes the reader on an idle CPU)."""
import pytest

from ovssim.profile import Profile
from ovssim.runner import run_scenario


def _send_bw(stack_delay: str) -> float:
    d = {"scenario": {"name": "u", "duration": "0.15s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "kind": "ovs"}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br"}],
         "workload": [{"name": "u", "tool": "qperf", "test": "udp_bw", "from": "a", "to": "b", "m": "1400b",
                       "t": "0.1s"}]}
    res = run_scenario(d, reps=1, seed=5, profile=Profile.load("default"),
                       sets={"host.stack_delay": stack_delay, "app.send_per_packet": "2us",
                             "app.recv_per_packet": "2us"})
    pr = res.per_rep
    return float(pr[(pr.workload == "u") & (pr.metric == "send_bw")]["value"].iloc[0])


def test_a_senders_rate_does_not_follow_the_receivers_stack_latency_while_a_core_is_idle():
    fast, slow = _send_bw("10us"), _send_bw("60us")
    assert fast == pytest.approx(slow, rel=0.01)
    # one datagram per stack latency would be 1400 B x 8 / 60 us = 187 Mbit/s
    assert slow > 3 * 1400 * 8 / 60e-6 / 1e6

