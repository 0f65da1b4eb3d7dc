"""A veth pair between two bridges costs what a namespace's veth costs (ovssim/topology.py, veth_cost_key).

Both are one crossing of the same driver path: ``veth_xmit`` -> ``veth_forward_skb`` -> ``__netif_rx`` onto
the sending CPU's backlog, then ``process_backlog`` -> ``__netif_receive_skb`` into the peer's rx_handler
(drivers/net/veth.c, net/core/dev.c).  A profile that prices the container's veth (fitted) and not the link's
own ``veth.*`` prices the link the same; ``veth.*`` stated wins; with neither, the default's ``veth.*``."""
import pytest

from ovssim.profile import Profile
from ovssim.runner import run_replication
from ovssim.scenario import from_dict
from ovssim.topology import ARP_SETTLE, veth_cost_key

DURATION = 0.2
FORWARD = 1e-6        # linux_bridge.forward, constant


def _busy_and_frames(chain: int, sets: dict) -> tuple[float, int]:
    """CPU seconds on the host and frames through the first bridge, UDP 10 Mbit/s across ``chain``
    veth-linked Linux bridges."""
    d = {"scenario": {"name": "c", "duration": f"{DURATION}s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "kind": "linux", "chain": chain, "link": "veth"}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br"},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br" if chain == 1 else f"br-{chain}"}],
         "workload": [{"name": "u", "tool": "iperf", "proto": "udp", "from": "a", "to": "b",
                       "b": "10mbit", "l": "1000b", "t": "0.1s"}]}
    prof = Profile.load("default").with_overrides({"linux_bridge.forward": f"{FORWARD * 1e6}us", **sets},
                                                  source="test")
    sc = from_dict(d, file="<test>")
    rows, _, counters = run_replication(sc, prof, 0, 3)
    util = next(r["value"] for r in rows if r["metric"] == "cpu_util.h")
    return util / 100 * 2 * (ARP_SETTLE + sc.warmup + sc.duration), counters["bridge:br"]["forwarded"]


def _hop_cost(sets: dict) -> float:
    """CPU per frame that a second bridge and its veth link add."""
    b1, n1 = _busy_and_frames(1, sets)
    b2, n2 = _busy_and_frames(2, sets)
    assert n1 == n2 > 100
    return (b2 - b1) / n1


def test_a_link_costs_the_fitted_container_veth():
    # the profile prices the container's veth (0.3 us per skb, nothing per byte), not the link's own veth.*
    # (the embedded default's 2 us and 0.1 ns/byte): a second bridge adds its forwarding and one such crossing
    hop = _hop_cost({"vif.container-veth.cpu_per_packet": "0.3us", "vif.container-veth.cpu_per_byte": "0ns"})
    assert hop == pytest.approx(FORWARD + 0.3e-6, rel=0.02)


def test_a_stated_link_cost_wins():
    hop = _hop_cost({"vif.container-veth.cpu_per_packet": "0.3us", "vif.container-veth.cpu_per_byte": "0ns",
                     "veth.cpu_per_packet": "5us", "veth.cpu_per_byte": "0ns"})
    assert hop == pytest.approx(FORWARD + 5e-6, rel=0.02)


def test_the_key_follows_what_the_profile_states():
    default = Profile.load("default")
    assert veth_cost_key(default, "cpu_per_packet") == "veth.cpu_per_packet"
    fitted = default.with_overrides({"vif.container-veth.cpu_per_packet": "0.2us"}, source="fit")
    assert veth_cost_key(fitted, "cpu_per_packet") == "vif.container-veth.cpu_per_packet"
    assert veth_cost_key(fitted, "cpu_per_byte") == "veth.cpu_per_byte"        # not stated: the default's
    both = fitted.with_overrides({"veth.cpu_per_packet": "1us"}, source="fit")
    assert veth_cost_key(both, "cpu_per_packet") == "veth.cpu_per_packet"
    # a profile moved to another machine state keeps what it states (Profile.scaled)
    assert veth_cost_key(Profile.load("calibration/local_netns.toml").scaled(0.5), "cpu_per_packet") \
        == "vif.container-veth.cpu_per_packet"
