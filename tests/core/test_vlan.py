"""VLAN isolation: seed 002 Table III (ping/ARP with VLAN tags 5 and 6 across two XenServer hosts)."""
import pytest

from ovssim.runner import run_scenario

# seed 002 Table III: VM1 (T-5), VM2 (T-6) on server 1; VM3 (T-5), VM4 (T-6) on server 2
TAGS = {"vm1": 5, "vm2": 6, "vm3": 5, "vm4": 6}
HOST = {"vm1": "xs1", "vm2": "xs1", "vm3": "xs2", "vm4": "xs2"}
TABLE_III = {("vm1", "vm3"), ("vm3", "vm1"), ("vm2", "vm4"), ("vm4", "vm2")}


def scenario(src, dst, tagged=True):
    vms = [{"name": v, "host": HOST[v], "vif": "xen-vif", "bridge": f"br-{HOST[v]}",
            **({"vlan": TAGS[v]} if tagged else {})} for v in TAGS]
    return {
        "scenario": {"name": "vlan", "duration": "1s", "reps": 1, "seed": 3},
        "host": [{"name": "xs1", "cores": 2}, {"name": "xs2", "cores": 2}],
        "bridge": [{"name": "br-xs1", "host": "xs1", "uplink": "eth-xs1"},
                   {"name": "br-xs2", "host": "xs2", "uplink": "eth-xs2"}],
        "nic": [{"name": "eth-xs1", "host": "xs1", "rate": "1gbit", "switch": "sw"},
                {"name": "eth-xs2", "host": "xs2", "rate": "1gbit", "switch": "sw"}],
        "switch": [{"name": "sw"}],
        "vm": vms,
        "workload": [{"tool": "ping", "name": "p", "from": src, "to": dst, "i": "0.1s"}],
    }


@pytest.mark.parametrize("src", sorted(TAGS))
@pytest.mark.parametrize("dst", sorted(TAGS))
def test_table_iii_isolation(src, dst):
    if src == dst:
        pytest.skip("diagonal of Table III")
    res = run_scenario(scenario(src, dst))
    loss = res.summary.query("workload == 'p' and metric == 'loss'")["mean"].item()
    reachable = loss < 100.0
    assert reachable == ((src, dst) in TABLE_III)


def test_table_ii_untagged_all_reach():
    for src, dst in [("vm1", "vm2"), ("vm1", "vm4"), ("vm3", "vm2")]:
        res = run_scenario(scenario(src, dst, tagged=False))
        assert res.summary.query("workload == 'p' and metric == 'loss'")["mean"].item() == 0.0
