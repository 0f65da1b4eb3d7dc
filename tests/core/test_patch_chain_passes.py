"""OVS patch-port chains: one datapath flow for the whole chain (ofproto-dpif-xlate.c patch_port_output)."""
from ovssim.profile import Profile
from ovssim.runner import run_replication
from ovssim.scenario import from_dict


def _counters(link: str):
    d = {"scenario": {"name": "c", "duration": "0.2s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "chain": 4, "link": link}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br-4"}],
         "workload": [{"name": "u", "tool": "iperf", "proto": "udp", "from": "a", "to": "b",
                       "b": "10mbit", "t": "0.1s"}]}
    sc = from_dict(d)
    _, _, counters = run_replication(sc, Profile.load(sc.profile), 0)
    return counters


def test_a_patch_chain_is_one_datapath_pass_and_a_veth_chain_one_per_bridge():
    """Patched bridges share the translation: the middle bridges of a patch chain never look a frame
    up or miss (one datapath flow for the chain); veth-joined bridges are separate datapath passes
    (the frame re-enters through a netdev), each with its own lookups and misses."""
    def passes(link):
        return {k: v["hit"] + v["missed"] for k, v in _counters(link).items() if k.startswith("bridge:")}
    patch, veth = passes("patch"), passes("veth")
    assert patch["bridge:br-2"] == patch["bridge:br-3"] == 0 and patch["bridge:br"] > 80
    assert all(n > 80 for n in veth.values())
