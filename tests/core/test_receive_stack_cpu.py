"""The receiving kernel's IP/TCP work as CPU per delivery (``host.stack_cpu``, ovssim/path/endpoint.py).

``veth_xmit`` -> ``veth_forward_skb`` -> ``__netif_rx`` queues a frame on the current CPU's backlog
(drivers/net/veth.c, net/core/dev.c ``enqueue_to_backlog``); the transmit's ``local_bh_enable`` runs
``process_backlog`` -> ``__netif_receive_skb`` at once, through the bridge (``br_handle_frame`` ->
``br_forward``) and the peer veth up to ``ip_rcv`` -> ``tcp_v4_rcv`` in the receiving namespace.  So for a
container the receive stack's work -- the data's at the receiver, the ACK's at the sender -- runs on the
sending task's core, once per packet delivered, however many bridges the packet crossed.
"""
import pytest

from ovssim.runner import run_scenario
from ovssim.scenario import from_dict

MSS = 1448
# constant costs and no latency that is not CPU work (as tests/core/test_run_to_completion.py)
COSTS = {"vif.container-veth.backend_delay": "0us", "vif.container-veth.cpu_per_packet": "1us",
         "vif.container-veth.cpu_per_byte": "0ns", "veth.cpu_per_packet": "1us", "veth.cpu_per_byte": "0ns",
         "linux_bridge.forward": "3us", "host.stack_delay": "0us", "app.send_per_packet": "2us",
         "app.recv_per_packet": "0us", "gso.cpu_per_segment": "0us", "gso.cpu_per_byte": "0ns"}
TX_OFF = {"tx-checksumming": False}


def _run(workload: dict, chain: int = 1, **params):
    d = {"scenario": {"name": "stack", "duration": "0.6s", "reps": 1, "seed": 3, "profile": "default"},
         "params": {**COSTS, **params},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "kind": "linux", "chain": chain, "link": "veth"}],
         "vm": [{"name": "a", "host": "h", "vif": "container-veth", "bridge": "br", "features": TX_OFF},
                {"name": "b", "host": "h", "vif": "container-veth", "bridge": "br" if chain == 1 else f"br-{chain}",
                 "features": TX_OFF}],
         "workload": [workload]}
    res = run_scenario(from_dict(d, file="stack"), reps=1)
    return res.summary.set_index(["workload", "metric"])["mean"]


TCP = {"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b", "O": "0.1s", "t": "0.45s"}
PING = {"name": "ping", "tool": "ping", "from": "a", "to": "b", "c": 100, "i": "0.2ms"}


def _per_segment(s) -> float:
    """The sender core's time per segment of a CPU-bound flow, from its goodput."""
    return MSS * 8 / (s[("tcp", "throughput")] * 1e6)


def test_a_cpu_bound_container_sender_carries_the_receive_stack():
    """Per segment: 2 us / 45 (send, per 64 KB skb) + 1 + 3 + 1 us (veth, bridge, peer veth) and an ACK's
    1 + 3 + 1 us every second segment = 7.544 us; with ``host.stack_cpu`` = 1 us, one delivery of the data
    at the receiver and half an ACK's at the sender, on the same core: 9.044 us."""
    base = _run(TCP)
    assert _per_segment(base) == pytest.approx(7.5e-6 + 2e-6 / 45, rel=0.03)
    more = _run(TCP, **{"host.stack_cpu": "1us"})
    assert _per_segment(more) == pytest.approx(9.0e-6 + 2e-6 / 45, rel=0.03)
    assert more[("tcp", "retransmits")] == 0


def test_the_receive_stack_is_paid_per_delivery_not_per_hop():
    """Two veth-linked bridges add a bridge and a veth crossing per packet, not a second receive stack: the
    stack's 1.5 us per segment (data + half an ACK) is the same through one bridge and through two."""
    d1 = _per_segment(_run(TCP, **{"host.stack_cpu": "1us"})) - _per_segment(_run(TCP))
    d2 = _per_segment(_run(TCP, 2, **{"host.stack_cpu": "1us"})) - _per_segment(_run(TCP, 2))
    assert d1 == pytest.approx(1.5e-6, rel=0.05)
    assert d2 == pytest.approx(1.5e-6, rel=0.05)


def test_a_warm_ping_pays_the_stack_once_each_way():
    """The request's delivery into b and the reply's into a: twice ``host.stack_cpu`` per round trip."""
    base = _run(PING)[("ping", "rtt_mean")]
    more = _run(PING, **{"host.stack_cpu": "2.5us"})[("ping", "rtt_mean")]
    assert (more - base) * 1e-3 == pytest.approx(5e-6, rel=0.01)
