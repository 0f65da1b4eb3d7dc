"""Batching as the kernel does it: GSO skbs, software segmentation, TSO trains on the wire,
NAPI/GRO on receive, TBF's tbf_segment, TSQ.  Each test would fail if the batching were wrong."""
import numpy as np
import pytest
import simpy
from hypothesis import given, settings, strategies as st

from ovssim.distributions import Sampler
from ovssim.errors import ConfigError
from ovssim.packet import FlowKey, Packet, tcp_frame_size
from ovssim.path.features import resolve
from ovssim.path.gso import SoftwareGso, segment
from ovssim.path.napi import NapiRx, gro_merge
from ovssim.path.port import EgressPort
from ovssim.qdisc.tbf import Tbf
from ovssim.runner import run_scenario
from ovssim.scenario import from_dict

MSS = 1448
FLOW = FlowKey("a", "b", 1, 2, "tcp")


def gso_skb(segs: int, seq: int = 0, tail: int = MSS, t: float = 0.0, flow=FLOW) -> Packet:
    """A TCP GSO skb of ``segs`` segments, the last ``tail`` bytes long."""
    payload = MSS * (segs - 1) + tail
    p = Packet(flow, tcp_frame_size(MSS) * segs - (MSS - tail), t, payload, seq)
    p.gso_size = MSS
    p.gso_segs = segs
    return p


class Sink:
    def __init__(self, env=None):
        self.env = env
        self.got = []

    def put(self, p):
        self.got.append((p.t, p))


class Const:
    """A constant 'sampler'."""
    def __init__(self, v):
        self.v = v

    def next(self):
        return self.v


@given(segs=st.integers(1, 64), tail=st.integers(1, MSS), seq=st.integers(0, 10**9))
def test_segmentation_conserves_bytes_payload_and_sequence(segs, tail, seq):
    skb = gso_skb(segs, seq, tail)
    frames = segment(skb)
    assert len(frames) == segs
    assert sum(f.size for f in frames) == skb.size                      # qdisc_pkt_len is what the frames carry
    assert sum(f.payload for f in frames) == skb.payload
    assert [f.seq for f in frames] == [seq + i * MSS for i in range(segs)]
    assert all(f.size == tcp_frame_size(f.payload) for f in frames)       # each frame has its own headers
    assert all(f.gso_segs == 1 for f in frames)
    assert skb.skb_len == skb.payload + tcp_frame_size(0)                # skb->len: headers once


@settings(max_examples=30, deadline=None)
@given(segs=st.integers(2, 45), tail=st.integers(1, MSS), rate=st.sampled_from([100e6, 1e9, 10e9]),
       busy=st.floats(0, 2e-3))
def test_a_tso_train_leaves_the_wire_when_per_frame_serialisation_would(segs, tail, rate, busy):
    """One GSO skb through a NIC and a store-and-forward switch port = its frames one by one."""
    def run(train: bool):
        env = simpy.Environment()
        sink = Sink()
        sw = EgressPort(env, rate, {"kind": "bfifo", "limit": 10**7}, sink, lookahead=True, prop_delay=1e-6)
        nic = EgressPort(env, rate, {"kind": "pfifo", "limit": 10**4}, sw, lookahead=True, prop_delay=2e-6)
        # something already on the switch port: the train meets a busy device
        filler = Packet(FlowKey("x", "y"), 1500, 0.0)
        filler.t = 0.0
        sw.put(filler)
        skb = gso_skb(segs, 0, tail)
        skb.t = busy
        if train:
            nic.put(skb)
        else:
            for f in segment(skb):
                f.t = busy
                nic.put(f)
        env.run()
        return [t for t, p in sink.got if p.flow == FLOW], sum(p.size for t, p in sink.got if p.flow == FLOW)
    frames, fbytes = run(False)
    trains, tbytes = run(True)
    assert len(trains) == 1 and tbytes == fbytes
    assert trains[0] == pytest.approx(frames[-1], abs=1e-12)          # the last frame's arrival, exactly


def test_software_gso_cuts_at_its_cpu_cost_and_tso_passes_whole():
    from ovssim.path.cpu import CpuPool
    env = simpy.Environment()
    cpu = CpuPool(env, 1)
    sink = Sink()
    gso = SoftwareGso(env, cpu, sink, tso=False, checksum=False, cpu_per_segment=1e-6, cpu_per_byte=1e-9)
    skb = gso_skb(10)
    gso.put(skb)
    assert len(sink.got) == 10 and sum(p.size for _, p in sink.got) == skb.size
    assert sink.got[0][0] == pytest.approx(10 * 1e-6 + skb.size * 1e-9)
    whole = Sink()
    SoftwareGso(env, cpu, whole, tso=True).put(gso_skb(10))
    assert len(whole.got) == 1 and whole.got[0][1].gso_segs == 10


def test_gro_merges_only_in_order_segments_of_one_flow():
    other = FlowKey("c", "d", 3, 4, "tcp")
    a = segment(gso_skb(6))
    b = segment(gso_skb(3, flow=other))
    frames = [a[0], a[1], b[0], a[2], b[1], a[4], a[5], b[2]]     # a[3] lost: a gap
    nbytes = sum(f.size for f in frames)
    out = gro_merge(frames)                                       # (merges into the first frame of each skb)
    byflow = {}
    for p in out:
        byflow.setdefault(p.flow, []).append((p.seq, p.payload, p.gso_segs))
    assert byflow[FLOW] == [(0, 3 * MSS, 3), (4 * MSS, 2 * MSS, 2)]    # no merge across the gap
    assert byflow[other] == [(0, 3 * MSS, 3)]
    assert sum(p.size for p in out) == nbytes
    ack = Packet(FLOW, 66, 0.0, 0, 0, kind="ack")
    assert len(gro_merge([ack, ack])) == 2                             # pure ACKs are not merged


@settings(max_examples=25, deadline=None)
@given(segs=st.integers(2, 45), rate=st.sampled_from([100e6, 1e9, 10e9, 40e9]), delay=st.floats(1e-6, 100e-6))
def test_napi_polls_conserve_frames_and_flush_each_poll(segs, rate, delay):
    env = simpy.Environment()
    sink = Sink()
    rx = NapiRx(env, Const(delay), sink, weight=64)
    skb = gso_skb(segs)
    frame_time = (tcp_frame_size(MSS) + 24) * 8 / rate
    skb.first_at = 1.0
    skb.t = 1.0 + (segs - 1) * frame_time
    rx.put(skb)
    env.run()                                   # (a train's polls run at their times)
    got = [p for _, p in sink.got]
    assert sum(p.gso_segs for p in got) == segs and sum(p.size for p in got) == skb.size
    assert [p.seq for p in got] == sorted(p.seq for p in got)
    # each poll takes the frames that arrived by its start: interrupt rx-usecs after the first
    per_poll = int(delay / frame_time) + 1
    assert got[0].gso_segs == min(segs, per_poll, 64)
    assert rx.polls == len(got)


def test_tbf_segments_a_gso_skb_larger_than_its_burst():
    q = Tbf(rate=10e6, burst=3000, limit=100_000)
    skb = gso_skb(10)
    assert q.enqueue(skb, 0.0)
    assert q.stats.qlen == 10 and q.stats.backlog == skb.size
    sent = []
    t = 0.0
    while q.stats.qlen:
        p = q.dequeue(t)
        if p is None:
            t = q.next_wakeup(t)
            continue
        sent.append(p)
    assert [p.seq for p in sent] == [i * MSS for i in range(10)]
    # ten frames at 10 Mbit/s after a 3000-byte burst
    assert t == pytest.approx((skb.size - 3000) * 8 / 10e6, rel=1e-6)
    assert q.stats.arrivals == q.stats.packets + q.stats.drops + q.stats.qlen
    # a segment that does not fit the bucket either: dropped whole (skb_gso_validate_mac_len)
    small = Tbf(rate=10e6, burst=1000, limit=100_000)
    assert not small.enqueue(gso_skb(4), 0.0) and small.stats.drops == 1


def test_features_follow_netdev_fix_features():
    assert resolve("veth") == {"tso": True, "gso": True, "gro": False, "sg": True, "tx-checksumming": True}
    off = resolve("veth", {"tx-checksumming": False})
    assert off["tso"] is False and off["gso"] is True and off["sg"] is True
    with pytest.raises(ValueError):
        resolve("veth", {"tso4": False})


def _sc(kind="container-veth", features=None, workload=None, **params):
    vm = {"host": "h", "vif": kind, "bridge": "br"}
    if features is not None:
        vm["features"] = features
    return {
        "scenario": {"name": "gso", "duration": "0.3s", "reps": 1, "seed": 5, "profile": "default"},
        "params": params,
        "host": [{"name": "h", "cores": 2}],
        "bridge": [{"name": "br", "host": "h", "kind": "linux"}],
        "vm": [{"name": "a", **vm}, {"name": "b", **vm}],
        "workload": [workload or {"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b",
                                  "O": "0.05s", "t": "0.2s"}],
    }


def test_scenario_features_are_validated():
    with pytest.raises(ConfigError, match="unknown offload feature"):
        from_dict(_sc(features={"tso4": False}), file="x")
    with pytest.raises(ConfigError, match="true or false"):
        from_dict(_sc(features={"tso": "off"}), file="x")


def test_offloads_off_costs_per_segment_work_and_same_seed_same_result():
    on = run_scenario(from_dict(_sc(), file="x"), reps=1).summary.set_index(["workload", "metric"])["mean"]
    off = run_scenario(from_dict(_sc(features={"tx-checksumming": False}), file="x"), reps=1)
    off2 = run_scenario(from_dict(_sc(features={"tx-checksumming": False}), file="x"), reps=1)
    assert off.summary.equals(off2.summary)
    off = off.summary.set_index(["workload", "metric"])["mean"]
    # per-packet costs paid once per 64 KB skb instead of once per frame
    assert on[("tcp", "throughput")] > 2 * off[("tcp", "throughput")]


def test_tsq_bounds_what_a_socket_has_below_it():
    from ovssim.tcp.connection import connect
    from ovssim.path.endpoint import Endpoint
    env = simpy.Environment()
    a = Endpoint(env, "a", features=resolve("kvm-tap"), tsq=True)
    b = Endpoint(env, "b", features=resolve("kvm-tap"))
    held = []

    class SlowFree:
        """Frees each skb 1 ms after it arrives (a slow backend), then the wire to b."""
        def put(self, p):
            held.append(p.owner.wmem_queued if p.owner else 0)
            if p.owner is not None:
                p.owner.tsq_free(p, env.now + 1e-3)
            p.t = env.now + 1e-3
            fwd.put(p)
    fwd = EgressPort(env, 10e9, {"kind": "pfifo", "limit": 10**5}, b, lookahead=True, prop_delay=20e-6)
    rev = EgressPort(env, 10e9, {"kind": "pfifo", "limit": 10**5}, a, lookahead=True, prop_delay=20e-6)
    a.out, b.out = SlowFree(), rev
    c, s = connect(env, a, b, 5001)
    c.bulk(0.5)
    env.run(until=0.5)
    snd = c.sender
    assert snd.tsq_throttled > 0
    # never more than the limit plus the skb that crossed it (tcp_small_queue_check runs before each skb)
    assert max(held) <= snd.limit_output_bytes + 2 * 65536 + 4096
    assert snd.wmem_queued >= 0


def test_a_qdisc_cost_per_skb_is_charged_on_the_host_cpu():
    """qdisc.<kind>.cpu_per_packet: 0 by default; set, the scheduler's work slows a CPU-bound flow."""
    wl = {"name": "tcp", "tool": "iperf", "proto": "tcp", "from": "a", "to": "b", "O": "0.05s", "t": "0.2s"}
    base = _sc(features={"tx-checksumming": False}, workload=wl)
    costly = _sc(features={"tx-checksumming": False}, workload=wl, **{"qdisc.htb.cpu_per_packet": "3us"})
    for d in (base, costly):
        d["vm"][1]["qdisc"] = {"kind": "htb", "default": "1", "classes": [
            {"classid": "1:1", "parent": "1:", "rate": "10gbit", "ceil": "10gbit"}]}
    free = run_scenario(from_dict(base, file="x"), reps=1).summary.set_index(["workload", "metric"])["mean"]
    paid = run_scenario(from_dict(costly, file="x"), reps=1).summary.set_index(["workload", "metric"])["mean"]
    assert paid[("tcp", "throughput")] < 0.8 * free[("tcp", "throughput")]


def test_a_patch_port_costs_work_in_the_datapath_thread():
    from ovssim.path.cpu import CpuPool
    from ovssim.path.links import PatchPort

    class Port:
        rx = 0

        class bridge:
            @staticmethod
            def admit(port, pkt):
                return (None, None)

            @staticmethod
            def deliver(port, pkt, vlan, t):
                got.append(pkt.t)
    got = []
    env = simpy.Environment()
    cpu = CpuPool(env, 2)
    pp = PatchPort(env, Port(), cpu=cpu, key=7, cpu_per_packet=2e-6)
    for _ in range(3):
        pp.put(gso_skb(1))
    assert got == pytest.approx([2e-6, 4e-6, 6e-6])          # one thread: serialised on its core
    assert cpu.busy[7 % 2] == pytest.approx(6e-6)


def test_segmentation_recharges_each_frame_for_its_own_truesize():
    """tcp_gso_segment: every segment keeps the socket's destructor and is charged its own truesize (a head
    like the GSO skb's plus its payload): sk_wmem_alloc grows by sum - gso truesize, and comes back to zero
    only when the last frame is freed -- 2728 B per 1448-byte segment inside UML 6.1 (skmem t = unacked x 2728)."""
    class Owner:
        wmem_queued = 0

        def tsq_charge(self, delta):
            self.wmem_queued += delta

        def tsq_free(self, pkt, t):
            self.wmem_queued -= pkt.wmem
    head = 1280                                  # UML 6.1's skb head (kmalloc-1024 + struct sk_buff)
    owner = Owner()
    skb = gso_skb(45, tail=700)
    skb.owner, skb.wmem = owner, head + skb.payload
    owner.wmem_queued = skb.wmem
    frames = segment(skb)
    assert [f.wmem for f in frames] == [head + MSS] * 44 + [head + 700]
    assert owner.wmem_queued == 44 * 2728 + head + 700
    assert all(f.owner is owner for f in frames)
    for f in frames[:-1]:
        f.owner.tsq_free(f, 0.0)
    assert owner.wmem_queued == head + 700       # still charged until its last frame is freed
    frames[-1].owner.tsq_free(frames[-1], 0.0)
    assert owner.wmem_queued == 0


def test_tsq_charges_come_back_whole_through_software_segmentation():
    """An skb charged to its socket and cut in software is released frame by frame, each charge once."""
    from ovssim.tcp.connection import connect
    from ovssim.path.endpoint import Endpoint
    env = simpy.Environment()
    a = Endpoint(env, "a", features=resolve("kvm-tap", {"tx-checksumming": False}), tsq=True)
    b = Endpoint(env, "b", features=resolve("kvm-tap"))

    class Free:
        def put(self, p):
            if p.owner is not None:
                p.owner.tsq_free(p, env.now + 50e-6)
            fwd.put(p)
    fwd = EgressPort(env, 1e9, {"kind": "pfifo", "limit": 10**5}, b, lookahead=True, prop_delay=20e-6)
    rev = EgressPort(env, 1e9, {"kind": "pfifo", "limit": 10**5}, a, lookahead=True, prop_delay=20e-6)
    a.out, b.out = SoftwareGso(env, None, Free()), rev
    c, s = connect(env, a, b, 5001)
    c.write(3_000_000)
    env.run(until=1.0)
    assert s.receiver.bytes_received == 3_000_000
    assert c.sender.skbs_out < c.sender.data_segs_out          # GSO skbs were built and cut
    assert c.sender.wmem_queued == 0                            # every charge came back, once


def test_one_ack_per_grod_skb():
    """__tcp_ack_snd_check: more than one full segment since the last ACK -> ACK now; a GRO'd skb of
    ten segments is one arrival, so it is acknowledged by one ACK (Linux ACKs per skb, not per segment)."""
    from ovssim.tcp.connection import connect
    from ovssim.path.endpoint import Endpoint
    env = simpy.Environment()
    a, b = Endpoint(env, "a"), Endpoint(env, "b")
    acks = []

    class Collect:
        def put(self, p):
            acks.append(p)
    a.out, b.out = Collect(), Collect()
    c, s = connect(env, a, b, 5001)
    s.receiver.quick = 0                       # past the quick-ACK start
    skb = gso_skb(10, flow=c.flow)
    skb.ack = 0
    s.put(skb)
    assert s.receiver.rcv_nxt == 10 * MSS
    assert [p.ack for p in acks if p.kind == "ack"] == [10 * MSS]     # (the connection's SYN went out too)


def test_rx_frames_raises_the_interrupt_before_rx_usecs():
    """ethtool -C rx-frames 4 with a long rx-usecs: each poll starts when the 4th frame is in."""
    env = simpy.Environment()
    sink = Sink()
    rx = NapiRx(env, Const(1e-3), sink, rx_frames=4)
    skb = gso_skb(12)
    frame_time = (tcp_frame_size(MSS) + 24) * 8 / 10e9
    skb.first_at = 1.0
    skb.t = 1.0 + 11 * frame_time
    rx.put(skb)
    env.run()
    # the first poll waits for 4 frames; the rest arrive while it is due and join the next polls
    assert [p.gso_segs for _, p in sink.got][0] == 4
    assert sum(p.gso_segs for _, p in sink.got) == 12


def test_scenario_rx_frames_is_validated():
    d = _sc()
    d["nic"] = [{"name": "eth0", "host": "h", "rx_frames": -1}]
    d["bridge"][0]["uplink"] = "eth0"
    with pytest.raises(ConfigError, match="rx_frames"):
        from_dict(d, file="x")


def test_softirq_rounds_squeeze_at_netdev_budget():
    """net_rx_action's budget: polls that run back to back (frames arrive at 40 Gbit/s, each costs
    1 us of a core) form one round until 300 frames are taken, then a time_squeeze; trains of 45 frames
    10 ms apart each start a round of their own and never squeeze."""
    from ovssim.path.cpu import CpuPool
    frame_time = (tcp_frame_size(MSS) + 24) * 8 / 40e9

    def run(gap, trains):
        env = simpy.Environment()
        rx = NapiRx(env, Const(5e-6), Sink(), cpu=CpuPool(env, 1), cpu_per_packet=1e-6)
        for i in range(trains):
            skb = gso_skb(45, seq=i * 45 * MSS)
            skb.first_at = 1.0 + i * gap
            skb.t = skb.first_at + 44 * frame_time
            rx.put(skb)
        env.run()
        return rx
    busy = run(45 * frame_time, 40)          # 1800 frames, the core always behind
    assert busy.frames == 1800
    assert 1800 // (300 + 63) <= busy.time_squeeze <= 1800 // 300
    quiet = run(10e-3, 40)
    assert quiet.frames == 1800 and quiet.time_squeeze == 0


def test_a_charge_held_to_the_receiver_comes_back_through_drops_and_arrivals():
    """veth_orphans = false: nothing frees a sent skb on the way (no VIF backend), so its TSQ charge ends
    where Linux ends it -- the receiver's ip_rcv_core (Endpoint.put) or a qdisc's drop (kfree_skb).
    A shaper with a 5-packet queue drops; the transfer completes and every charge comes back."""
    from ovssim.tcp.connection import connect
    from ovssim.path.endpoint import Endpoint
    env = simpy.Environment()
    a = Endpoint(env, "a", features=resolve("container-veth", {"tx-checksumming": False}), tsq=True)
    b = Endpoint(env, "b", features=resolve("container-veth"))
    fwd = EgressPort(env, 10e6, {"kind": "pfifo", "limit": 5}, b, lookahead=True, prop_delay=20e-6)
    rev = EgressPort(env, 1e9, {"kind": "pfifo", "limit": 10**5}, a, lookahead=True, prop_delay=20e-6)
    a.out, b.out = SoftwareGso(env, None, fwd), rev
    c, s = connect(env, a, b, 5001)
    c.write(2_000_000)
    env.run(until=5.0)
    assert fwd.qdisc.stats.drops > 0
    assert s.receiver.bytes_received == 2_000_000
    assert c.sender.wmem_queued == 0
