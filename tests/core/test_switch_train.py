"""A TSO train through a store-and-forward switch reaches the far NIC frame by frame.

A real switch forwards each frame once that frame is received (+ its forwarding latency), so the far
NIC receives the frames of a TSO skb spread out, one frame time apart, each one frame's store-and-forward
+ latency after it left the first wire -- not all at once when the last frame is in.  The model hands
the train on as one skb (``first_at`` .. ``t``, no event per frame): the switch and its egress port
must act on it from its first frame, and NapiRx must never serve or deliver a poll before ``env.now``.

The receiver records when a packet can take effect downstream: ``max(pkt.t, env.now)`` (what a
bridge's ``receive`` uses), so a poll stamped in the past but handed on late counts as late.
"""
import pytest
import simpy

from ovssim.packet import FlowKey, Packet, tcp_frame_size
from ovssim.path.cpu import CpuPool
from ovssim.path.gso import segment
from ovssim.path.napi import NapiRx
from ovssim.path.nic import Nic
from ovssim.path.switch import PhysicalSwitch

MSS = 1448
FLOW = FlowKey("a", "b", 1, 2, "tcp")
FRAMING = 24                  # preamble + FCS + inter-frame gap
T0 = 1e-3                     # the skb reaches A's NIC
PA, PB = 1e-6, 2e-6           # cable propagation A-switch, switch-B
LAT = 3e-6                    # the switch's forwarding latency
RX = 1e-6                     # B's interrupt moderation (shorter than a frame gap: one poll per frame)


class Const:
    def __init__(self, v):
        self.v = v

    def next(self):
        return self.v


class Rec:
    """B's stack: when each skb takes effect (never before the moment it is handed on)."""

    def __init__(self, env):
        self.env = env
        self.got = []        # (effective time, handed-on time, skb)

    def put(self, p):
        now = self.env.now
        self.got.append((max(p.t, now), now, p))


def gso_skb(segs: int, t: float = T0) -> Packet:
    p = Packet(FLOW, tcp_frame_size(MSS) * segs, t, MSS * segs, 0)
    p.gso_size = MSS
    p.gso_segs = segs
    return p


def path(rate_a, rate_b, lookahead, gro=False):
    """A's NIC -> switch (ports at each NIC's rate, as ovssim.topology builds them) -> B's NIC."""
    env = simpy.Environment()
    a = Nic(env, "ethA", rate_a, qdisc={"kind": "pfifo_fast"}, rx_delay=Const(RX), prop_delay=PA,
            lookahead=lookahead)
    b = Nic(env, "ethB", rate_b, rx_delay=Const(RX), prop_delay=PB, lookahead=lookahead,
            features={"gro": gro})
    sw = PhysicalSwitch(env, "sw", latency=LAT, lookahead=lookahead)
    a.tx.out = sw.add_link("to-ethA", rate_a, a.rx, prop_delay=PA)
    sw.add_link("to-ethB", rate_b, b.rx, prop_delay=PB)
    rec = Rec(env)
    a.rx.out = rec
    b.rx.out = rec
    return env, a, b, sw, rec


def run(rate_a, rate_b, lookahead, pkts, gro=False):
    env, a, b, sw, rec = path(rate_a, rate_b, lookahead, gro)
    for p in pkts:
        a.put(p)
    env.run()
    return rec, sw, b


@pytest.mark.parametrize("lookahead", [True, False])
def test_train_frames_reach_the_far_nic_one_frame_time_apart(lookahead):
    """100 Mbit/s on both sides: frame i (0-based) is fully on A's wire at T0 + (i+1) ft, at the switch
    PA later, forwarded LAT later, fully out of the switch one ft later, at B PB later, polled RX later."""
    rate, segs = 100e6, 45
    ft = (tcp_frame_size(MSS) + FRAMING) * 8 / rate              # 121.92 us
    rec, sw, b = run(rate, rate, lookahead, [gso_skb(segs)])
    got = rec.got
    assert len(got) == segs                                       # GRO off: one skb per frame
    expected = [T0 + (i + 2) * ft + PA + LAT + PB + RX for i in range(segs)]
    assert [t for t, _, _ in got] == pytest.approx(expected, abs=1e-12)
    # the first frame: one frame time + the switch's latency after it left A's wire, not a train late
    first_left_a = T0 + ft + PA
    assert got[0][0] - first_left_a == pytest.approx(LAT + ft + PB + RX, abs=1e-12)
    # bytes and segments conserved, in order
    assert sum(p.size for _, _, p in got) == tcp_frame_size(MSS) * segs
    assert sum(p.payload for _, _, p in got) == MSS * segs
    assert [p.seq for _, _, p in got] == [i * MSS for i in range(segs)]
    # the switch's bfifo: one skb of the train's bytes through, nothing left behind
    st = sw.ports[1].egress.qdisc.stats
    assert (st.packets, st.bytes, st.qlen, st.backlog, st.drops) == (1, tcp_frame_size(MSS) * segs, 0, 0, 0)
    assert b.rx.frames == segs and b.rx.polls == segs


@pytest.mark.parametrize("lookahead", [True, False])
@pytest.mark.parametrize("rate_a,rate_b", [(100e6, 100e6), (1e9, 100e6), (100e6, 1e9), (1e9, 1e9)])
def test_a_train_reaches_b_when_its_frames_one_by_one_would(rate_a, rate_b, lookahead):
    """The same skb as a train and as its frames sent one by one: every frame reaches B's stack at the
    same time (store-and-forward per frame at each hop: the slower wire sets the spacing)."""
    segs = 30
    frames = segment(gso_skb(segs))
    for f in frames:
        f.t = T0
    one_by_one, _, _ = run(rate_a, rate_b, lookahead, frames)
    train, _, b = run(rate_a, rate_b, lookahead, [gso_skb(segs)])
    assert len(train.got) == len(one_by_one.got) == segs
    assert [t for t, _, _ in train.got] == pytest.approx([t for t, _, _ in one_by_one.got], abs=1e-12)
    assert all(p.t >= now for _, now, p in train.got)             # nothing handed on stamped in the past


def test_gro_conserves_a_train_through_the_switch():
    """GRO on and a moderation longer than a frame gap: polls merge frames; bytes and segments conserved."""
    segs = 44
    env, a, b, sw, rec = path(100e6, 100e6, True, gro=True)
    b.rx.delay = Const(300e-6)
    skb = gso_skb(segs)
    a.put(skb)
    env.run()
    got = [p for _, _, p in rec.got]
    assert 1 < len(got) < segs
    assert sum(p.gso_segs for p in got) == segs
    assert sum(p.size for p in got) == tcp_frame_size(MSS) * segs
    assert [p.seq for p in got] == sorted(p.seq for p in got)
    assert all(p.t >= now for _, now, p in rec.got)


@pytest.mark.parametrize("lookahead", [True, False])
def test_a_single_frame_crosses_the_switch_as_before(lookahead):
    rate = 100e6
    ft = (tcp_frame_size(MSS) + FRAMING) * 8 / rate
    p = Packet(FLOW, tcp_frame_size(MSS), T0, MSS, 0)
    rec, sw, _ = run(rate, rate, lookahead, [p])
    assert len(rec.got) == 1
    assert rec.got[0][0] == pytest.approx(T0 + 2 * ft + PA + LAT + PB + RX, abs=1e-12)


@pytest.mark.parametrize("lookahead", [True, False])
def test_a_frame_behind_a_train_is_polled_after_it(lookahead):
    """A single frame handed to B's NAPI while the train ahead of it still has polls to come waits
    for them: B's stack gets the frames in wire order, at non-decreasing times."""
    rate, segs = 100e6, 10
    ft = (tcp_frame_size(MSS) + FRAMING) * 8 / rate
    single = Packet(FLOW, tcp_frame_size(MSS), T0, MSS, segs * MSS)
    rec, _, b = run(rate, rate, lookahead, [gso_skb(segs), single])
    times = [t for t, _, _ in rec.got]
    assert [p.seq for _, _, p in rec.got] == [i * MSS for i in range(segs + 1)]
    assert times == sorted(times)
    assert times[-1] == pytest.approx(T0 + (segs + 2) * ft + PA + LAT + PB + RX, abs=1e-12)
    assert not b.rx._pending


def test_napi_never_polls_before_now():
    """A train handed to NapiRx after its first frames arrived (no element of the model does that any
    more): the frames already in are taken by a poll at env.now, on the CPU from env.now -- not served
    in the past and handed on late."""
    env = simpy.Environment()
    rec = Rec(env)
    cpu = CpuPool(env, 1)
    rx = NapiRx(env, Const(5e-6), rec, cpu=cpu, gro=False, cpu_per_packet=1e-6)
    gap = 12e-6
    segs = 20

    def late():
        yield env.timeout(1.0)
        skb = gso_skb(segs)
        skb.first_at = 1.0 - 10 * gap + 1e-9     # frames 0..9 arrived before now, 10..19 after
        skb.t = skb.first_at + (segs - 1) * gap
        rx.put(skb)
    env.process(late())
    env.run()
    got = rec.got
    assert len(got) == segs and rx.frames == segs
    assert all(p.t >= now for _, now, p in got)
    # its interrupt was due before now: the first poll runs at now and takes the ten frames already
    # in, 1 us of the core each from now
    assert got[0][2].t == pytest.approx(1.0 + 10 * 1e-6, abs=1e-12)
    assert all(t >= 1.0 for t, _, _ in got)
