"""Several pings in one scenario each get their own ICMP identifier and only their own replies.

Kernel behaviour: the destination kernel answers every echo request to its source
(net/ipv4/icmp.c ``icmp_echo``) and an echo reply reaches the ping socket holding its
identifier (net/ipv4/ping.c ``ping_lookup``).  Before the fix two pings drawing the same
identifier stole each other's replies (loss printed as -300 %).
"""
import numpy as np
import simpy

from ovssim.path.endpoint import Endpoint
from ovssim.path.port import EgressPort
from ovssim.workloads.base import RunContext
from ovssim.workloads.ping import Ping


class Switch:
    """Forward by destination name to an egress port towards each endpoint."""

    def __init__(self, env, endpoints, delay):
        self.ports = {e.name: EgressPort(env, 1e9, {"kind": "pfifo", "limit": 1000}, out=e,
                                         prop_delay=delay, name=f"to-{e.name}") for e in endpoints}

    def put(self, pkt):
        self.ports[pkt.flow.dst].put(pkt)


def run_pings(pairs, delay=0.001, duration=1.0):
    env = simpy.Environment()
    hosts = {n: Endpoint(env, n) for n in {h for p in pairs for h in p}}
    sw = Switch(env, hosts.values(), delay)
    for h in hosts.values():
        h.out = sw
    pings = []
    for i, (src, dst) in enumerate(pairs):
        p = Ping(interval=0.05, name=f"ping{i}")
        p.start(RunContext(env=env, src=hosts[src], dst=hosts[dst], duration=duration,
                           rng=lambda name: np.random.default_rng(0)))
        pings.append(p)
    env.run(until=duration + 2)
    return pings


def metric(p, name):
    return next(m.value for m in p.metrics() if m.name == name)


def test_crossing_and_converging_pings_each_get_all_their_own_replies():
    # a->b and b->a draw the same first identifier on their own hosts; c->b too
    pings = run_pings([("a", "b"), ("b", "a"), ("c", "b"), ("a", "c")])
    for p in pings:
        assert p.sent == 20
        assert metric(p, "loss") == 0.0
        assert len(p.rtts) == p.sent
        # one switch hop each way at 1 ms propagation, nothing else on the path
        assert 0.002 <= metric(p, "rtt_min") / 1e3 < 0.0025


def test_two_pings_from_one_host_hold_different_identifiers():
    p1, p2 = run_pings([("a", "b"), ("a", "b")])
    assert p1.ident != p2.ident
    assert metric(p1, "loss") == metric(p2, "loss") == 0.0
