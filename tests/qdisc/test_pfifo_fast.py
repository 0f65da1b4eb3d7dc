"""pfifo_fast: strict priority between three bands, the kernel's priomap, per-band limit."""
from hypothesis import given, settings, strategies as st

from ovssim.qdisc import make_qdisc
from ovssim.qdisc.classify import pfifo_fast_band, tos_to_priority
from ovssim.qdisc.pfifo_fast import PfifoFast

from qdisc_testlib import conserved, pkt, run_port


def test_priomap_is_the_kernels():
    # TC_PRIO_INTERACTIVE (6) and CONTROL (7) -> band 0; BESTEFFORT (0) -> 1; FILLER (1), BULK (2) -> 2
    assert [pfifo_fast_band(p) for p in (6, 7, 0, 4, 1, 2, 3, 5)] == [0, 0, 1, 1, 2, 2, 2, 2]
    # skb->priority above 15 is masked (OVS set_queue writes 0x10001)
    assert pfifo_fast_band(0x10006) == 0
    # IP_TOS low-delay (0x10) -> interactive -> band 0; throughput (0x08) -> bulk -> band 2
    assert pfifo_fast_band(tos_to_priority(0x10)) == 0
    assert pfifo_fast_band(tos_to_priority(0x08)) == 2
    assert pfifo_fast_band(tos_to_priority(0x00)) == 1


def test_default_qdisc_is_pfifo_fast():
    assert make_qdisc(None).kind == "pfifo_fast"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 15), st.none()), min_size=1, max_size=200))
def test_band_0_always_leaves_before_waiting_lower_bands(ops):
    q = PfifoFast()
    queued = []          # (band, seq) in arrival order
    seq = 0
    for op in ops:
        if op is None:
            p = q.dequeue(0.0)
            if not queued:
                assert p is None
                continue
            best = min(b for b, _ in queued)
            first = next(item for item in queued if item[0] == best)   # FIFO inside the band
            assert (pfifo_fast_band(p.priority), p.seq) == first
            queued.remove(first)
        else:
            p = pkt(0, 100, priority=op, seq=seq)
            assert q.enqueue(p, 0.0)
            queued.append((pfifo_fast_band(op), seq))
            seq += 1
        assert conserved(q)


def test_each_band_holds_txqueuelen_packets():
    q = make_qdisc({"kind": "pfifo_fast", "limit": 10})
    for i in range(12):
        q.enqueue(pkt(0, 100, priority=0, seq=i), 0.0)       # band 1: 10 fit, 2 dropped
    assert q.stats.drops == 2
    assert q.enqueue(pkt(0, 100, priority=6), 0.0)             # band 0 still accepts
    shared = make_qdisc({"kind": "pfifo_fast", "limit": 10, "shared_limit": True})
    for i in range(10):
        shared.enqueue(pkt(0, 100, priority=0), 0.0)
    assert not shared.enqueue(pkt(0, 100, priority=6), 0.0)   # pre-4.16 kernels: one total limit


def test_interactive_packets_overtake_bulk_behind_a_port():
    # 200 bulk packets queued at t=0, then one interactive packet: it leaves next
    packets = [pkt(1, 1514, 0.0, seq=i) for i in range(200)]
    packets.append(pkt(2, 100, 1e-4, priority=6, seq=999))
    port, rec, _ = run_port("pfifo_fast", packets, 100e6, until=1.0)
    order = [p.seq for _, p in rec.got]
    assert order.index(999) <= 2          # behind at most the packet on the wire
    assert conserved(port.qdisc)


def test_noop_drops_everything():
    q = make_qdisc("noop")
    assert not q.enqueue(pkt(), 0.0)
    assert q.dequeue(0.0) is None and q.stats.drops == 1 and conserved(q)
