"""CUBIC congestion control (RFC 9438), as Linux ``net/ipv4/tcp_cubic.c``.

Window growth follows ``W(t) = C (t - K)^3 + W_max`` with ``C = 0.4``
(``bic_scale = 41``) and multiplicative decrease ``beta = 717/1024 ~ 0.7``;
``t`` is measured from the start of the congestion-avoidance epoch plus the
minimum RTT, as the kernel does.  Fast convergence (``W_max`` reduced to
``cwnd (1 + beta) / 2`` when a loss comes below the previous maximum), the
TCP-friendly region (a Reno estimate with additive increase
``3 (1 - beta) / (1 + beta)`` per RTT) and the growth cap of one segment per
two delivered are kept.  HyStart (ACK train and delay increase, Linux's
defaults: low window 16, ACK spacing 2 ms, 8 samples, delay threshold
``clamp(min_rtt / 8, 4 ms, 16 ms)``) ends slow start before the first loss.

HyStart as Linux 6.18 runs it (``hystart_update``, ``hystart_ack_delay``): it runs on
each ACK's RTT sample in slow start (``cubictcp_acked``), a new round starts there once
``snd_una`` passes the round's end -- whatever the cwnd: only the detection below waits for
``hystart_low_window`` (16), so the rounds are counted from the first ACK, not from the first
ACK at cwnd 16 -- and the ACK train fires only past ``delay_min`` plus
``hystart_ack_delay`` -- ``min(1 ms, 4 x sk_gso_max_size / sk_pacing_rate)``, the time
a GSO skb spends in GRO and the qdisc -- halved when the socket is not paced.  Its delay
test needs 8 samples in a round: one per ACK, so with GRO'd 64 KB skbs (one ACK per skb)
slow start runs until a round holds 8 skbs.

Where the rounds start decides which round first holds 9 ACKs, so the exit cwnd.  Measured on
this host (kernel 6.18, ``iperf3 -C cubic`` behind a 10 Mbit/s HTB on a bridge port, trace event
``tcp:tcp_probe`` on every ACK, nstat ``TcpExtTCPHystartDelayCwnd``): replaying HyStart on the
ACKs gives Linux's exits (cwnd 1004 and 1424 in two runs) only when the round's reset comes
before the low-window test -- the first data ACK (cwnd 11) starts a round; with the reset
skipped below cwnd 16, as 6.x kernels before did, the same ACKs would have ended slow start at
779 and 1154.
"""
from __future__ import annotations

from .congestion import CongestionControl

BETA = 717 / 1024
C = 0.4
BETA_SCALE = 8 * (1024 + 717) // 3 // (1024 - 717)   # 15, Reno-estimate increment scale
HYSTART_LOW_WINDOW = 16
HYSTART_ACK_DELTA = 0.002
HYSTART_ACK_DELAY_MAX = 0.001          # hystart_ack_delay's cap, USEC_PER_MSEC
HYSTART_MIN_SAMPLES = 8
HYSTART_DELAY_MIN = 0.004
HYSTART_DELAY_MAX = 0.016


class Cubic(CongestionControl):
    name = "cubic"

    def __init__(self, *, fast_convergence: bool = True, tcp_friendliness: bool = True,
                 hystart: bool = True):
        super().__init__()
        self.fast_convergence = fast_convergence
        self.tcp_friendliness = tcp_friendliness
        self.hystart = hystart
        self.delay_min = 0.0
        self.hystart_exits = 0
        self._reset()
        self._hystart_round(0.0, 0)

    def attach(self, sender) -> None:
        """``cubictcp_init``, run when the module takes the socket -- at connect, or later on an established
        connection (``tcp_reinit_congestion_control``, setsockopt TCP_CONGESTION): the private state zeroed
        (its minimum RTT too) and HyStart's first round ending at the current ``snd_nxt``."""
        super().attach(sender)
        self.delay_min = 0.0
        self._reset()
        self._hystart_round(sender.env._now, sender.snd_nxt)

    def _reset(self) -> None:
        """``bictcp_reset``."""
        self.cnt = 0
        self.last_cwnd = 0
        self.last_time = 0.0
        self.last_max_cwnd = 0.0
        self.epoch_start = None
        self.origin = 0.0
        self.k = 0.0
        self.ack_cnt = 0
        self.tcp_cwnd = 0
        self.found = False

    def _hystart_round(self, now: float, snd_nxt: int) -> None:
        """``bictcp_hystart_reset``: a new round of slow start begins."""
        self.round_start = now
        self.last_ack = now
        self.end_seq = snd_nxt
        self.curr_rtt = float("inf")
        self.sample_cnt = 0

    # -- hooks -------------------------------------------------------------------
    def ssthresh(self) -> int:
        s = self.s
        self.epoch_start = None
        self.last_cwnd = 0
        cwnd = s.cwnd
        if cwnd < self.last_max_cwnd and self.fast_convergence:
            self.last_max_cwnd = cwnd * (1024 + 717) / 2048
        else:
            self.last_max_cwnd = cwnd
        th = (cwnd * 717) >> 10
        return th if th > 2 else 2

    def on_loss_timeout(self) -> None:
        self._reset()
        self._hystart_round(self.s.env._now, self.s.snd_nxt)

    def on_rtt(self, rtt: float, now: float) -> None:
        if self.delay_min == 0.0 or rtt < self.delay_min:
            self.delay_min = rtt
        s = self.s
        if self.hystart and not self.found and s.cwnd < s.ssthresh:
            self._hystart_update(rtt, now)

    def _ack_delay(self) -> float:
        """``hystart_ack_delay``: ``min(1 ms, 4 x sk_gso_max_size / sk_pacing_rate)``, 0 before a rate."""
        s = self.s
        rate = s.pacing_rate
        if not rate:
            return 0.0
        d = 4 * s.gso_max_bytes / rate
        return d if d < HYSTART_ACK_DELAY_MAX else HYSTART_ACK_DELAY_MAX

    def _hystart_update(self, delay: float, now: float) -> None:
        s = self.s
        if s.snd_una > self.end_seq:              # the round ended: a new one (bictcp_hystart_reset)
            self._hystart_round(now, s.snd_nxt)
        if s.cwnd < HYSTART_LOW_WINDOW:           # hystart triggers when cwnd is larger than some threshold
            return
        # ACK train: ACKs keep arriving closely spaced for longer than half the min RTT
        # (plus the GSO/GRO cushion; the whole of it when the socket is paced).
        if now - self.last_ack <= HYSTART_ACK_DELTA:
            self.last_ack = now
            threshold = self.delay_min + self._ack_delay()
            if not (s.pacing or s.pacing_fq):         # sk_pacing_status == SK_PACING_NONE
                threshold /= 2
            if now - self.round_start > threshold:
                self._exit_slow_start()
                return
        # Delay increase: the round's minimum RTT grew by more than the threshold.
        if self.curr_rtt > delay:
            self.curr_rtt = delay
        if self.sample_cnt < HYSTART_MIN_SAMPLES:
            self.sample_cnt += 1
        else:
            thresh = self.delay_min / 8
            thresh = HYSTART_DELAY_MIN if thresh < HYSTART_DELAY_MIN else (
                HYSTART_DELAY_MAX if thresh > HYSTART_DELAY_MAX else thresh)
            if self.curr_rtt > self.delay_min + thresh:
                self._exit_slow_start()

    def _exit_slow_start(self) -> None:
        self.found = True
        self.hystart_exits += 1
        self.s.ssthresh = self.s.cwnd

    def cong_avoid(self, acked: int, now: float) -> None:
        s = self.s
        if s.cwnd < s.ssthresh:
            acked = self.slow_start(acked)
            if not acked:
                return
        if s.cwnd == self.last_cwnd and now - self.last_time <= 1 / 32:
            self.ack_cnt += acked        # _update's early exit, inline (most ACKs)
        else:
            self._update(acked, now)
        # additive_increase (tcp_cong_avoid_ai), inline
        w = self.cnt
        if s.cwnd_cnt >= w:
            s.cwnd_cnt = 0
            s.cwnd += 1
        s.cwnd_cnt += acked
        if s.cwnd_cnt >= w:
            delta = s.cwnd_cnt // w
            s.cwnd_cnt -= delta * w
            s.cwnd += delta

    def _update(self, acked: int, now: float) -> None:
        """``bictcp_update``: segments to deliver per one-segment increase (``ca->cnt``)."""
        cwnd = self.s.cwnd
        self.ack_cnt += acked
        # the kernel recomputes at most every HZ/32 while cwnd is unchanged
        if cwnd == self.last_cwnd and now - self.last_time <= 1 / 32:
            return
        self.last_cwnd = cwnd
        self.last_time = now
        if self.epoch_start is None:
            self.epoch_start = now
            self.ack_cnt = acked
            self.tcp_cwnd = cwnd
            if self.last_max_cwnd <= cwnd:
                self.k = 0.0
                self.origin = float(cwnd)
            else:
                self.k = ((self.last_max_cwnd - cwnd) / C) ** (1.0 / 3.0)
                self.origin = self.last_max_cwnd
        t = now - self.epoch_start + self.delay_min
        d = t - self.k
        target = self.origin + C * d * d * d
        if target > cwnd:
            cnt = int(cwnd // (target - cwnd))
        else:
            cnt = 100 * cwnd
        if self.last_max_cwnd == 0 and cnt > 20:
            cnt = 20
        if self.tcp_friendliness:
            delta = (cwnd * BETA_SCALE) >> 3
            if delta:
                while self.ack_cnt > delta:
                    self.ack_cnt -= delta
                    self.tcp_cwnd += 1
            if self.tcp_cwnd > cwnd:
                max_cnt = cwnd // (self.tcp_cwnd - cwnd)
                if cnt > max_cnt:
                    cnt = max_cnt
        self.cnt = cnt if cnt > 2 else 2
