"""Conservation (in = out + dropped + queued) and determinism for the path elements, under hypothesis."""
import numpy as np
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.distributions import Sampler
from ovssim.packet import FlowKey, Packet
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.datapath import OvsDatapath
from ovssim.path.linux_bridge import LinuxBridge
from ovssim.path.port import EgressPort
from ovssim.path.vif import VifBackend

arrivals = st.lists(st.tuples(st.floats(0, 0.01), st.integers(60, 1514), st.integers(0, 5)),
                    min_size=1, max_size=300)


def _feed(env, target, items):
    for t, size, flow in sorted(items):
        def _put(_, t=t, size=size, flow=flow):
            target.put(Packet(FlowKey("s", "d", flow, 1, "udp"), size, t, dst_mac="d", src_mac="s"))
        ev = env.timeout(t)
        ev.callbacks.append(_put)


@settings(max_examples=40, deadline=None)
@given(arrivals, st.integers(1, 50), st.sampled_from([1e6, 10e6, 1e9]))
def test_port_conservation(items, limit, rate):
    env = simpy.Environment()
    sink = Sink(env)
    port = EgressPort(env, rate, {"kind": "pfifo", "limit": limit}, sink)
    _feed(env, port, items)
    env.run(until=0.005)                       # mid-run: some packets still queued
    st_ = port.qdisc.stats
    assert port.arrived == sink.count + port.dropped + st_.qlen + (1 if port.busy else 0)
    env.run()
    assert port.arrived == len(items) == sink.count + port.dropped
    assert st_.backlog == 0 and st_.qlen == 0


def _run_path(items, seed, bridge_kind):
    env = simpy.Environment()
    rng = np.random.default_rng(seed)
    cpu = CpuPool(env, 2, backlog_limit=50)
    s = lambda spec: Sampler(spec, rng)  # noqa: E731
    if bridge_kind == "ovs":
        br = OvsDatapath(env, "br", cpu, stats=s({"dist": "expon", "scale": "2us"}),
                         lookup=s({"dist": "expon", "scale": "1us"}), actions=s("1us"),
                         upcall=s({"dist": "lognorm", "s": 0.5, "scale": "50us"}), upcall_queue=3)
    else:
        br = LinuxBridge(env, "br", cpu, forward=s({"dist": "gamma", "a": 2, "scale": "2us"}))
    sink = Sink(env, keep=True)
    rx = VifBackend(env, "kvm-tap", cpu, delay=s({"dist": "lognorm", "s": 1, "scale": "5us"}),
                    cpu_per_packet=3e-6, cpu_per_byte=1e-9, out=sink, direction="rx")
    out_port = EgressPort(env, None, {"kind": "pfifo", "limit": 20}, rx.latency, service=rx.service)
    br.add_port("out", out_port)
    inp = br.add_port("in", Sink(env))
    tx = VifBackend(env, "kvm-tap", cpu, delay=s({"dist": "lognorm", "s": 1, "scale": "5us"}),
                    cpu_per_packet=3e-6, cpu_per_byte=1e-9, out=inp, lookahead=True)
    _feed(env, tx, items)
    env.run()
    lost_in_bridge = getattr(br, "lost", 0) + br.cpu_drops
    return sink, tx, br, out_port, lost_in_bridge


@settings(max_examples=30, deadline=None)
@given(arrivals, st.integers(0, 2**32 - 1), st.sampled_from(["ovs", "linux"]))
def test_path_conservation_and_determinism(items, seed, kind):
    sink, tx, br, port, lost = _run_path(items, seed, kind)
    n = len(items)
    assert n == tx.dropped + lost + port.arrived
    assert port.arrived == port.tx_packets + port.dropped
    assert port.tx_packets == sink.count
    again = _run_path(items, seed, kind)[0]
    assert [p.t for p in again.packets] == [p.t for p in sink.packets]
    assert [(p.flow, p.seq) for p in again.packets] == [(p.flow, p.seq) for p in sink.packets]
    # a VIF keeps order: arrival times at the sink never go backwards
    assert all(a <= b for a, b in zip(sink.arrival_times, sink.arrival_times[1:]))
