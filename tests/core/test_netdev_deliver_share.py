"""The netdev datapath's chain links (ovssim/path/datapath.py): the delivery share ``ovs.deliver_share``.

ovs-vswitchd sends each frame with sendto() on the output port's AF_PACKET socket: into a namespace's
veth the receiving stack's softirq work runs inside the pass, into a veth that links two bridges only
packet_rcv does.  A pass whose output port is a chain link costs ``1 - deliver_share`` of a pass; the
kernel datapath and single bridges are unaffected."""
import pytest

from ovssim.profile import Profile
from ovssim.runner import run_scenario

PASS = 10e-6          # a constant fast-path pass: ovs.stats 10 us, lookup and actions 0
DURATION = 0.2


def _busy_and_hits(share: float, chain: int = 2, datapath: str = "netdev"):
    d = {"scenario": {"name": "c", "duration": f"{DURATION}s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "chain": chain, "link": "veth", "datapath_type": datapath}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br" if chain == 1 else f"br-{chain}"}],
         "workload": [{"name": "u", "tool": "iperf", "proto": "udp", "from": "a", "to": "b",
                       "b": "10mbit", "t": "0.1s"}]}
    res = run_scenario(d, reps=1, seed=3, profile=Profile.load("default"),
                       sets={"ovs.stats": "10us", "ovs.lookup": "0us", "ovs.actions": "0us", "ovs.deliver_share": share})
    pr = res.per_rep
    util = float(pr[(pr.workload == "system") & (pr.metric == "cpu_util.h")]["value"].iloc[0])
    hits = float(pr[(pr.workload == "system") & (pr.metric == "br.hit")]["value"].iloc[0])
    return util / 100 * 2 * DURATION, hits    # CPU seconds on the host's 2 cores (util in %), first bridge's hits


def test_a_pass_into_a_chain_link_saves_the_delivery_share_of_its_cost():
    busy0, hits = _busy_and_hits(0.0)
    busy_q, _ = _busy_and_hits(0.25)
    busy_h, _ = _busy_and_hits(0.5)
    assert hits > 80
    # the first bridge's passes all go out through the link: each saves share x PASS
    assert busy0 - busy_h == pytest.approx(0.5 * PASS * hits, rel=0.05)
    assert busy0 - busy_q == pytest.approx((busy0 - busy_h) / 2, rel=1e-6)


@pytest.mark.parametrize("chain, datapath", [(1, "netdev"), (2, "system")])
def test_single_bridges_and_the_kernel_datapath_pay_whole_passes(chain, datapath):
    assert _busy_and_hits(0.0, chain, datapath)[0] == _busy_and_hits(0.6, chain, datapath)[0]
