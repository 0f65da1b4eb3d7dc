"""The skb retransmit queue (ovssim/tcp/rtx_queue.py) against a plain per-segment scoreboard.

The reference below keeps one record per segment and does each operation segment by segment, as
RFC 6675 states it; the queue keeps GSO skbs whole and cuts them only where the state changes.
On random sends, ACKs, SACK blocks, loss marks, timeouts and retransmissions both must give every
segment the same flags and send time, the same counters and the same answers -- so bytes are
conserved (nothing lost or duplicated by a cut or a trim) and only segments marked lost are
retransmitted.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ovssim.tcp import connect
from ovssim.tcp.rtx_queue import EVER_RETRANS, LOST, RETRANS, SACKED, RtxQueue

MSS = 100


class PerSegment:
    """A scoreboard of one ``[seq, end, tx, flags]`` record per segment (the reference)."""

    def __init__(self):
        self.segs: list = []
        self.sacked_out = self.lost_out = self.retrans_out = 0
        self.high_sacked = 0
        self.lost_mark_seq = 0
        self.cache: dict = {}
        self.reorder: list = []

    def queue(self, seq, end, now, pcount):
        for j in range(pcount):
            s = seq + j * MSS
            self.segs.append([s, min(s + MSS, end), now, 0])

    def clean(self, ack, ts_ecr):
        acked = sacked = spurious = 0
        first = last = -1.0
        karn = False
        while self.segs and self.segs[0][1] <= ack:
            s, e, tx, f = self.segs.pop(0)
            if f & SACKED:
                sacked += 1
            if f & LOST:
                self.lost_out -= 1
            if f & RETRANS:
                self.retrans_out -= 1
            if f & EVER_RETRANS:
                karn = True
                spurious += 0.0 < ts_ecr < tx
            elif not f & SACKED:            # tcp_clean_rtx_queue: neither retransmitted nor SACKed
                last = tx
                first = tx if first < 0 else first
            acked += 1
        self.sacked_out -= sacked
        return acked, sacked, first, last, karn, spurious

    def sacktag(self, blocks, una):
        prior_high = self.high_sacked - 1
        newly = 0
        new_cache = {}
        for s, e in blocks:
            if e <= una:
                continue
            new_cache[s] = e
            start = self.cache.get(s)
            lo = s if start is None or start < s else start
            for r in self.segs:
                if r[0] >= lo and r[1] <= e and not r[3] & SACKED:
                    if not r[3] & EVER_RETRANS and r[0] < prior_high:
                        self.reorder.append(((prior_high - r[0]) // MSS + 1, 1))
                    self.lost_out -= bool(r[3] & LOST)
                    self.retrans_out -= bool(r[3] & RETRANS)
                    r[3] = (r[3] | SACKED) & ~(LOST | RETRANS)
                    self.sacked_out += 1
                    newly += 1
                    self.high_sacked = max(self.high_sacked, r[0] + 1)
        self.cache = new_cache
        return newly

    def mark_lost(self, thresh):
        above = [r for r in self.segs if r[3] & SACKED and r[0] < self.high_sacked]
        if len(above) < thresh:
            return
        mark = above[-thresh][0]
        for r in self.segs:
            if self.lost_mark_seq <= r[0] < mark and not r[3] & (SACKED | LOST | RETRANS):
                r[3] |= LOST
                self.lost_out += 1
        self.lost_mark_seq = max(self.lost_mark_seq, mark)

    def mark_head_lost(self):
        if self.segs and not self.segs[0][3] & (LOST | SACKED):
            r = self.segs[0]
            if r[3] & RETRANS:
                self.retrans_out -= 1
            r[3] = (r[3] | LOST) & ~RETRANS
            self.lost_out += 1

    def enter_loss(self):
        self.lost_out = 0
        for r in self.segs:
            if not r[3] & SACKED:
                r[3] = (r[3] | LOST) & ~RETRANS
                self.lost_out += 1
        self.retrans_out = 0

    def next_retransmit(self, now):
        for i, r in enumerate(self.segs):
            if r[3] & LOST and not r[3] & RETRANS:
                r[3] |= RETRANS | EVER_RETRANS
                r[2] = now
                self.retrans_out += 1
                return r, i == 0
        return None


def reordered_log(log):
    """A per-segment view of the queue's reorder callback: ``(degree, count)`` -> ``count`` entries."""
    def cb(degree, count):
        # the queue reports the worst degree and how many segments; the reference one per segment
        log.append((degree, count))
    return cb


ops = st.lists(st.tuples(st.sampled_from(["send", "send", "ack", "sack", "sack", "lost", "head",
                                          "rto", "retx", "retx"]),
                         st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 6)),
               min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_queue_matches_per_segment_reference(program):
    q = RtxQueue(MSS)
    qlog: list = []
    q.reordered = reordered_log(qlog)
    ref = PerSegment()
    nxt = una = 0
    now = 0.0
    for op, a, b, k in program:
        now += 1.0
        if op == "send":
            # a GSO skb of k full segments, or (a % 4 == 0) a small tail segment
            if a % 4 == 0:
                n, pcount = 1 + a % (MSS - 1), 1
            else:
                n, pcount = k * MSS, k
            q.queue(nxt, nxt + n, now, pcount)
            ref.queue(nxt, nxt + n, now, pcount)
            nxt += n
            continue
        bounds = [r[0] for r in ref.segs] + [nxt]      # the segment edges above snd_una
        if op == "ack":
            ack = bounds[a % len(bounds)]
            ts_ecr = float(b % int(now + 1))
            assert q.clean(ack, ts_ecr) == ref.clean(ack, ts_ecr)
            una = max(una, ack)
        elif op == "sack":
            i, j = sorted((a % len(bounds), b % len(bounds)))
            blocks = [(bounds[i], bounds[j])] if i < j else []
            if k > 3 and len(bounds) > 2:   # a second block
                blocks.append((bounds[k % len(bounds)], bounds[-1]))
            blocks = [(s, e) for s, e in blocks if s < e]
            assert q.sacktag(blocks, una) == ref.sacktag(blocks, una)
        elif op == "lost":
            q.mark_lost(k)
            ref.mark_lost(k)
        elif op == "head":
            q.mark_head_lost()
            ref.mark_head_lost()
        elif op == "rto":
            q.enter_loss()
            ref.enter_loss()
        else:
            got, want = q.next_retransmit(now), ref.next_retransmit(now)
            assert (got is None) == (want is None)
            if got is not None:
                # only a segment marked lost goes again, one segment at a time
                assert got[0][:2] == want[0][:2] and got[1] == want[1]
                assert got[0][4] == 1 and got[0][3] & LOST
        assert [tuple(s) for s in q.segments()] == [tuple(r) for r in ref.segs]
        assert (q.packets_out, q.sacked_out, q.lost_out, q.retrans_out) == \
            (len(ref.segs), ref.sacked_out, ref.lost_out, ref.retrans_out)
        assert q.high_sacked == ref.high_sacked and q.lost_mark_seq == ref.lost_mark_seq
        # bytes conserved: the records tile [snd_una, snd_nxt) without gap or overlap
        recs = q.recs[q.head:]
        assert all(r[1] == s[0] for r, s in zip(recs, recs[1:]))
        assert not recs or recs[-1][1] == nxt
        # the reorder reports, segment by segment: the same count, the same worst degree
        assert sum(c for _, c in qlog) == len(ref.reorder)
        assert max((d for d, _ in qlog), default=0) == max((d for d, _ in ref.reorder), default=0)


def test_a_gso_skb_is_one_record_until_sack_cuts_it():
    """A 10-segment skb stays one record through a partial ACK; a SACK of its middle cuts it in three."""
    q = RtxQueue(MSS)
    q.queue(0, 10 * MSS, 0.0, 10)
    assert len(q) == 1 and q.packets_out == 10
    acked, *_ = q.clean(2 * MSS, 0.0)                  # tcp_tso_acked: trims the head
    assert acked == 2 and len(q) == 1 and q.recs[q.head][:2] == [2 * MSS, 10 * MSS]
    assert q.sacktag([(5 * MSS, 7 * MSS)], 2 * MSS) == 2
    assert [r[:2] for r in q.recs[q.head:]] == [[200, 500], [500, 700], [700, 1000]]
    assert q.sacked_out == 2 and q.packets_out == 8


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fwd=st.sets(st.integers(min_value=0, max_value=120), min_size=1, max_size=25))
def test_gso_sender_retransmits_only_lost_ranges(make_path, fwd):
    """End to end, with GSO skbs on a path that drops whole skbs and never reorders: with SACK and
    no timeout, every retransmitted range lies inside something the path dropped; every byte
    arrives once, in order."""
    p = make_path(rate=50e6, delay=0.002, limit=1000, fwd_pattern=fwd)
    p.a.gso = True                   # the sender's device takes GSO skbs (Endpoint(features=...))
    c, s = connect(p.env, p.a, p.b, 5001, sack=True)
    snd = c.sender
    dropped, retx = [], []
    loss_put, transmit = p.loss.put, snd._transmit

    def watch_loss(pkt):
        before = p.loss.dropped
        loss_put(pkt)
        if p.loss.dropped > before:
            dropped.append((pkt.seq, pkt.seq + pkt.payload))

    def watch_tx(seq, n, now, new, segs=1):
        if not new:
            retx.append((seq, seq + n))
        transmit(seq, n, now, new, segs)

    p.loss.put = watch_loss
    snd._transmit = watch_tx
    nbytes = 600_000
    c.write(nbytes)
    p.env.run(until=600.0)
    assert s.receiver.rcv_nxt == snd.snd_una == nbytes
    assert snd.packets_out == snd.sacked_out == snd.lost_out == snd.retrans_out == 0
    assert snd.skbs_out < snd.data_segs_out - snd.retransmits      # GSO skbs of several segments
    assert snd.bytes_retrans == sum(b - a for a, b in retx)
    if dropped:
        assert retx
    if snd.timeouts == 0:
        for a, b in retx:
            assert any(x <= a and b <= y for x, y in dropped), (a, b)
