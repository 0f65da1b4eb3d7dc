"""AF_PACKET socket buffers of the netdev datapath (ovssim/path/afpacket.py).

Kernel rules checked: sock_alloc_send_pskb allocates only while sk_wmem_alloc < sk_sndbuf (one
skb may overshoot), the skb stays charged until the egress qdisc hands it to the device (or drops
it), packet_rcv drops when sk_rmem_alloc >= sk_rcvbuf; charges are skb truesize."""
import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim.distributions import Sampler
from ovssim.packet import ETH_PREAMBLE_FCS_IFG, FlowKey, Packet, udp_frame_size
from ovssim.path.afpacket import SockBuf, skb_truesize, truesize
from ovssim.path.base import Sink
from ovssim.path.cpu import CpuPool
from ovssim.path.datapath import OvsDatapath
from ovssim.path.port import EgressPort
from ovssim.profile import Profile
from ovssim.runner import run_scenario
from ovssim.scenario import load_scenario
from pathlib import Path

WMEM_DEFAULT = 212992          # net.core.wmem_default (= rmem_default) on Linux
FULL = 1514


# -- truesize and the socket's rule -------------------------------------------------------
def test_truesize_of_common_frames():
    # 16 B reserve + 1514 -> 1536 + 320 (shinfo) = 1856 -> kmalloc-2k; + 256 (struct sk_buff)
    assert skb_truesize(FULL) == 2304
    assert skb_truesize(1518) == 2304                 # VLAN-tagged full frame: same slab
    # a ping / a TCP ACK: a small head (skbuff_small_head, 576 B) + 256
    assert skb_truesize(98) == skb_truesize(66) == 832
    # a frame whose head no longer fits kmalloc-2k takes kmalloc-4k
    assert skb_truesize(1800) == 4096 + 256
    # at a page or more, a small linear head plus whole pages
    assert skb_truesize(9000) == 832 + 3 * 4096
    sizes = range(60, 4200, 7)
    assert all(skb_truesize(a) <= skb_truesize(b) for a, b in zip(sizes, sizes[1:]) if b < 4080)
    assert all(truesize(s) == skb_truesize(s) for s in sizes)


def test_sockbuf_checks_before_charging():
    """sk_wmem_alloc < sk_sndbuf before the allocation: the buffer admits ceil(limit / truesize)."""
    ts = truesize(FULL)
    for limit in (1, ts - 1, ts, ts + 1, 2 * ts, WMEM_DEFAULT):
        s = SockBuf(limit)
        n = 0
        while s.charge(0.0, ts):
            n += 1
        assert n == math.ceil(limit / ts)
        assert s.alloc < limit + ts and s.drops == 1
    assert math.ceil(WMEM_DEFAULT / ts) == 93          # 92 full frames fit, the 93rd overshoots


def test_sockbuf_timed_releases_apply_when_time_reaches_them():
    s = SockBuf(2 * 2304)
    assert s.charge(0.0, 2304) and s.charge(0.0, 2304)
    s.release_at(2.0, 2304)
    s.release_at(1.0, 2304)
    assert not s.charge(0.5, 2304)
    assert s.charge(1.0, 2304)                        # the release due at 1.0 is seen at 1.0
    assert not s.charge(1.5, 2304)
    assert s.used(2.0) == 2304 and s.drops == 2


# -- an egress port charging a socket --------------------------------------------------------
class Record:
    def __init__(self, env):
        self.env, self.seen = env, []

    def put(self, pkt):
        self.seen.append((pkt.seq, pkt.t if pkt.t > self.env.now else self.env.now))


SHAPERS = [{"kind": "tbf", "rate": "1mbit", "burst": "5kb", "latency": "2s"},
           {"type": "linux-htb", "other-config": {"max-rate": "1000000"}, "queues": {"0": {"max-rate": "1000000"}}},
           {"kind": "pfifo", "limit": 1000}, {"kind": "pfifo_fast"}, {"kind": "fq_codel", "limit": 10240}]


def _port_run(spec, lookahead, arrivals, sndbuf, rate=None, until=None):
    """Packets (time, size) into a port whose socket holds ``sndbuf`` bytes; ``rate`` serialises."""
    env = simpy.Environment()
    rec = Record(env)
    port = EgressPort(env, rate, dict(spec), rec, lookahead=lookahead)
    sock = SockBuf(sndbuf, "tx")
    port.attach_sock(sock)
    qdrops = []
    port.on_drop = lambda p, now, why: qdrops.append(p.seq)
    pkts = []
    for i, (t, size) in enumerate(arrivals):
        pkt = Packet(FlowKey("a", "b", 1, 2), size, t, seq=i)
        pkt.stamps = {}
        pkts.append(pkt)
        port.put(pkt)            # handed early, pkt.t in the future: the port's arrival is at pkt.t
    env.run(until=until)
    port.sync(math.inf if until is None else until)     # analytic: packets started by then are out
    return port, sock, pkts, rec.seen, qdrops


def _in_qdisc(pkts, name="port"):
    """(enqueue, dequeue) of every packet that entered the qdisc (from the port's stamps)."""
    return [(p.stamps[f"{name}.enq"], p.stamps.get(f"{name}.deq", math.inf)) for p in pkts
            if f"{name}.enq" in p.stamps]


@pytest.mark.parametrize("spec", SHAPERS[:2], ids=["tbf", "htb"])
@pytest.mark.parametrize("lookahead", [False, True], ids=["events", "lookahead"])
def test_udp_stream_behind_a_slow_shaper_is_bounded_by_sndbuf(spec, lookahead):
    """20 Mbit/s of full frames into a 1 Mbit/s shaper: the qdisc never holds more than
    ceil(sndbuf / truesize) packets; the rest is refused at the socket, nothing is dropped by tc."""
    sndbuf = 40_000
    gap = FULL * 8 / 20e6
    arrivals = [(i * gap, FULL) for i in range(2000)]
    port, sock, pkts, seen, qdrops = _port_run(spec, lookahead, arrivals, sndbuf, until=0.5)
    bound = math.ceil(sndbuf / truesize(FULL))                     # 18
    spans = _in_qdisc(pkts)
    events = sorted([(a, 1) for a, _ in spans] + [(d, -1) for _, d in spans])
    held = peak = 0
    for _, step in events:
        held += step
        peak = max(peak, held)
    assert peak == bound                                           # reached, never exceeded
    assert sock.peak <= sndbuf - 1 + truesize(FULL)
    assert sock.drops > 700 and not qdrops and port.qdisc.stats.drops == 0
    # conservation: offered = refused + out of the qdisc + still queued; the socket holds the queued
    st = port.qdisc.stats
    offered = sum(1 for t, _ in arrivals if t < 0.5)
    assert offered == sock.drops + port.arrived
    assert port.arrived == st.packets + st.drops + st.qlen
    assert sock.used(0.5) == st.qlen * truesize(FULL)


def _release_probe(spec, lookahead):
    """A 1 Mbit/s FIFO device, a socket with room for two full frames (limit = truesize + 1).

    A at 0 goes straight to the device; B (0.1T) and C (0.2T) wait; D (0.3T) is refused;
    E (1.1T) is admitted because B left the qdisc at T.  Releasing at enqueue would admit D;
    releasing at the end of transmission would refuse C (A still charged until T)."""
    tx = (FULL + ETH_PREAMBLE_FCS_IFG) * 8 / 1e6
    arrivals = [(f * tx, FULL) for f in (0.0, 0.1, 0.2, 0.3, 1.1)]
    port, sock, pkts, seen, _ = _port_run(spec, lookahead, arrivals, truesize(FULL) + 1, rate=1e6)
    return sorted(s for s, _ in seen), sock.drops


@pytest.mark.parametrize("spec", [{"kind": "pfifo"}, {"kind": "pfifo_fast"}, {"kind": "sfq"}],
                         ids=["pfifo", "pfifo_fast", "sfq"])
@pytest.mark.parametrize("lookahead", [False, True], ids=["events", "lookahead"])
def test_release_happens_when_the_qdisc_hands_the_packet_to_the_device(spec, lookahead):
    assert _release_probe(spec, lookahead) == ([0, 1, 2, 4], 1)


def test_release_probe_uses_the_analytic_path():
    env = simpy.Environment()
    assert EgressPort(env, 1e6, {"kind": "pfifo"}, Sink(env), lookahead=True).analytic


def test_qdisc_drops_release_their_charge():
    """A 3-packet pfifo behind a slow device: tail drops free their skb at once."""
    tx = (FULL + ETH_PREAMBLE_FCS_IFG) * 8 / 1e6
    arrivals = [(i * tx / 50, FULL) for i in range(20)]
    for lookahead in (False, True):
        port, sock, pkts, seen, qdrops = _port_run({"kind": "pfifo", "limit": 3}, lookahead, arrivals,
                                                   10 ** 9, rate=1e6, until=tx / 2)
        assert len(qdrops) == 20 - 4 and sock.drops == 0
        assert sock.used(tx / 2) == 3 * truesize(FULL)         # only the 3 queued are charged


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.05), st.integers(60, 1514)), min_size=1, max_size=150),
       st.sampled_from(range(len(SHAPERS))), st.integers(1, 30_000), st.sampled_from([None, 5e6]))
def test_port_modes_agree_and_conserve(items, q, sndbuf, rate):
    """Event-driven and lookahead/analytic ports admit, refuse and send the same packets at the
    same times; in = refused + out + dropped + queued; the socket ends holding the queued."""
    items = sorted(items)
    spec = SHAPERS[q]
    runs = [_port_run(spec, la, items, sndbuf, rate=rate) for la in (False, True)]
    (pa, sa, _, seen_a, qa), (pb, sb, _, seen_b, qb) = runs
    assert [s for s, _ in seen_a] == [s for s, _ in seen_b]
    assert all(abs(x - y) < 1e-12 for (_, x), (_, y) in zip(seen_a, seen_b))
    assert (sa.drops, sa.charged, qa) == (sb.drops, sb.charged, qb)
    for port, sock in ((pa, sa), (pb, sb)):
        st_ = port.qdisc.stats
        assert len(items) == sock.drops + port.arrived
        assert port.arrived == st_.packets + st_.drops and st_.qlen == 0     # run to the end: all left
        assert sock.used(math.inf) == 0 and sock.peak <= sndbuf - 1 + 2304


# -- the datapath: send socket shared by the ports, a receive socket per port ------------------
def _dp(env, cores=1, work=10e-6, sndbuf=0, rcvbuf=0, backlog=None):
    const = lambda v: Sampler(v, np.random.default_rng(0))       # noqa: E731
    cpu = CpuPool(env, cores, backlog_limit=backlog)
    return OvsDatapath(env, "br", cpu, stats=const(work / 2), lookup=const(work / 2), actions=const(0.0),
                       upcall=const(1e-9), lookup_per_mask=0.0, upcall_queue=10 ** 6, sndbuf=sndbuf,
                       rcvbuf=rcvbuf)


def test_datapath_send_socket_bounds_the_shaped_queue():
    env = simpy.Environment()
    dp = _dp(env, work=1e-6, sndbuf=WMEM_DEFAULT)
    sink = Sink(env)
    out = EgressPort(env, None, {"kind": "tbf", "rate": "10mbit", "burst": "10kb", "latency": "1s"}, sink,
                     lookahead=True)
    inp = dp.add_port("in", EgressPort(env, None, None, Sink(env), lookahead=True))
    dp.add_port("out", out)
    dp.fdb[(None, "b")] = (dp.ports[1], 0.0)
    gap = FULL * 8 / 50e6                                      # 50 Mbit/s into 10 Mbit/s
    n = 3000
    flow = FlowKey("a", "b", 1, 2)
    for i in range(n):
        pkt = Packet(flow, FULL, i * gap, seq=i, src_mac="a", dst_mac="b")
        inp.put(pkt)
    end = n * gap
    env.run(until=end)
    out.sync()
    c = dp.counters()
    st_ = out.qdisc.stats
    assert st_.qlen == math.ceil(WMEM_DEFAULT / truesize(FULL)) - 1 or st_.qlen == math.ceil(
        WMEM_DEFAULT / truesize(FULL))
    assert st_.drops == 0 and c["tx_dropped"] > 0 and c["tx_dropped"] == dp.afp.tx.drops
    assert n == c["hit"] + c["missed"] and c["cpu_drops"] == 0 and c["lost"] == 0
    assert n == c["tx_dropped"] + out.arrived and out.arrived == st_.packets + st_.qlen
    # the shaper's 10 Mbit/s is what leaves: about 10/50 of the offered packets
    assert st_.packets == pytest.approx(n * 10 / 50, rel=0.03)
    assert "rx_dropped" in c and c["rx_dropped"] == 0


def _rx_reference(arrivals, work, rcvbuf, ts, lim):
    """Independent reference: one core, FIFO, frames wait in the socket until their work starts."""
    free = 0.0
    starts = []
    rx_drop = cpu_drop = 0
    for t in arrivals:
        waiting = [s for s in starts if s > t]
        if len(waiting) * ts >= rcvbuf:
            rx_drop += 1
            continue
        start = max(t, free)
        if lim is not None and start > t and len(waiting) >= lim:
            cpu_drop += 1
            continue
        starts.append(start)
        free = start + work
    return rx_drop, cpu_drop


@pytest.mark.parametrize("rcvbuf,backlog", [(WMEM_DEFAULT, None), (20_000, None), (10 ** 9, 5), (30_000, 5)])
def test_datapath_receive_socket_holds_frames_until_the_thread_reads_them(rcvbuf, backlog):
    """Frames arrive faster than the datapath's CPU takes them: the port's receive socket fills
    and drops (rx_dropped) exactly as a FIFO server whose waiting room is rcvbuf bytes of truesize."""
    env = simpy.Environment()
    work = 20e-6
    dp = _dp(env, work=work, rcvbuf=rcvbuf, backlog=backlog)
    inp = dp.add_port("in", EgressPort(env, None, None, Sink(env), lookahead=True))
    dp.add_port("out", EgressPort(env, None, None, Sink(env), lookahead=True))
    dp.fdb[(None, "b")] = (dp.ports[1], 0.0)
    rng = np.random.default_rng(3)
    arrivals = np.cumsum(rng.exponential(12e-6, 4000))      # ~1.7x the CPU's rate
    flow = FlowKey("a", "b", 1, 2)
    for i, t in enumerate(arrivals):
        inp.put(Packet(flow, FULL, float(t), seq=i, src_mac="a", dst_mac="b"))
    env.run()
    c = dp.counters()
    rx_drop, cpu_drop = _rx_reference(arrivals, work, rcvbuf, truesize(FULL), backlog)
    assert (c["rx_dropped"], c["rx_dropped.in"], c["cpu_drops"]) == (rx_drop, rx_drop, cpu_drop)
    assert rx_drop + cpu_drop > 100
    assert len(arrivals) == rx_drop + c["hit"] + c["missed"]          # a CPU refusal counts as a hit or miss
    assert dp.afp.rx[0].used(math.inf) == 0                  # every charge released (or cancelled)
    assert dp.afp.rx[0].peak <= rcvbuf - 1 + truesize(FULL)


# -- through the scenario: off changes nothing; on bounds the NIC queue -------------------------
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "thesis_kvm_ovs.toml"


def _example(rate, duration):
    sc = load_scenario(EXAMPLE)
    return sc.replace(**{"workload.udp.b": rate, "scenario.duration": duration})


def test_unreached_or_absent_bound_changes_nothing():
    sc = _example("120mbit", "0.3s")
    base = run_scenario(sc, reps=1, seed=3).per_rep
    zero = run_scenario(sc, reps=1, seed=3, profile=Profile.default().with_overrides(
        {"ovs.tx_sndbuf": 0, "ovs.rx_rcvbuf": 0})).per_rep
    assert base.equals(zero)
    huge = run_scenario(sc, reps=1, seed=3, profile=Profile.default().with_overrides(
        {"ovs.tx_sndbuf": "1000000000", "ovs.rx_rcvbuf": "1000000000"})).per_rep
    extra = huge["metric"].str.contains("_dropped")
    assert (huge[extra]["value"] == 0).all() and extra.sum() > 0
    assert huge[~extra].reset_index(drop=True).equals(base)


def test_sndbuf_replaces_the_nic_queue_as_the_bound():
    """120 Mbit/s of UDP into the 100 Mbit/s NIC: with the send buffer on, at most 93 frames wait in
    the NIC's qdisc instead of its 1000 (txqueuelen); the excess is OVS's tx_dropped, and the loss
    follows the fluid model with the smaller standing queue."""
    sc = _example("120mbit", "1s")
    res = run_scenario(sc, reps=1, seed=3, profile=Profile.default().with_overrides(
        {"ovs.tx_sndbuf": WMEM_DEFAULT}))
    rows = res.per_rep.set_index(["workload", "metric"])["value"]
    tx_dropped = sum(v for (w, m), v in rows.items() if m.endswith(".tx_dropped"))
    assert tx_dropped > 0
    assert all(c["drops"] == 0 for k, c in res.counters[0].items() if k.startswith("qdisc:"))
    lam = 120e6 / (1470 * 8)
    frame = udp_frame_size(1470) + ETH_PREAMBLE_FCS_IFG
    mu = 100e6 / (frame * 8)
    dropped = (lam - mu) * 1.0 - math.ceil(WMEM_DEFAULT / truesize(udp_frame_size(1470)))
    assert rows[("udp", "loss")] == pytest.approx(100 * dropped / lam, abs=0.5)
