"""Undo and F-RTO after a retransmission timeout (ovssim/tcp/loss.py), as Linux's tcp_process_loss.

A stall of the forward path (every segment held, none lost, longer than the RTO) makes a timeout that
is spurious: the timestamp echo (``tcp_packet_delayed``) or, without timestamps, F-RTO's ACK of
never-retransmitted data (RFC 5682 step 3b) shows it, and Linux reverts the window.  A black hole
(segments really dropped) must not be undone, and F-RTO sends new data on the first ACK after the
timeout (step 2b) before it falls back to retransmitting.
"""
from __future__ import annotations

from ovssim.sched import call_at
from ovssim.tcp import connect
from ovssim.tcp.defaults import INFINITE_SSTHRESH


class Stall:
    """Holds every packet put in ``[start, until)`` and releases them in order at ``until`` (no loss)."""

    def __init__(self, env, out, start: float, until: float):
        self.env, self.out, self.start, self.until = env, out, start, until

    def put(self, pkt):
        if self.start <= self.env.now < self.until:
            call_at(self.env, self.until, self.out.put, pkt)
        else:
            self.out.put(pkt)


class Tap:
    """Logs ``(time, seq, payload)`` of each data segment, then passes it on."""

    def __init__(self, env, out, log):
        self.env, self.out, self.log = env, out, log

    def put(self, pkt):
        if pkt.payload:
            self.log.append((self.env.now, pkt.seq, pkt.payload))
        self.out.put(pkt)


def _stalled_transfer(make_path, timestamps: bool, stall=(0.05, 0.65)):
    p = make_path(rate=100e6, delay=0.001)
    p.a.out = Stall(p.env, p.a.out, *stall)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic", timestamps=timestamps)
    s = c.sender
    before = {}
    call_at(p.env, stall[0] - 1e-9, lambda _: before.update(cwnd=s.cwnd, ssthresh=s.ssthresh))
    c.write(20_000_000)
    p.env.run(until=stall[1] + 0.2)
    return s, before


def test_spurious_timeout_undone_by_the_timestamp_echo(make_path):
    s, before = _stalled_transfer(make_path, timestamps=True)
    assert s.timeouts >= 1
    assert s.loss_undos == 1
    # only the head was retransmitted, once per timeout (not every segment the timeout marked lost)
    assert s.retransmits == s.timeouts
    assert s.state == "open" and s.lost_out == 0
    # the window is back where it was (the threshold at least tcp_current_ssthresh's)
    assert s.ssthresh >= before["ssthresh"] and s.cwnd >= before["cwnd"]


def test_undo_restores_the_window_and_threshold_of_the_timeout(make_path):
    """tcp_undo_cwnd_reduction: cwnd = max(cwnd, prior_cwnd); ssthresh = max(ssthresh, prior_ssthresh),
    prior_ssthresh being tcp_current_ssthresh at the timeout (in Open: max(ssthresh, 3/4 cwnd))."""
    p = make_path(rate=100e6, delay=0.001)
    p.a.out = Stall(p.env, p.a.out, 0.003, 0.6)
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic")
    s = c.sender
    at = []
    orig = s._on_timeout

    def on_timeout(now):
        at.append((s.cwnd, s.ssthresh, s.state))
        orig(now)
    s._on_timeout = on_timeout
    c.write(20_000_000)
    p.env.run(until=0.8)
    assert s.timeouts == 1 and s.loss_undos == 1
    cwnd0, ssthresh0, state0 = at[0]
    assert state0 == "open"
    (_, cwnd_rto, ssthresh_rto), (_, cwnd, ssthresh) = s.cwnd_log[:2]
    assert cwnd_rto == 1 and ssthresh_rto < cwnd0          # the timeout cut the window ...
    assert cwnd == cwnd0                                    # ... the undo gives it back
    assert ssthresh == min(max(ssthresh0, cwnd0 * 3 // 4), INFINITE_SSTHRESH)


def test_spurious_timeout_undone_by_frto_without_timestamps(make_path):
    s, before = _stalled_transfer(make_path, timestamps=False)
    assert s.timeouts >= 1
    assert s.loss_undos == 1
    assert s.ssthresh >= before["ssthresh"] and s.cwnd >= before["cwnd"]


def test_real_loss_is_not_undone_and_frto_sends_new_data_first(make_path):
    log = []
    # 32 data frames in a row lost: more than SACK recovery repairs before the RTO (with 28 CUBIC's slow
    # start, whose HyStart rounds count from the first ACK, ends where recovery needs no timeout)
    p = make_path(rate=100e6, delay=0.001, fwd_pattern=set(range(40, 72)))
    tap = Tap(p.env, p.a.out, log)
    p.a.out = tap
    c, _ = connect(p.env, p.a, p.b, 5001, cc="cubic")
    s = c.sender
    seen = []
    orig = s._on_timeout

    def on_timeout(now):
        seen.append((now, s.snd_una, s.snd_nxt))
        orig(now)
    s._on_timeout = on_timeout
    c.write(3_000_000)
    p.env.run(until=20.0)
    assert s.snd_una == 3_000_000
    assert s.timeouts >= 1 and s.loss_undos == 0
    # after the last timeout: the head's retransmission, then (its ACK advancing snd_una) new data above
    # high_seq (step 2b), and only then the next retransmission below it
    t, una, high = seen[-1]
    after = [(seq, n) for ts, seq, n in log if ts >= t]
    assert after[0][0] == una
    assert after[1][0] >= high and after[2][0] >= high
    assert any(seq < high for seq, _ in after[3:])
