"""Run to completion: a sender that shares the host's kernel carries its packets' softirq work itself.

net/core/dev.c: ``dev_queue_xmit`` on a veth queues the frame on the sending CPU's backlog
(``netif_rx``) and ``local_bh_enable`` processes it before the send returns -- through the
bridge, the peer veth and the receiver's stack, ACKs included.  So a CPU-bound flow between two
containers keeps no queue in the kernel: its rate is one segment per core-time of that work, and a
ping beside it waits for at most the segment in hand.  A VM's sender hands its packets to a backend
thread instead, which is where the model lets a queue build.
"""
import copy

import pytest
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.errors import ConfigError
from ovssim.path.cpu import CpuPool, conn_key, flow_key
from ovssim.path.datapath import OvsDatapath
from ovssim.distributions import Sampler
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict

import numpy as np

MSS = 1448
# constant CPU costs, so the bottleneck core's work per segment is known exactly, and no latency that
# is not CPU work (a veth's backend delay, the receive stack's): inside a chain the sender carries, such a
# delay leaves its core idle until the work after it starts
COSTS = {"vif.{kind}.backend_delay": "0us", "vif.{kind}.cpu_per_packet": "1us", "vif.{kind}.cpu_per_byte": "0ns",
         "linux_bridge.forward": "3us", "host.stack_delay": "0us", "app.send_per_packet": "2us",
         "app.recv_per_packet": "2us"}


GSO_FREE = {"gso.cpu_per_segment": "0us", "gso.cpu_per_byte": "0ns"}
TX_OFF = {"tx-checksumming": False}


def _scenario(kind: str, workloads: list[dict], duration: float = 0.6, **params) -> dict:
    return {
        "scenario": {"name": f"rtc-{kind}", "duration": f"{duration}s", "reps": 1, "seed": 3, "profile": "default"},
        "params": {**{k.format(kind=kind): v for k, v in COSTS.items()}, **params},
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
        "vm": [{"name": "a", "host": "h", "vif": kind, "bridge": "br", "features": TX_OFF},
               {"name": "b", "host": "h", "vif": kind, "bridge": "br", "features": TX_OFF}],
        "workload": workloads,
    }


TCP = {"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b", "O": "0.1s", "t": "0.45s"}
PING = {"name": "ping", "tool": "ping", "from": "a", "to": "b", "c": 30, "i": "10ms", "start": "0.2s"}


def _run(kind, workloads, duration=0.6, **params):
    res = run_scenario(from_dict(_scenario(kind, workloads, duration, **params), file="rtc"), reps=1)
    s = res.summary.set_index(["workload", "metric"])["mean"]
    return s, res.counters[0]


def test_cpu_bound_tcp_between_containers_runs_at_one_core_per_segment():
    """All of a connection's softirq work on its core.  With ``tx off`` on the containers' interfaces
    (the collector's setting) TCP still builds 64 KB GSO skbs (45 segments: RTT far below 512 us,
    ``tcp_tso_autosize``) and the veth's transmit cuts them (software GSO, free here): 2 us (send) per
    skb, then per segment 1 (veth) + 3 (bridge) + 1 (peer veth) us, plus an ACK's 1 + 3 + 1 us every
    second segment = 7.5 us + 2/45 us.  The reader's recv() copy is left out: it runs on whichever core
    is free, and between two skbs the flow's core is.  Goodput = 1448 * 8 bit / 7.544 us = 1535 Mbit/s,
    with nothing dropped."""
    s, counters = _run("container-veth", [TCP], **GSO_FREE, **{"app.recv_per_packet": "0us"})
    assert s[("tcp", "throughput")] == pytest.approx(MSS * 8 / (7.5e-6 + 2e-6 / 45) / 1e6, rel=0.03)
    assert s[("tcp", "retransmits")] == 0
    assert counters["cpu:h"]["refused"] == 0


def test_ping_beside_a_cpu_bound_flow_waits_for_one_skb_at_most():
    idle, _ = _run("container-veth", [PING])
    loaded, counters = _run("container-veth", [TCP, PING])
    # the probe's chain shares the flow's core at worst: one GSO skb's work ahead of each crossing --
    # 45 segments x 9.5 us (7.5 us + the reader's 2 us when it lands on that core) + 2 us
    one_skb = (45 * 9.5 + 2) / 1000                                                   # ms
    assert loaded[("ping", "rtt_mean")] - idle[("ping", "rtt_mean")] < 2 * one_skb
    assert loaded[("ping", "loss")] == 0 and counters["cpu:h"]["refused"] == 0


def test_a_vms_sender_is_not_held_back_and_builds_a_backlog():
    """The contrast: behind a backend thread (kvm-tap) the guest sends at its own pace and the
    host's work queues -- the ping under load waits milliseconds, not one skb's work.  (TCP Small
    Queues bounds that backlog by the guest socket's budget, about 1 ms of data at its pacing rate:
    tests/core/test_batching.py checks the bound itself.)"""
    loaded, _ = _run("kvm-tap", [TCP, PING])
    rtc, _ = _run("container-veth", [TCP, PING])
    assert loaded[("ping", "rtt_mean")] > 5 * rtc[("ping", "rtt_mean")]


def test_a_cpu_bound_udp_sender_slows_down_instead_of_overflowing_the_backlog():
    """iperf -u at 5 Gbit/s between containers: the sender can only go as fast as its core carries
    each datagram through (2 + 1 + 3 + 1 = 7 us; the server's recv() runs on the other core, where the
    scheduler puts the reading process): nothing is dropped on the way, and the offered rate is not
    reached (the real iperf reports the same)."""
    udp = {"name": "udp", "tool": "iperf", "proto": "udp", "from": "a", "to": "b", "b": "5gbit", "l": "1470b",
           "t": "0.3s"}
    s, counters = _run("container-veth", [udp], duration=0.4)
    assert counters["cpu:h"]["refused"] == 0 and s[("udp", "loss")] == 0
    per_datagram = 1470 * 8 / (s[("udp", "throughput")] * 1e6)
    assert per_datagram == pytest.approx(7e-6, rel=0.03)     # the server's recv() runs on the other core
    # with no sendto() cost of its own the sender would offer a datagram every 2.35 us; it still waits
    # for its core (1 + 3 + 1 = 5 us of veth and bridge work per datagram)
    s, counters = _run("container-veth", [udp], duration=0.4, **{"app.send_per_packet": "0us"})
    assert counters["cpu:h"]["refused"] == 0 and s[("udp", "loss")] == 0
    per_datagram = 1470 * 8 / (s[("udp", "throughput")] * 1e6)
    assert per_datagram == pytest.approx(5e-6, rel=0.03)


def test_conn_key_is_the_same_both_ways_and_differs_between_connections():
    f = FlowKey("a", "b", 40001, 5201, "tcp")
    back = FlowKey("b", "a", 5201, 40001, "tcp")
    assert conn_key(f) == conn_key(back)
    assert flow_key(f) != flow_key(back)
    keys = {conn_key(FlowKey("a", "b", p, 5201, "tcp")) for p in range(40000, 40064)}
    assert len(keys) == 64
    assert conn_key(FlowKey("a", "b", 1, 2, "udp")) != conn_key(FlowKey("a", "b", 1, 2, "tcp"))


@pytest.mark.parametrize("thread_key", [None, 7])
def test_netdev_datapath_does_every_flows_work_in_its_thread(thread_key):
    """datapath_type netdev: one polling thread (one core) for all flows; system: each connection's core."""
    env = simpy.Environment()
    cpu = CpuPool(env, 4, "h", backlog_limit=None)
    samp = Sampler("1us", np.random.default_rng(0))
    dp = OvsDatapath(env, "br", cpu, stats=samp, lookup=samp, actions=samp, upcall=samp, thread_key=thread_key)
    sinks = []

    class Sink:
        def put(self, pkt):
            sinks.append(pkt)

    p0 = dp.add_port("p0", Sink())
    dp.add_port("p1", Sink())
    flows = [FlowKey("x", "y", sport, 80, "tcp") for sport in range(1000, 1032)]
    for f in flows:
        for seq in range(3):
            p0.put(Packet(f, 100, 0.0, seq=seq, dst_mac="y"))
    env.run()
    busy_cores = {i for i, b in enumerate(cpu.busy) if b > 0}
    if thread_key is None:
        assert busy_cores == {conn_key(f) % 4 for f in flows} and len(busy_cores) > 1
    else:
        assert busy_cores == {thread_key % 4}


def test_datapath_type_in_scenarios():
    from ovssim.profile import Profile
    from ovssim.runner import rng_factory
    from ovssim.topology import build
    sc = _scenario("container-veth", [PING])
    sc["bridge"][0]["kind"] = "ovs"
    keys = {}
    for dpt in ("system", "netdev", None):
        d = copy.deepcopy(sc)
        if dpt is not None:
            d["bridge"][0]["datapath_type"] = dpt
        topo = build(simpy.Environment(), from_dict(d, file="x"), Profile.default(), rng_factory(1, 0))
        keys[dpt] = topo.bridges["br"].thread_key
        run_scenario(from_dict(d, file="x"), reps=1)
    assert keys["system"] is None and keys[None] is None         # the kernel datapath: per-connection cores
    assert isinstance(keys["netdev"], int)                        # one ovs-vswitchd thread
    d = copy.deepcopy(sc)
    d["bridge"][0]["datapath_type"] = "dpdk"
    with pytest.raises(ConfigError, match="datapath_type"):
        from_dict(d, file="x")
    d["bridge"][0].update(kind="linux", datapath_type="netdev")     # an OVS setting a Linux bridge ignores
    from_dict(d, file="x")
