"""The sender's retransmit queue and SACK scoreboard, kept as skbs with counters, as Linux keeps it.

Linux holds a socket's sent-but-unacknowledged data as skbs (``tcp_rtx_queue``, an rb-tree; a GSO
skb is one node of ``tcp_skb_pcount`` segments) and the scoreboard as per-skb flags
(``TCPCB_SACKED_ACKED``, ``TCPCB_LOST``, ``TCPCB_SACKED_RETRANS``, ``TCPCB_EVER_RETRANS``) plus the
counters ``packets_out``, ``sacked_out``, ``lost_out`` and ``retrans_out`` in segments.  This class
does the same with a list of records ``[seq, end, tx_time, flags, pcount, rate]`` in sequence order
(``recs[head:]`` outstanding), so a 64 KB skb costs one record and one step per ACK, not 44.  ``rate`` is
the skb's delivery-rate snapshot (``TCP_SKB_CB(skb)->tx``, set by ``tcp_rate_skb_sent`` at each
transmission; None when no sampler keeps one, or once a SACK has used it):

* :meth:`clean` -- ``tcp_clean_rtx_queue`` (tcp_input.c): frees wholly acknowledged skbs and trims
  a partly acknowledged head (``tcp_tso_acked`` -> ``tcp_trim_head``), counters moved by pcount.
* :meth:`sacktag` -- ``tcp_sacktag_write_queue`` / ``tcp_sacktag_walk``: an skb that a SACK block
  covers only in part is cut at the block's edge (``tcp_match_skb_to_sack`` -> ``tcp_fragment``,
  rounded to whole segments), then tagged ``SACKED``; only the part of a block beyond what the
  previous ACK reported is walked (the ``recv_sack_cache``).
* :meth:`mark_lost` -- RFC 6675 ``IsLost`` as the model has it (an unSACKed segment with
  ``reordering`` SACKed segments above it), :meth:`mark_head_lost` -- NewReno's head marking
  (``tcp_newreno_mark_lost``: the head skb cut to one segment, ``tcp_mark_skb_lost``),
  :meth:`enter_loss` -- the marking of ``tcp_enter_loss``.
* :meth:`next_retransmit` -- ``tcp_xmit_retransmit_queue``: the first lost, not yet retransmitted
  segment (cut off its skb: the model retransmits one segment per skb).
* :meth:`mark_lost_retrans` -- RACK's rule (``tcp_rack_detect_loss``, net/ipv4/tcp_recovery.c) for
  retransmissions: one sent before the most recently sent data the receiver has since SACKed or
  acknowledged, by more than the reordering window, was lost again and is marked for another
  retransmission, without waiting for the retransmission timeout.  (RACK's rule for original
  transmissions is left to :meth:`mark_lost`'s RFC 6675 marking.)

An skb is cut only where the scoreboard's state changes inside it, so the flags of every segment
are exactly those of a per-segment scoreboard (tests/tcp/test_rtx_queue.py checks this against one).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from itertools import islice
from operator import itemgetter

# flags of one skb (Linux's TCP_SKB_CB(skb)->sacked bits)
SACKED = 1         # TCPCB_SACKED_ACKED
LOST = 2           # TCPCB_LOST
RETRANS = 4        # TCPCB_SACKED_RETRANS: a retransmission of it is in flight
EVER_RETRANS = 8   # TCPCB_EVER_RETRANS

# a record's fields
SEQ, END, TX, FLAGS, PCOUNT, RATE = range(6)

_seq_of = itemgetter(SEQ)
COMPACT = 1024     # drop acknowledged records from the list's front once this many have piled up


class RtxQueue:
    """Sent, unacknowledged data as skbs ``[seq, end, tx_time, flags, pcount]`` plus segment counters."""

    def __init__(self, mss: int, reordered=None):
        self.mss = mss
        self.recs: list = []
        self.head = 0
        self.packets_out = 0
        self.sacked_out = 0         # SACKed segments (without SACK: the "reno SACKs", kept by the sender)
        self.lost_out = 0
        self.retrans_out = 0
        self.retx_hint = 0          # no lost, unretransmitted skb sits below this index
        self.lost_mark_seq = 0      # where the last IsLost scan stopped
        self.high_sacked = 0        # start of the highest SACKed segment + 1
        self.sack_cache: dict = {}  # block start -> end, as the previous ACK reported them
        # callback(degree, count): ``count`` original transmissions SACKed below SACKed data,
        # the worst ``degree`` segments out of order (tcp_check_sack_reordering)
        self.reordered = reordered
        # RACK (tcp_recovery.c): the send time of the most recently sent original transmission delivered
        # (SACKed or acknowledged) so far, and the retransmitted records in the order they were sent
        # (tp->tsorted_sent_queue's retransmissions: a retransmission is one segment, never split)
        self.rack_tx = -1.0
        self.retrans_sent: deque = deque()
        # tcp_rate_skb_delivered(record): called for each skb an ACK delivers -- cumulatively (a partly
        # acknowledged one after its trim) or newly SACKed -- that holds a rate snapshot; None: no sampler
        self.on_delivered = None

    def __len__(self) -> int:
        """Outstanding skbs."""
        return len(self.recs) - self.head

    def segments(self):
        """Every outstanding segment as ``(seq, end, tx_time, flags)`` (for tests and inspection)."""
        mss = self.mss
        for seq, end, tx, f, pc, _ in islice(self.recs, self.head, None):
            for j in range(pc):
                s = seq + j * mss
                yield s, (s + mss if j < pc - 1 else end), tx, f

    # -- building --------------------------------------------------------------------------
    def queue(self, seq: int, end: int, now: float, pcount: int) -> None:
        """A new skb of ``pcount`` segments sent at ``now`` (``tcp_event_new_data_sent``)."""
        self.recs.append([seq, end, now, 0, pcount, None])
        self.packets_out += pcount

    def _split(self, i: int, at: int) -> None:
        """``tcp_fragment``: cut record ``i`` at ``at`` (inside it); both parts keep its flags, send time and
        rate snapshot ("Update delivered info for the new segment": ``TCP_SKB_CB(buff)->tx = ...->tx``)."""
        r = self.recs[i]
        mss = self.mss
        first = (at - r[SEQ] + mss - 1) // mss
        self.recs.insert(i + 1, [at, r[END], r[TX], r[FLAGS], r[PCOUNT] - first, r[RATE]])
        r[END] = at
        r[PCOUNT] = first
        if self.retx_hint > i:
            self.retx_hint += 1

    # -- cumulative ACK ---------------------------------------------------------------------
    def clean(self, ack: int, ts_ecr: float):
        """``tcp_clean_rtx_queue``: drop what ``ack`` covers.

        Returns ``(acked, sacked_before, first_tx, last_tx, karn, spurious)``: segments newly
        acknowledged, how many of them were SACKed, the send times of the first and last of them
        neither retransmitted nor SACKed (-1 if none), whether any was ever retransmitted (Karn), and how many
        retransmitted ones the timestamp echo ``ts_ecr`` shows were acked by the original (Eifel)."""
        recs = self.recs
        h = self.head
        n = len(recs)
        acked = sacked = spurious = 0
        first_tx = last_tx = -1.0
        karn = False
        delivered_cb = self.on_delivered
        while h < n:
            r = recs[h]
            if r[END] > ack:
                if r[SEQ] >= ack:
                    break
                # tcp_tso_acked: a partly acknowledged skb loses its head (tcp_trim_head)
                pc = r[PCOUNT]
                left = (r[END] - ack + self.mss - 1) // self.mss
                r[SEQ] = ack
                r[PCOUNT] = left
                pc -= left
                if not pc:
                    break
                part = True
            else:
                pc = r[PCOUNT]
                part = False
            f = r[FLAGS]
            if f:
                if f & SACKED:
                    sacked += pc
                if f & LOST:
                    self.lost_out -= pc
                if f & RETRANS:
                    self.retrans_out -= pc
                if f & EVER_RETRANS:
                    karn = True
                    if 0.0 < ts_ecr < r[TX]:
                        spurious += pc       # the echo is older than the retransmission
                elif not f & SACKED:
                    # marked lost, never retransmitted: an original transmission (tcp_clean_rtx_queue)
                    last_tx = r[TX]
                    if first_tx < 0.0:
                        first_tx = last_tx
            else:
                last_tx = r[TX]
                if first_tx < 0.0:
                    first_tx = last_tx
            acked += pc
            if delivered_cb is not None and r[RATE] is not None:
                delivered_cb(r)                   # tcp_clean_rtx_queue -> tcp_rate_skb_delivered
            if part:
                break
            h += 1
        self.packets_out -= acked
        self.sacked_out -= sacked
        if last_tx > self.rack_tx:
            self.rack_tx = last_tx                    # tcp_rack_advance for the cumulatively acked
        if h > COMPACT and h * 2 > n:
            del recs[:h]
            self.retx_hint = self.retx_hint - h if self.retx_hint > h else 0
            h = 0
        self.head = h
        return acked, sacked, first_tx, last_tx, karn, spurious

    # -- SACK ----------------------------------------------------------------------------------
    def sacktag(self, blocks, una: int) -> int:
        """``tcp_sacktag_write_queue``: tag what the SACK ``blocks`` cover; return segments newly SACKed."""
        recs = self.recs
        head = self.head
        mss = self.mss
        cache = self.sack_cache
        prior_high = self.high_sacked - 1
        new_cache = {}
        newly = 0
        for s, e in blocks:
            if e <= una:
                continue
            new_cache[s] = e
            start = cache.get(s)
            lo = s if start is None or start < s else start
            if lo >= e:
                continue
            i = bisect_left(recs, lo, head, len(recs), key=_seq_of)
            if i > head:
                r = recs[i - 1]
                if r[END] > lo:
                    # the block starts inside this skb: cut at the next segment edge (tcp_match_skb_to_sack)
                    at = r[SEQ] + (lo - r[SEQ] + mss - 1) // mss * mss
                    if at < r[END]:
                        self._split(i - 1, at)
            n = len(recs)
            while i < n:
                r = recs[i]
                if r[END] > e:
                    # the block ends inside this skb: keep the whole segments it covers
                    at = r[SEQ] + (e - r[SEQ]) // mss * mss
                    if at <= r[SEQ]:
                        break
                    self._split(i, at)
                    n += 1
                f = r[FLAGS]
                if not f & SACKED:
                    pc = r[PCOUNT]
                    if not f & EVER_RETRANS and r[SEQ] < prior_high and self.reordered is not None:
                        below = (prior_high - r[SEQ] - 1) // mss + 1
                        self.reordered((prior_high - r[SEQ]) // mss + 1, below if below < pc else pc)
                    if f & LOST:
                        self.lost_out -= pc
                    if f & RETRANS:
                        self.retrans_out -= pc
                    r[FLAGS] = (f | SACKED) & ~(LOST | RETRANS)
                    if not f & EVER_RETRANS and r[TX] > self.rack_tx:
                        self.rack_tx = r[TX]          # tcp_rack_advance
                    self.sacked_out += pc
                    newly += pc
                    top = r[SEQ] + (pc - 1) * mss
                    if top >= self.high_sacked:
                        self.high_sacked = top + 1
                    if r[RATE] is not None and self.on_delivered is not None:
                        self.on_delivered(r)          # tcp_sacktag_one -> tcp_rate_skb_delivered
                if r[END] >= e:
                    break
                i += 1
        self.sack_cache = new_cache
        return newly

    # -- loss marking -----------------------------------------------------------------------------
    def mark_lost(self, thresh: int) -> None:
        """RFC 6675 ``IsLost``: unSACKed segments with ``thresh`` SACKed segments above them are lost.

        Scans from the highest SACKed segment down to where the previous scan stopped, so the cost
        is amortised over the ACKs of a recovery."""
        recs = self.recs
        head = self.head
        mss = self.mss
        i = bisect_left(recs, self.high_sacked, head, len(recs), key=_seq_of) - 1
        cnt = 0
        while i >= head:
            r = recs[i]
            if r[FLAGS] & SACKED:
                cnt += r[PCOUNT]
                if cnt >= thresh:
                    break
            i -= 1
        if cnt < thresh:
            return
        r = recs[i]
        mark = r[SEQ] + (cnt - thresh) * mss      # the thresh-th SACKed segment from the top
        stop_seq = self.lost_mark_seq
        i -= 1
        while i >= head:
            r = recs[i]
            if r[END] <= stop_seq:
                break
            f = r[FLAGS]
            if not f & (SACKED | LOST | RETRANS):
                if r[SEQ] < stop_seq:
                    # only the part above the previous scan's mark is new to this scan
                    at = r[SEQ] + (stop_seq - r[SEQ] + mss - 1) // mss * mss
                    if at >= r[END]:
                        break
                    self._split(i, at)
                    i += 1
                    r = recs[i]
                r[FLAGS] = f | LOST
                self.lost_out += r[PCOUNT]
                if i < self.retx_hint:
                    self.retx_hint = i
            if r[SEQ] < stop_seq:
                break
            i -= 1
        if mark > stop_seq:
            self.lost_mark_seq = mark

    def mark_head_lost(self) -> None:
        """``tcp_newreno_mark_lost``: the first outstanding segment is lost (cut off its skb)."""
        if len(self.recs) > self.head:
            i = self.head
            r = self.recs[i]
            if not r[FLAGS] & (LOST | SACKED):
                if r[PCOUNT] > 1:
                    self._split(i, r[SEQ] + self.mss)
                f = r[FLAGS] | LOST
                if f & RETRANS:
                    f &= ~RETRANS
                    self.retrans_out -= r[PCOUNT]
                r[FLAGS] = f
                self.lost_out += r[PCOUNT]
                self.retx_hint = i

    def enter_loss(self) -> None:
        """``tcp_enter_loss``: every unSACKed segment is lost, no retransmission is in flight."""
        lost = 0
        for r in islice(self.recs, self.head, None):
            f = r[FLAGS]
            if not f & SACKED:
                r[FLAGS] = (f | LOST) & ~RETRANS
                lost += r[PCOUNT]
        self.lost_out = lost
        self.retrans_out = 0
        self.retrans_sent.clear()
        self.retx_hint = self.head

    def unmark_lost(self) -> None:
        """``tcp_undo_cwnd_reduction(sk, true)``: no skb stays marked lost (retransmissions in flight stay)."""
        for r in islice(self.recs, self.head, None):
            if r[FLAGS] & LOST:
                r[FLAGS] &= ~LOST
        self.lost_out = 0
        self.retx_hint = self.head

    # -- retransmission ---------------------------------------------------------------------------
    def next_retransmit(self, now: float):
        """``tcp_xmit_retransmit_queue``: the first lost segment not yet retransmitted, marked
        retransmitted at ``now``, as ``(record, is_head)``; ``None`` when there is none."""
        recs = self.recs
        i = self.retx_hint
        if i < self.head:
            i = self.head
        n = len(recs)
        while i < n:
            r = recs[i]
            f = r[FLAGS]
            if f & LOST and not f & RETRANS:
                if r[PCOUNT] > 1:
                    self._split(i, r[SEQ] + self.mss)
                r[FLAGS] = f | RETRANS | EVER_RETRANS
                r[TX] = now
                self.retrans_sent.append(r)
                self.retrans_out += 1
                self.retx_hint = i + 1
                return r, i == self.head
            i += 1
        self.retx_hint = n
        return None

    def mark_lost_retrans(self, reo_wnd: float) -> int:
        """RACK for retransmissions (``tcp_rack_detect_loss``): a retransmission still in flight that was
        sent more than ``reo_wnd`` before :attr:`rack_tx` -- data sent after it has been delivered -- is
        lost: it loses its RETRANS mark (stays LOST) for :meth:`next_retransmit`.  Returns the segments
        re-marked.  Retransmissions are sent in time order, so the scan stops at the first one too recent."""
        sent = self.retrans_sent
        limit = self.rack_tx - reo_wnd
        una = self.recs[self.head][SEQ] if self.head < len(self.recs) else None
        marked = 0
        while sent:
            r = sent[0]
            f = r[FLAGS]
            if f & RETRANS and not f & SACKED and una is not None and r[END] > una:
                if r[TX] >= limit:
                    break               # sent too recently to judge (tcp_rack_skb_timeout > 0)
                r[FLAGS] = f & ~RETRANS  # still LOST: retransmit it again
                self.retrans_out -= r[PCOUNT]
                marked += r[PCOUNT]
            sent.popleft()
        if marked:
            self.retx_hint = self.head  # next_retransmit scans from the head again
        return marked

    def head_sent(self) -> float:
        """When the oldest outstanding skb was (last) sent."""
        return self.recs[self.head][TX]
