"""iperf3's control connection: its exchange comes before the streams connect, so a cold OVS
flow cache takes its upcalls on the control connection's first packets and the streams' SYNs hit."""
from __future__ import annotations

import numpy as np
import pytest
import simpy

from ovssim.workloads.iperf_tcp import COOKIE_SIZE, JSON_LENGTH, PARAMS_SIZE, IperfTcp
from ovssim.workloads.registry import make_workload

STEPS = ["control_syn", "cookie", "PARAM_EXCHANGE", "params", "CREATE_STREAMS", "stream0_syn", "stream1_syn",
         "stream2_syn", "TEST_START", "TEST_RUNNING"]


def test_only_iperf3_has_a_control_connection():
    assert make_workload({"tool": "iperf3", "proto": "tcp"}).control is True
    assert make_workload({"tool": "iperf", "proto": "tcp"}).control is False
    assert make_workload({"tool": "iperf2", "proto": "tcp"}).control is False
    assert make_workload({"tool": "iperf3", "proto": "tcp", "control": False}).control is False
    assert IperfTcp().control is False


def test_the_exchange_comes_before_any_stream_syn(make_path):
    """RTT 10 ms: connect, cookie / PARAM_EXCHANGE, parameters / CREATE_STREAMS, three sequential
    stream connects, the last cookie / TEST_START + TEST_RUNNING: the -t clock starts 70 ms in."""
    p = make_path(rate=50e6, delay=0.005)
    w = make_workload({"tool": "iperf3", "proto": "tcp", "P": 3, "t": "0.3s"})
    w.start(p.ctx(0.3))
    p.env.run(until=0.029)               # the exchange is done, no stream is connected yet
    assert w.streams == [] and [s for s, _ in w.control_log] == STEPS[:5]
    p.env.run(until=1.0)
    steps = [s for s, _ in w.control_log]
    times = [t for _, t in w.control_log]
    assert steps == STEPS and times == sorted(times)
    syn = dict(w.control_log)
    assert syn["stream1_syn"] - syn["stream0_syn"] == pytest.approx(0.010, abs=2e-4)   # one connect each
    assert w.t0 == syn["TEST_RUNNING"] == pytest.approx(0.070, abs=1e-3)
    c, s = w.control_conn
    assert c.sender.snd_una == COOKIE_SIZE + JSON_LENGTH + PARAMS_SIZE      # all of it read and acked
    assert s.sender.snd_una == 4                                            # four state bytes back
    # the streams' data go out from TEST_RUNNING on; their cookies before it are not counted
    for meter in w.meters:
        assert (meter.start, meter.end) == (w.t0, pytest.approx(w.t0 + 0.3))
    assert all(cs.sender.rtt_from == w.t0 for cs, _ in w.streams)


def _ovs_topology(env, seed=0):
    from ovssim.profile import Profile
    from ovssim.runner import rng_factory
    from ovssim.scenario import from_dict
    from ovssim.topology import build
    d = {"scenario": {"name": "cold", "duration": "0.2s", "reps": 1},
         "host": [{"name": "h", "cores": 2}],
         "bridge": [{"name": "br", "host": "h", "kind": "ovs", "datapath_type": "system"}],
         "vm": [{"name": n, "host": "h", "vif": "container-veth", "bridge": "br"} for n in ("a", "b")],
         "workload": [{"name": "tcp", "tool": "iperf3", "proto": "tcp", "from": "a", "to": "b"}]}
    sc = from_dict(d)
    prof = Profile.load(sc.profile)
    return build(env, sc, prof, rng_factory(seed, 0))


@pytest.mark.parametrize("control", [True, False])
def test_a_cold_kernel_datapath_misses_only_on_the_control_connection(control):
    """With the control connection, its SYN and SYN-ACK take the two directions' upcalls (NORMAL's
    megaflows wildcard the ports) and the four streams' handshakes hit; without it, the streams' SYNs,
    sent together into the cold cache, each miss."""
    from ovssim.topology import ARP_SETTLE
    from ovssim.workloads.base import RunContext
    env = simpy.Environment()
    topo = _ovs_topology(env)
    dp = topo.bridges["br"]
    missed = []                                          # (kind, client port) of each packet that missed
    garp = [0]                                           # the gratuitous ARPs' (broadcast) misses
    process = dp.process

    def watched(port, pkt, vlan, t):
        n = dp.missed
        process(port, pkt, vlan, t)
        if dp.missed > n and pkt.kind == "garp":
            garp[0] += 1
        elif dp.missed > n:
            missed.append((pkt.kind, pkt.flow.sport if pkt.kind == "syn" else pkt.flow.dport))
    dp.process = watched
    w = IperfTcp(parallel=4, time=0.1, control=control)
    w.start(RunContext(env, topo.endpoints["a"], topo.endpoints["b"], 0.1,
                       rng=lambda n: np.random.default_rng(0), start_at=ARP_SETTLE))
    env.run(until=ARP_SETTLE + 0.2)
    streams = {c.flow.sport for c, _ in w.streams}
    assert w.t0 < ARP_SETTLE + 0.1 and sum(m.bytes for m in w.meters) > 0
    if control:
        ctl = w.control_conn[0].flow.sport
        assert missed == [("syn", ctl), ("synack", ctl)]      # the control connection's first packets only
        assert dp.missed == garp[0] + 2 and dp.lost == 0        # ovs-dpctl show's counters
        assert dp.hit > 8                                       # the streams' SYNs, SYN-ACKs and data hit
    else:
        assert {p for k, p in missed if k == "syn"} == streams     # every stream's SYN took an upcall
        assert dp.missed >= garp[0] + 4


def test_throughput_is_unchanged_on_a_simple_path():
    """Through the runner (a scenario of 0.3 s, the test's 0.3 s start after the exchange and are
    simulated whole): the same throughput with and without the control connection."""
    from ovssim.profile import Profile
    from ovssim.runner import run_replication
    from ovssim.scenario import from_dict
    out = {}
    for tool in ("iperf", "iperf3"):
        d = {"scenario": {"name": "p", "duration": "0.3s", "reps": 1},
             "host": [{"name": "h", "cores": 2}],
             "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
             "vm": [{"name": n, "host": "h", "vif": "container-veth", "bridge": "br",
                     **({"qdisc": {"kind": "tbf", "rate": "50mbit", "burst": 15140, "latency": "20ms"}}
                        if n == "b" else {})} for n in ("a", "b")],
             "workload": [{"name": "tcp", "tool": tool, "proto": "tcp", "from": "a", "to": "b", "P": 2}]}
        sc = from_dict(d)
        rows, _, _ = run_replication(sc, Profile.load(sc.profile), 0)
        out[tool] = next(r["value"] for r in rows if r["workload"] == "tcp" and r["metric"] == "throughput")
    assert out["iperf3"] == pytest.approx(out["iperf"], rel=0.03)
    assert 40 < out["iperf3"] < 50.5
