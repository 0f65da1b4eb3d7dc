"""ping -Q: a low-delay probe skips pfifo_fast's band 1 queue -- when its skb priority reaches the qdisc.

Kernel behaviour: ``IP_TOS = 0x10`` gives ``skb->priority = TC_PRIO_INTERACTIVE`` (rt_tos2priority),
which pfifo_fast's default priomap puts in band 0, served before every band-1 packet.  Only the
sender's own skb keeps it (bare metal); a container's veth zeroes it (``____dev_forward_skb``, and the
real kernel on this machine agrees: data/local/local-prio) and a VM's tap/netback builds a new skb.
"""
import copy
from pathlib import Path

import pytest

from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"
# HTB shapes ns2's port to 20 Mbit/s; its only class has pfifo_fast as leaf (tc ... parent 1:1 pfifo_fast)
SHAPER = {"kind": "htb", "default": "1", "classes": [
    {"classid": "1:1", "parent": "1:", "rate": "20mbit", "ceil": "20mbit", "qdisc": {"kind": "pfifo_fast"}}]}


def run(vif: str, tos: int) -> dict:
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = "1.5s"
    d["bridge"][0]["kind"] = "linux"
    for vm in d["vm"]:
        vm["vif"] = vif
        if vm["name"] == "ns2":
            vm["qdisc"] = SHAPER
    d["workload"] = [   # 30 Mbit/s of UDP into a 20 Mbit/s class: its leaf's band 1 fills to 1000 packets
        {"name": "udp", "tool": "iperf", "proto": "udp", "from": "ns1", "to": "ns2", "b": "30mbit", "l": "1470b"},
        {"name": "ping", "tool": "ping", "from": "ns1", "to": "ns2", "start": "1s", "i": "10ms", "c": 40,
         "tos": tos}]
    res = run_scenario(d, reps=1, seed=3)
    return res.summary.set_index(["workload", "metric"])["mean"]


def test_low_delay_probe_from_bare_metal_jumps_the_bulk_queue():
    bulk_queue = 1000 * 1512 * 8 / 20e6          # the full band-1 queue at the class rate: ~0.6 s
    plain, marked = run("bare-metal", 0), run("bare-metal", 0x10)
    assert plain[("ping", "rtt_mean")] > 0.5 * bulk_queue * 1e3          # behind the queue (ms)
    # band 0: waits at most for the packet being sent (1512 B at 20 Mbit/s = 0.6 ms) plus the path
    assert marked[("ping", "rtt_mean")] < 2.0
    assert marked[("udp", "throughput")] == pytest.approx(plain[("udp", "throughput")], rel=0.01)


@pytest.mark.parametrize("vif", ["kvm-tap", "container-veth"])
def test_a_vm_or_container_probe_loses_its_priority_on_the_way(vif):
    marked = run(vif, 0x10)
    assert marked[("ping", "rtt_mean")] > 300.0
