"""OVS set_queue: a flow rule steers one flow into an HTB queue (class 1:2) that shapes it; the rest uses queue 0."""
from pathlib import Path

import pytest

from ovssim.errors import ConfigError
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "thesis_kvm_ovs.toml"

QOS = {"type": "linux-htb", "other-config": {"max-rate": "100000000"},
       "queues": {"0": {"min-rate": "50000000", "max-rate": "100000000"},
                  "1": {"min-rate": "10000000", "max-rate": "20000000"}}}


def scenario(flows):
    sc = load_scenario(EXAMPLE)
    data = sc.data
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    data["scenario"]["duration"] = "2s"
    data["bridge"][0]["flows"] = flows
    data["nic"][0]["qdisc"] = QOS
    data["workload"] = [
        {"name": "a", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm2", "b": "40mbit", "l": "1470b"},
        {"name": "b", "tool": "iperf", "proto": "udp", "from": "vm1", "to": "vm2", "b": "40mbit", "l": "1470b",
         "port": 5002},
    ]
    return data


def test_set_queue_shapes_only_the_matched_flow():
    res = run_scenario(scenario([{"match": {"proto": "udp", "dport": 5002}, "set_queue": 1}]), reps=1)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    # flow b is held to queue 1's max-rate (20 Mbit/s of frames -> ~19.4 Mbit/s of payload)
    assert s[("b", "throughput")] == pytest.approx(20.0 * 1470 / 1512, rel=0.03)
    # fluid model: the class's leaf queue (1000 packets) absorbs the first excess, the rest is dropped
    offered = 40e6 / (1470 * 8)
    served = 20e6 / (1512 * 8)
    assert s[("b", "loss")] == pytest.approx(100 * ((offered - served) * 2.0 - 1000) / (offered * 2.0), abs=1.5)
    # flow a (queue 0, 50..100 Mbit/s) is untouched
    assert s[("a", "loss")] == 0.0
    assert s[("a", "throughput")] == pytest.approx(40.0, rel=0.01)


def test_without_rules_both_flows_share_queue_0():
    res = run_scenario(scenario([]), reps=1)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    assert s[("a", "loss")] == 0.0 and s[("b", "loss")] == 0.0


def test_bad_flow_rule_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown match field"):
        load_scenario(scenario([{"match": {"colour": "red"}, "set_queue": 1}]))
    with pytest.raises(ConfigError, match="set_queue"):
        load_scenario(scenario([{"match": {"dport": 1}, "set_queue": -1}]))
