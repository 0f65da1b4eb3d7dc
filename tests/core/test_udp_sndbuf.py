"""A UDP sender's send buffer on a path that keeps its skbs charged (``UdpSendBuffer``, ovssim/workloads/udp_sndbuf.py).

Linux: ``sock_alloc_send_pskb`` blocks ``sendmsg`` while ``sk_wmem_alloc >= sk_sndbuf`` and
``sock_def_write_space`` wakes the writer once the charge is at half (net/core/sock.c).  Behind a veth that
does not orphan (Linux 6.1), datagrams queued at a 50 Mbit/s shaper stay charged until the receiver's IP layer
takes them, so iperf 2 at 95 Mbit/s is held to the shaper's rate with nothing lost -- as measured inside UML
(data/uml/2026-11-29/uml-ovs-kernel: HTB and HFSC at 50 Mbit/s, 0-0.2 % lost).  Behind an orphaning veth (this
host's 6.18) the same sender loses the excess at the shaper's queue: 1 - 50/95 of it in the steady state.
"""
import copy
from pathlib import Path

import pytest
import simpy

from ovssim.packet import FlowKey, Packet
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario
from ovssim.workloads.udp_sndbuf import UdpSendBuffer

SCENARIO = Path(__file__).resolve().parents[2] / "validation" / "scenarios" / "local_netns.toml"
HTB50 = {"kind": "htb", "default": "1", "classes": [
    {"classid": "1:1", "parent": "1:", "rate": "50mbit", "ceil": "50mbit", "qdisc": {"kind": "pfifo", "limit": 1000}}]}


def run(orphans: bool):
    d = copy.deepcopy({k: v for k, v in load_scenario(SCENARIO).data.items() if not k.startswith("_")})
    d["scenario"]["duration"] = "0.6s"
    d["bridge"][0]["kind"] = "linux"
    for vm in d["vm"]:
        vm["veth_orphans"] = orphans
        if vm["name"] == "ns2":
            vm["qdisc"] = HTB50
    d["workload"] = [{"name": "udp", "tool": "iperf", "proto": "udp", "from": "ns1", "to": "ns2", "b": "95mbit",
                      "l": 1470, "t": "0.5s"}]
    res = run_scenario(d, reps=1, seed=3)
    return res.per_rep.groupby(["workload", "metric"])["value"].first()


def test_a_charged_path_holds_the_sender_to_the_shaper_without_loss():
    held, dropped = run(False), run(True)
    assert held["udp", "loss"] == 0.0
    assert held["udp", "throughput"] == pytest.approx(50 * 1470 / 1512, rel=0.03)    # the class's rate, payload
    # the orphaning path: the 1000-packet queue fills in ~0.35 s, then 45 of every 95 datagrams are dropped
    assert dropped["udp", "loss"] > 5.0
    assert dropped["udp", "throughput"] == pytest.approx(held["udp", "throughput"], rel=0.03)


def test_the_buffer_blocks_at_sndbuf_wakes_at_half_and_returns_every_byte():
    env = simpy.Environment()
    buf = UdpSendBuffer(env, limit=10_000)
    flow = FlowKey("a", "b", 1, 2, "udp")
    pkts = []
    while buf.alloc < buf.limit:                        # sendmsg allocates while the charge is below sk_sndbuf
        pkts.append(Packet(flow, 1512, 0.0, 1470))
        buf.charge(pkts[-1])
    assert len(pkts) == -(-10_000 // pkts[0].wmem)      # the last one may overshoot, as the kernel's does

    class Timer:                                        # a stand-in for the sender's re-armed Call
        callbacks = None
    timer = Timer()
    buf.wait(timer)
    woke = []
    for i, p in enumerate(pkts):
        buf.tsq_free(p, 0.0)
        if timer.callbacks is not None and not woke:
            woke.append((i + 1, buf.alloc))
    assert woke and 2 * woke[0][1] <= buf.limit < 2 * (woke[0][1] + pkts[0].wmem)     # woken at half, not before
    assert buf.alloc == 0 and buf.waiter is None and buf.blocked == 1
    buf.tsq_free(pkts[0], 0.0)                          # freed twice: the second is not its charge any more
    assert buf.alloc == 0


def test_a_fragmented_datagram_s_charge_passes_to_its_fragments_and_returns_whole():
    """A datagram above the MTU leaves as IP fragments (``__ip_append_data``): the socket is charged each
    fragment skb's truesize instead of the datagram's, and freeing every fragment returns every byte."""
    from types import SimpleNamespace
    from ovssim.path.afpacket import truesize
    from ovssim.workloads.ipfrag import Reassembly, ip_fragments
    from ovssim.workloads.udp import IperfUdp
    env = simpy.Environment()
    buf = UdpSendBuffer(env)
    sent = []
    wl = IperfUdp(rate_bps=1e6, length=3000)
    sizes = ip_fragments(3000)
    wl._frag = (sizes, Reassembly(sizes))
    wl.src = SimpleNamespace(out=SimpleNamespace(put=sent.append))
    pkt = Packet(FlowKey("a", "b", 1, 2, "udp"), 3042, 0.0, 3000)
    buf.charge(pkt)
    wl._put(pkt)
    assert len(sent) == len(sizes) == 3 and pkt.owner is None
    assert buf.alloc == sum(truesize(s) for s in sizes) and all(f.owner is buf for f in sent)
    for f in sent:
        buf.tsq_free(f, 0.0)
    assert buf.alloc == 0
