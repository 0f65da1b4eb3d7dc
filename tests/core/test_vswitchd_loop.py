"""ovs-vswitchd's main-loop run around the netdev datapath's passes (ovssim/path/vswitchd_loop.py).

After the pass that handled a frame the thread runs each bridge (``ofproto_run``) before ``poll_block``
can return, so a frame that reaches it after the run's last pass waits for the run's end: bridges x
``ovs.bridge_run``.  A frame forwarded into a veth link always arrives so; frames that arrive while
passes still run join them."""
import numpy as np
import pytest

from ovssim.path.vswitchd_loop import VswitchdLoop
from ovssim.profile import Profile
from ovssim.runner import run_scenario


def test_a_frame_after_the_last_pass_waits_for_every_bridges_run():
    loop = VswitchdLoop(10e-6)
    for _ in range(3):
        loop.add_bridge()
    assert loop.read_at(1.0) == 1.0               # nothing ran yet: read at once
    loop.passed(1.0)
    assert loop.read_at(1.0) == pytest.approx(1.0 + 30e-6)
    assert loop.read_at(1.0 + 29e-6) == pytest.approx(1.0 + 30e-6)
    assert loop.read_at(1.0 + 30e-6) == pytest.approx(1.0 + 30e-6)   # the run is over: poll() returns at once
    assert loop.read_at(0.9) == 0.9               # came while the passes ran: the same run reads it
    loop.passed(0.95)                             # an earlier pass (out of order) does not move the run
    assert loop.read_at(1.0 + 10e-6) == pytest.approx(1.0 + 30e-6)


def test_a_negative_run_is_refused():
    with pytest.raises(ValueError, match="ovs.bridge_run"):
        VswitchdLoop(-1e-6)


def _ping_rtt(run: float, chain: int, link: str = "veth", datapath: str = "netdev") -> float:
    d = {"scenario": {"name": "p", "duration": "0.5s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "chain": chain, "link": link, "datapath_type": datapath}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br" if chain == 1 else f"br-{chain}"}],
         "workload": [{"name": "p", "tool": "ping", "from": "a", "to": "b", "c": 20, "i": "20ms"}]}
    res = run_scenario(d, reps=1, seed=3, profile=Profile.load("default"), sets={"ovs.bridge_run": f"{run * 1e6}us"})
    return float(np.median(res.samples["p:rtt"]))      # the median: the first ping also waits on ARP and upcalls


@pytest.mark.parametrize("chain, link, waits", [
    (1, "veth", 1),        # the reply comes back within the request's run
    (2, "veth", 3),        # + the request's and the reply's link crossings
    (4, "veth", 7),        # three link crossings each way + the reply's return
    (4, "patch", 1),       # patch ports: one pass each way, the reply waits once
])
def test_a_ping_waits_for_the_rest_of_the_run_once_per_frame_that_comes_after_a_pass(chain, link, waits):
    """With a run far longer than any pass or crossing (0.2-0.4 ms per bridge against a few microseconds) and
    far shorter than the 20 ms between pings (so each ping finds the thread asleep), every frame
    but the idle thread's first arrives within the run of the pass before it and waits for its end: the
    request through the idle thread does not wait, the receiver's reply does, and each veth-link crossing
    does.  Doubling the run adds ``waits`` x ``chain`` x the run to the round trip."""
    r = 2e-4
    assert _ping_rtt(2 * r, chain, link) - _ping_rtt(r, chain, link) == pytest.approx(waits * chain * r, rel=1e-6)


def test_the_kernel_datapath_has_no_main_loop_run():
    assert _ping_rtt(1e-3, 2, datapath="system") == _ping_rtt(0.0, 2, datapath="system")
