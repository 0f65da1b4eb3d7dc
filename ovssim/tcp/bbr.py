"""BBR v1 congestion control, as Linux ``net/ipv4/tcp_bbr.c``.

BBR models the path by two windowed filters and sets a pacing rate and a cwnd from them:

* ``BtlBw``: the maximum delivery rate over the last 10 round trips (``bbr_bw_rtts``; lib/win_minmax.c's
  filter, :class:`WindowedMax`: a sample holds until it is more than 10 rounds old), from
  the delivery-rate samples of ``tcp_rate.c`` (:class:`RateSampler`): delivered segments
  over ``max(send interval, ACK interval)`` of the most recently delivered segment; a
  sample shorter than min_rtt is discarded, an app-limited one only raises the max.
* ``RTprop``: the minimum RTT over 10 s (``bbr_min_rtt_win_sec``).
* Modes: STARTUP (pacing and cwnd gain 2/ln2, 739/256 = 2.88672 in fixed point) until the bandwidth stops growing by
  25 % for 3 rounds (``bbr_check_full_bw_reached``); DRAIN (pacing gain 88/256 = 0.34375) until
  the segments in the network at the next departure (``bbr_packets_in_net_at_edt``: in-flight
  less BtlBw x (EDT - now), plus a TSO-goal skb while the gain is above 1) are down to one BDP
  plus the quantization budget; PROBE_BW cycling the pacing gain over
  5/4, 3/4, 1, 1, 1, 1, 1, 1 (one phase per min_rtt; the first phase drawn at random, never
  the 3/4 one) with cwnd gain 2; PROBE_RTT when the min_rtt is 10 s old: cwnd 4 segments
  for max(200 ms, one round), then back.
* Pacing rate = gain x BtlBw x (1 - 1 %) (``bbr_pacing_margin_percent``), only ever raised
  before the pipe is full; initially 2.88672 x cwnd / srtt (``bbr_init_pacing_rate_from_rtt``).
* cwnd = cwnd_gain x BDP + 3 x the TSO goal (``bbr_quantization_budget``; the goal,
  ``bbr_tso_segs_goal``, is ~1 ms at the pacing rate in segments, at least 2 (1 below
  1.2 Mbit/s), at most 127 -- "sort of tcp_tso_autosize() but ignoring" the min-RTT term
  and the device's GSO size), rounded up to even, +2 in the 5/4 phase; grown by the ACKed
  segments towards it; after a loss packet conservation for one round
  (``bbr_set_cwnd_to_recover_or_restore``).
  ``sndbuf_expand`` = 3 (``bbr_sndbuf_expand``).

* ACK aggregation (``bbr_update_ack_aggregation``, ``bbr_ack_aggregation_cwnd``): the most data
  ACKed beyond what ``BtlBw`` explains since the aggregation epoch began, the max over two windows
  of 5 rounds, capped at cwnd and at 100 ms of ``BtlBw``, is added to the cwnd target once the pipe
  is full.  Behind a shaper that releases 64 KB GSO skbs whole, each ACK covers 45 segments: this
  is what keeps Linux's BBR cwnd at 26-60 segments behind a 20 Mbit/s HTB on this host
  (data/local/tcp_window) where the BDP from a 0.1 ms min_rtt is one segment.

Not modelled: the long-term (policer) bandwidth ``lt_bw``, idle restart.
"""
from __future__ import annotations

import math
import random
from bisect import bisect_left

from ..path.cpu import flow_key
from .congestion import CongestionControl
from .defaults import INIT_CWND, MAX_TCP_HEADER
from .rtx_queue import END, EVER_RETRANS, FLAGS, RATE, SACKED, TX, _seq_of

STARTUP, DRAIN, PROBE_BW, PROBE_RTT = "startup", "drain", "probe_bw", "probe_rtt"
BBR_UNIT = 256                   # BBR_SCALE 8: the gains are fixed-point, in 1/256
# bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1 = 739 (2/ln2 rounded up: 2.88672), bbr_drain_gain =
# BBR_UNIT * 1000 / 2885 = 88 (0.34375): integer divisions, as ss -ti shows them (bbr:(...,pacing_gain:0.34375))
HIGH_GAIN = (BBR_UNIT * 2885 // 1000 + 1) / BBR_UNIT
DRAIN_GAIN = (BBR_UNIT * 1000 // 2885) / BBR_UNIT
CWND_GAIN = 2.0
PACING_GAINS = (5 / 4, 3 / 4, 1, 1, 1, 1, 1, 1)
CYCLE_RAND = 7
BW_RTTS = 10
MIN_RTT_WIN = 10.0
PROBE_RTT_TIME = 0.200
CWND_MIN_TARGET = 4
FULL_BW_THRESH = 5 / 4
FULL_BW_CNT = 3
PACING_MARGIN = 0.01
EXTRA_ACKED_WIN_RTTS = 5          # bbr_extra_acked_win_rtts
EXTRA_ACKED_MAX = 0.100           # bbr_extra_acked_max_us: at most 100 ms of BtlBw
ACK_EPOCH_ACKED_RESET = 1 << 20   # bbr_ack_epoch_acked_reset_thresh
GSO_LEGACY_MAX_SIZE = 65536
MIN_TSO_RATE = 1.2e6 / 8         # bbr_min_tso_rate: below 1.2 Mbit/s one segment per skb

STATE_ORDER = {"open": 0, "recovery": 3, "loss": 4}


def _us(t: float) -> int:
    """A time in the kernel's whole microseconds: ``tcp_clock_us()`` / ``tcp_skb_timestamp_us`` truncate the
    nanosecond clock (``div_u64(ns, NSEC_PER_USEC)``); the model's float seconds are rounded to the
    nanosecond first."""
    return int(round(t * 1e9)) // 1000


class RateSampler:
    """Delivery-rate samples as ``tcp_rate.c`` takes them: a snapshot per skb at each transmission, the sample
    from the most recently sent skb an ACK delivers, cumulatively or by SACK.

    The snapshot (``TCP_SKB_CB(skb)->tx``) lives in the skb's retransmit-queue record (``RtxQueue``'s
    ``RATE`` field), so it is cut with the skb (``tcp_fragment`` copies it) and a retransmission takes a
    new one (``tcp_rate_skb_sent`` runs in ``__tcp_transmit_skb`` for every transmission).  The queue calls
    :meth:`skb_delivered` for each skb an ACK delivers -- ``tcp_sacktag_walk`` for newly SACKed skbs,
    ``tcp_clean_rtx_queue`` for cumulatively acknowledged ones, a partly acknowledged TSO skb included (after
    ``tcp_tso_acked`` trimmed whole segments off its head; a TBF that splits GSO skbs gets an ACK every two
    segments, each a sample from the skb's send-time snapshot) -- and :meth:`gen` (``tcp_rate_gen``) makes
    the ACK's sample.  A SACKed skb's snapshot is used once (``tcp_rate_skb_delivered`` zeroes its
    ``tx.delivered_mstamp``), so its later cumulative ACK gives no second sample.  During loss recovery
    every ACK carrying new SACK information is thus a sample, and BBR's rounds (``bbr_update_bw``: a
    sample whose ``prior_delivered`` reaches ``next_rtt_delivered``) go on at one per round trip while
    the cumulative ACK waits for a retransmission."""

    def __init__(self):
        # tp->delivered (segments): 1 once the connection is open -- the SYN, which the SYN-ACK's tcp_ack
        # counts on the active side, or the SYN-ACK, which tcp_rcv_state_process counts on the passive side
        # ("SYN-ACK delivery isn't tracked in tcp_ack") -- so a write on the fresh connection marks its samples
        # app-limited up to delivered 1 (tcp_rate_check_app_limited) and the mark ends with its ACK
        self.delivered = 1
        self.delivered_time = 0.0     # tp->delivered_mstamp
        self.first_tx_time = 0.0      # tp->first_tx_mstamp
        self.app_limited = 0          # tp->app_limited: delivered count the mark lasts until
        self._rs = None               # this ACK's sample so far: (snapshot, tx time, end_seq, retransmitted)

    def snapshot(self) -> tuple:
        """``tcp_rate_skb_sent``'s ``tx``: (delivered, delivered_mstamp, first_tx_mstamp, is_app_limited)."""
        return self.delivered, self.delivered_time, self.first_tx_time, self.app_limited != 0

    def on_send(self, sender, seq: int, now: float, new: bool, pcount: int = 1) -> None:
        """``tcp_rate_skb_sent`` for the skb starting at ``seq`` the sender has just sent (``new``: counted in
        ``packets_out`` with its ``pcount`` segments; else a retransmission, which stays counted)."""
        if new and sender.packets_out <= pcount:   # ``!tp->packets_out`` before it: a fresh interval
            self.first_tx_time = self.delivered_time = now
        q = sender.q
        recs = q.recs
        i = len(recs) - 1 if new else bisect_left(recs, seq, q.head, len(recs), key=_seq_of)
        if 0 <= i < len(recs) and recs[i][0] == seq:
            recs[i][RATE] = self.snapshot()

    def skb_delivered(self, r) -> None:
        """``tcp_rate_skb_delivered``: the ACK's sample is taken from the most recently sent skb it delivers
        (``tcp_skb_sent_after``: later send time, or the same time and a higher end_seq)."""
        tx = r[TX]
        rs = self._rs
        if rs is None or tx > self.first_tx_time or (tx == self.first_tx_time and r[END] > rs[2]):
            self._rs = (r[RATE], tx, r[END], bool(r[FLAGS] & EVER_RETRANS))
            self.first_tx_time = tx
        if r[FLAGS] & SACKED:
            r[RATE] = None

    def gen(self, delivered: int, now: float, min_rtt: float):
        """``tcp_rate_gen``: (rate seg/s, app_limited, prior_delivered, rtt) or None (no valid sample).

        The interval is the longer of the send phase (the sampled skb's send time since its snapshot's
        ``first_tx_mstamp``) and the ACK phase (now since its ``delivered_mstamp``); one shorter than
        ``tcp_min_rtt`` is discarded (ACK compression).  The RTT is the sampled skb's (-1 for a
        retransmission: ``tcp_clean_rtx_queue`` takes no RTT from retransmitted data).

        In whole microseconds, as the kernel keeps them: ``tp->tcp_mstamp`` and the snapshot's
        ``delivered_mstamp`` / ``first_tx_mstamp`` are ``tcp_clock_us()`` values, an skb's send time is
        ``tcp_skb_timestamp_us`` (its ``skb_mstamp_ns`` / 1000), and ``tcp_rate_gen`` takes both phases with
        ``tcp_stamp_us_delta`` into ``rs->interval_us`` (an integer), as ``tcp_ack_update_rtt`` takes
        ``rs->rtt_us``.  On this host's ~10 us idle round trip that is a tenth of the interval: an iperf3
        cookie's sample (one packet) is 1448 x 8 bits over 7, 8, ... 12 us, the 1654.9 / 1448.0 / 1287.1 /
        1158.4 / 1053.1 / 965.3 Mbit/s that ss shows as each stream's first ``bw``
        (data/local/tcp_window/2026-11-28-bbr5)."""
        self.delivered += delivered
        if delivered:
            self.delivered_time = now
        if self.app_limited and self.delivered > self.app_limited:
            self.app_limited = 0
        rs, self._rs = self._rs, None
        if rs is None or not delivered:
            return None
        (d0, dt0, ftx0, app), tx, _, retrans = rs
        now_us, tx_us = _us(now), _us(tx)
        interval_us = max(tx_us - _us(ftx0), now_us - _us(dt0))
        if interval_us <= 0 or interval_us < _us(min_rtt):
            return None               # too short to trust (ACK compression)
        return ((self.delivered - d0) / (interval_us * 1e-6), app, d0,
                (-1.0 if retrans else (now_us - tx_us) * 1e-6))


class WindowedMax:
    """``struct minmax`` and ``minmax_running_max`` (lib/win_minmax.c), the filter behind ``bbr_max_bw``:
    Kathleen Nichols' windowed maximum, which keeps three samples -- the best, a 2nd choice from after the
    first quarter of the window and a 3rd from its second half -- not every sample of the window.

    * A sample at least the best, or one arriving when even the 3rd choice is older than the window, resets
      all three to it.
    * Otherwise it replaces the 2nd and 3rd choices if at least the 2nd, else the 3rd if at least that.
    * The best expires only when it is *more* than ``win`` old (``dt > win``): with ``bbr_bw_rtts`` = 10 a
      sample taken in round r holds through round r + 10 and goes at the first sample of round r + 11 (11
      round starts; Linux's tcp_probe, four BBR streams behind HTB 20 Mbit/s, data/local/tcp_window/
      2026-11-28-bbr5: each stream's cookie estimate falls at its 11th round start after the cookie's ACK,
      2.59 / 2.71 / 2.75 / 2.83 s).  The 2nd choice then takes its place (and the 3rd the 2nd's, the new sample
      the 3rd's; twice if the 2nd is out of the window too).
    * With the best still in the window, a sample more than ``win // 4`` after it becomes the 2nd and 3rd
      choice while the 2nd is still the best itself, and one more than ``win // 2`` after it the 3rd while the
      3rd is the 2nd.
    So a sample smaller than the best and taken in the first quarter of its window is forgotten, and the
    estimate after the best expires can be lower than the window's true maximum."""

    __slots__ = ("s",)

    def __init__(self):
        self.s = [(0, 0.0)] * 3          # (time, value): best, 2nd, 3rd choice (minmax_reset(.., 0, 0))

    def reset(self, t: int, v: float) -> float:
        """``minmax_reset``: all three choices are this sample."""
        self.s = [(t, v)] * 3
        return v

    def running_max(self, win: int, t: int, v: float) -> float:
        """``minmax_running_max`` + ``minmax_subwin_update``: take sample ``v`` at time ``t``; the best."""
        s = self.s
        if v >= s[0][1] or t - s[2][0] > win:
            return self.reset(t, v)
        new = (t, v)
        if v >= s[1][1]:
            s[1] = s[2] = new
        elif v >= s[2][1]:
            s[2] = new
        dt = t - s[0][0]
        if dt > win:
            s[0], s[1], s[2] = s[1], s[2], new
            if t - s[0][0] > win:
                s[0], s[1], s[2] = s[1], s[2], new
        elif s[1][0] == s[0][0] and dt > win // 4:
            s[1] = s[2] = new
        elif s[2][0] == s[1][0] and dt > win // 2:
            s[2] = new
        return s[0][1]


class Bbr(CongestionControl):
    name = "bbr"
    sndbuf_expand = 3

    def __init__(self, seed: int | None = None):
        super().__init__()
        self.seed = seed

    def attach(self, sender) -> None:
        super().attach(sender)
        s = sender
        self.rng = random.Random(self.seed if self.seed is not None else flow_key(s.sock.flow))
        self.rate = RateSampler()
        s.q.on_delivered = self.rate.skb_delivered
        self.mode = STARTUP
        self.pacing_gain = HIGH_GAIN
        self.cwnd_gain = HIGH_GAIN
        self.bw_filter = WindowedMax()     # bbr->bw: BtlBw (segments/s) over BW_RTTS rounds
        self.min_rtt = math.inf
        self.min_rtt_stamp = 0.0
        self.round_count = 0
        self.next_rtt_delivered = 0
        self.round_start = False
        self.full_bw = 0.0
        self.full_bw_cnt = 0
        self.full_bw_reached = False
        self.cycle_idx = 0
        self.cycle_stamp = 0.0
        self.probe_rtt_done_stamp = 0.0
        self.probe_rtt_round_done = False
        self.probe_rtts = 0
        self.prior_cwnd = 0
        self.prev_state = "open"
        self.packet_conservation = False
        self._prev_lost = 0
        # ACK aggregation (bbr_init): two windowed maxima of extra ACKed segments, the current epoch
        self.extra_acked = [0, 0]
        self.extra_acked_win_idx = 0
        self.extra_acked_win_rtts = 0
        self.ack_epoch_time = s.env._now
        self.ack_epoch_acked = 0
        self.log: list[tuple] = []         # (t, mode, bw bit/s, min_rtt, pacing bit/s, cwnd)
        self.has_seen_rtt = False
        self._init_pacing_rate_from_rtt()

    def _init_pacing_rate_from_rtt(self) -> None:
        """``bbr_init_pacing_rate_from_rtt``: high gain x cwnd / srtt (1 ms before any RTT sample); the
        first sample (the SYN-ACK's) also starts ``min_rtt``, as ``bbr_init`` takes ``tcp_min_rtt``
        after the handshake."""
        s = self.s
        srtt = s.rtt.srtt
        if srtt:
            self.has_seen_rtt = True
            self.min_rtt = min(self.min_rtt, s.rtt.min_rtt)
            self.min_rtt_stamp = s.env._now
        s.pacing_rate = HIGH_GAIN * s.cwnd * s.mss / (srtt or 0.001)    # bytes/s

    # -- hooks the sender calls ----------------------------------------------------
    def ssthresh(self) -> int:
        """``bbr_ssthresh``: remember cwnd; the threshold itself is left alone."""
        self._save_cwnd()
        return self.s.ssthresh

    def cong_avoid(self, acked: int, now: float) -> None:
        return None                          # cong_control does it all

    def on_loss_timeout(self) -> None:
        """``bbr_set_state(TCP_CA_Loss)``: a new round, and the full-pipe test starts over."""
        self._save_cwnd()
        self.prev_state = "loss"
        self.full_bw = 0.0
        self.round_start = True

    def undo_cwnd(self) -> int:
        """``bbr_undo_cwnd``: the full-pipe test starts over; cwnd stays as it is."""
        self.full_bw = 0.0
        self.full_bw_cnt = 0
        return self.s.cwnd

    def mark_app_limited(self) -> None:
        """``tcp_rate_check_app_limited``'s mark, which the sender sets at the start of a write when it has
        less than a segment unsent, nothing below it and room in cwnd (:meth:`TcpSender.check_app_limited`):
        the samples of what is sent until everything in flight now is delivered are app-limited."""
        self.rate.app_limited = (self.rate.delivered + self.s.in_flight) or 1

    def on_send(self, seq: int, n: int, now: float, new: bool) -> None:
        s = self.s
        self.rate.on_send(s, seq, now, new, (n + s.mss - 1) // s.mss)

    def cong_control(self, acked: int, delivered: int, now: float) -> None:
        """``bbr_main``: update the model from this ACK's rate sample, then pacing and cwnd."""
        s = self.s
        rate = self.rate
        rs = rate.gen(delivered, now, s.rtt.min_rtt)                          # tcp_min_rtt
        lost = s.lost_out - self._prev_lost
        self._prev_lost = s.lost_out
        losses = lost if lost > 0 else 0
        prior_in_flight = s.in_flight + delivered
        self._update_bw(rs)
        self._update_ack_aggregation(rs, delivered)
        self._update_cycle_phase(now, prior_in_flight, losses)
        self._check_full_bw_reached(rs)
        self._check_drain(now)
        self._update_min_rtt(rs, now)
        bw = self.bw
        if not self.has_seen_rtt and s.rtt.srtt:
            self._init_pacing_rate_from_rtt()                 # bbr_set_pacing_rate's first branch
        self._set_pacing_rate(bw)
        self._set_cwnd(acked, losses, bw)
        if self.log is not None and self.round_start:
            self.log.append((now, self.mode, bw * s.mss * 8, self.min_rtt, s.pacing_rate * 8, s.cwnd))

    # -- the model -----------------------------------------------------------------------
    @property
    def bw(self) -> float:
        """``bbr_max_bw``: segments per second."""
        return self.bw_filter.s[0][1]

    def _update_bw(self, rs) -> None:
        self.round_start = False
        if rs is None:
            return
        bw, app, prior_delivered, _ = rs
        if prior_delivered >= self.next_rtt_delivered:
            self.next_rtt_delivered = self.rate.delivered
            self.round_count += 1
            self.round_start = True
            self.packet_conservation = False
        if not app or bw >= self.bw:
            self.bw_filter.running_max(BW_RTTS, self.round_count, bw)

    def bdp(self, bw: float, gain: float) -> int:
        if self.min_rtt == math.inf:
            return INIT_CWND
        return math.ceil(bw * self.min_rtt * gain)

    def tso_segs_goal(self) -> int:
        """``bbr_tso_segs_goal``: ~1 ms of the pacing rate (pacing_shift 10), no min-RTT term."""
        s = self.s
        min_segs = 1 if s.pacing_rate < MIN_TSO_RATE else 2
        nbytes = min(s.pacing_rate / 1024, GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER)
        return min(max(int(nbytes // s.mss), min_segs), 0x7F)

    def quantization_budget(self, cwnd: int) -> int:
        """``bbr_quantization_budget``: room for 3 TSO skbs, rounded up to even, +2 in the 5/4 phase."""
        cwnd += 3 * self.tso_segs_goal()
        cwnd = (cwnd + 1) & ~1
        if self.mode == PROBE_BW and self.cycle_idx == 0:
            cwnd += 2
        return cwnd

    def inflight(self, bw: float, gain: float) -> int:
        """``bbr_inflight``: the BDP at this gain plus the quantization budget."""
        return self.quantization_budget(self.bdp(bw, gain))

    def _update_ack_aggregation(self, rs, acked_sacked: int) -> None:
        """``bbr_update_ack_aggregation``: segments ACKed beyond ``BtlBw`` x the epoch's length."""
        if rs is None or acked_sacked <= 0:
            return
        if self.round_start:
            self.extra_acked_win_rtts = min(0x1F, self.extra_acked_win_rtts + 1)
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS:
                self.extra_acked_win_rtts = 0
                self.extra_acked_win_idx ^= 1
                self.extra_acked[self.extra_acked_win_idx] = 0
        delivered_time = self.rate.delivered_time            # tp->delivered_mstamp
        expected = int(self.bw * (delivered_time - self.ack_epoch_time))
        if (self.ack_epoch_acked <= expected
                or self.ack_epoch_acked + acked_sacked >= ACK_EPOCH_ACKED_RESET):
            self.ack_epoch_acked = 0
            self.ack_epoch_time = delivered_time
            expected = 0
        self.ack_epoch_acked = min(0xFFFFF, self.ack_epoch_acked + acked_sacked)
        extra = min(self.ack_epoch_acked - expected, self.s.cwnd)
        if extra > self.extra_acked[self.extra_acked_win_idx]:
            self.extra_acked[self.extra_acked_win_idx] = extra

    def aggregation_cwnd(self) -> int:
        """``bbr_ack_aggregation_cwnd``: the extra ACKed segments, at most 100 ms of BtlBw, once the pipe is full."""
        if not self.full_bw_reached:
            return 0
        return min(max(self.extra_acked), int(self.bw * EXTRA_ACKED_MAX))

    def packets_in_net_at_edt(self, inflight_now: int, now: float, gain: float) -> int:
        """``bbr_packets_in_net_at_edt``: the segments still in the network when the next skb departs.

        With pacing the next skb's earliest departure time (``tcp_wstamp_ns``) may lie ahead; by then
        ``BtlBw`` x (EDT - now) segments will have been delivered.  When the pacing gain is above 1
        (``bbr->pacing_gain``: the gain set on the previous ACK, since ``bbr_update_gains`` runs after
        the checks that call this) the EDT skb itself is counted, as ``bbr_tso_segs_goal`` segments:
        so on the ACK that ends STARTUP, DRAIN is skipped only if in-flight plus a goal-sized skb
        (up to 45 segments at startup's pacing rate) fits one BDP plus the quantization budget."""
        s = self.s
        edt = s._wstamp if s._wstamp > now else now
        interval_delivered = int(self.bw * (edt - now))
        inflight_at_edt = inflight_now
        if gain > 1:
            inflight_at_edt += self.tso_segs_goal()
        if interval_delivered >= inflight_at_edt:
            return 0
        return inflight_at_edt - interval_delivered

    def _update_cycle_phase(self, now: float, prior_in_flight: int, losses: int) -> None:
        """``bbr_update_cycle_phase`` / ``bbr_is_next_cycle_phase``: the 5/4 and 3/4 phases compare the
        segments in the network at the next departure (``bbr_packets_in_net_at_edt`` of the ACK's
        ``prior_in_flight``) with the target."""
        if self.mode != PROBE_BW:
            return
        full_length = now - self.cycle_stamp > self.min_rtt
        gain = self.pacing_gain
        if gain == 1:
            nxt = full_length
        else:
            inflight = self.packets_in_net_at_edt(prior_in_flight, now, gain)
            if gain > 1:
                nxt = full_length and (losses > 0 or inflight >= self.inflight(self.bw, gain))
            else:
                nxt = full_length or inflight <= self.inflight(self.bw, 1.0)
        if nxt:
            self._advance_cycle(now)

    def _advance_cycle(self, now: float) -> None:
        self.cycle_idx = (self.cycle_idx + 1) % len(PACING_GAINS)
        self.cycle_stamp = now
        self.pacing_gain = PACING_GAINS[self.cycle_idx]

    def _reset_probe_bw(self, now: float) -> None:
        self.mode = PROBE_BW
        self.cwnd_gain = CWND_GAIN
        self.cycle_idx = len(PACING_GAINS) - 1 - self.rng.randrange(CYCLE_RAND)
        self._advance_cycle(now)

    def _reset_startup(self) -> None:
        self.mode = STARTUP
        self.pacing_gain = self.cwnd_gain = HIGH_GAIN

    def _check_full_bw_reached(self, rs) -> None:
        if self.full_bw_reached or not self.round_start or rs is None or rs[1]:
            return
        bw = self.bw
        if bw >= self.full_bw * FULL_BW_THRESH:
            self.full_bw = bw
            self.full_bw_cnt = 0
            return
        self.full_bw_cnt += 1
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT

    def _check_drain(self, now: float) -> None:
        """``bbr_check_drain``: DRAIN once the pipe is full, PROBE_BW once the segments in the network at
        the next departure (``bbr_packets_in_net_at_edt``, with the gain in force before this ACK) are
        down to one BDP plus the quantization budget."""
        gain = self.pacing_gain
        if self.mode == STARTUP and self.full_bw_reached:
            self.mode = DRAIN
            self.pacing_gain = DRAIN_GAIN
            self.cwnd_gain = HIGH_GAIN
        if (self.mode == DRAIN
                and self.packets_in_net_at_edt(self.s.in_flight, now, gain) <= self.inflight(self.bw, 1.0)):
            self._reset_probe_bw(now)

    def _update_min_rtt(self, rs, now: float) -> None:
        s = self.s
        expired = now > self.min_rtt_stamp + MIN_RTT_WIN
        if rs is not None and rs[3] > 0.0 and (rs[3] < self.min_rtt or expired):
            self.min_rtt = rs[3]
            self.min_rtt_stamp = now
        if expired and self.mode != PROBE_RTT and self.min_rtt < math.inf:
            self.mode = PROBE_RTT
            self.pacing_gain = self.cwnd_gain = 1.0      # bbr_update_gains for PROBE_RTT
            self.probe_rtts += 1
            self._save_cwnd()
            self.probe_rtt_done_stamp = 0.0
        if self.mode == PROBE_RTT:
            self.rate.app_limited = (self.rate.delivered + s.in_flight) or 1
            if not self.probe_rtt_done_stamp and s.in_flight <= CWND_MIN_TARGET:
                self.probe_rtt_done_stamp = now + PROBE_RTT_TIME
                self.probe_rtt_round_done = False
                self.next_rtt_delivered = self.rate.delivered
            elif self.probe_rtt_done_stamp:
                if self.round_start:
                    self.probe_rtt_round_done = True
                if self.probe_rtt_round_done and now > self.probe_rtt_done_stamp:
                    self.min_rtt_stamp = now
                    s.cwnd = max(s.cwnd, self.prior_cwnd)
                    if self.full_bw_reached:
                        self._reset_probe_bw(now)
                    else:
                        self._reset_startup()

    def _save_cwnd(self) -> None:
        s = self.s
        if STATE_ORDER[self.prev_state] < 3 and self.mode != PROBE_RTT:
            self.prior_cwnd = s.cwnd
        else:
            self.prior_cwnd = max(self.prior_cwnd, s.cwnd)

    def _set_pacing_rate(self, bw: float) -> None:
        """``bbr_set_pacing_rate``: gain x BtlBw less ``bbr_pacing_margin_percent``, only raised before the pipe
        is full."""
        s = self.s
        if bw > 0.0:
            pace = bw * s.mss * self.pacing_gain * (1.0 - PACING_MARGIN)
            if self.full_bw_reached or pace > s.pacing_rate:
                s.pacing_rate = pace

    def target_cwnd(self, bw: float) -> int:
        """``bbr_set_cwnd``'s target: ``bbr_bdp`` at the cwnd gain, plus ``bbr_ack_aggregation_cwnd``, through
        ``bbr_quantization_budget`` (3 x ``bbr_tso_segs_goal`` at the current pacing rate, rounded up to even,
        +2 in the 5/4 phase).  Once the pipe is full the cwnd moves to it by the ACKed segments."""
        return self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd())

    def _set_cwnd(self, acked: int, losses: int, bw: float) -> None:
        s = self.s
        if acked:
            # bbr_set_cwnd_to_recover_or_restore
            cwnd = s.cwnd
            if losses:
                cwnd = max(cwnd - losses, 1)
            state = STATE_ORDER[s.state]
            prev = STATE_ORDER[self.prev_state]
            if state == 3 and prev != 3:
                self.packet_conservation = True
                self.next_rtt_delivered = self.rate.delivered
                cwnd = s.in_flight + acked
            elif prev >= 3 and state < 3:
                cwnd = max(cwnd, self.prior_cwnd)
                self.packet_conservation = False
            self.prev_state = s.state
            if self.packet_conservation:
                cwnd = max(cwnd, s.in_flight + acked)
            else:
                target = self.target_cwnd(bw)
                if self.full_bw_reached:
                    cwnd = min(cwnd + acked, target)
                elif cwnd < target or self.rate.delivered < INIT_CWND:
                    cwnd += acked
                cwnd = max(cwnd, CWND_MIN_TARGET)
            s.cwnd = cwnd
        if self.mode == PROBE_RTT and s.cwnd > CWND_MIN_TARGET:
            s.cwnd = CWND_MIN_TARGET
