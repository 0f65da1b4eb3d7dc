"""Leaving the Loss state after a retransmission timeout: undo and F-RTO (RFC 5682), as Linux.

What a timeout sets up (``tcp_enter_loss`` / ``tcp_init_undo``, net/ipv4/tcp_input.c): when the flow was not
already in a loss episode, the window before it (``prior_cwnd``) and ``tcp_current_ssthresh``
(``prior_ssthresh``: the threshold, or 3/4 of cwnd if that is larger, in Open), the undo marker, and
``tp->frto`` (sysctl tcp_frto = 2, on by default).  ``retrans_stamp`` is the first retransmission's time.

What each ACK in Loss does (``tcp_process_loss``):

* ``tcp_try_undo_loss`` when the ACK advances snd_una and the timeout proves spurious by the timestamp
  echo: ``tcp_packet_delayed`` -- the echoed TSval is older than the first retransmission, so the
  original was delivered (Eifel detection, RFC 3522).
* F-RTO: a spurious timeout is also one after which never-retransmitted data below ``high_seq`` is
  acknowledged (step 3b, FLAG_ORIG_SACK_ACKED); SACKed new data or a duplicate ACK after new data was
  sent means the loss was real (step 3a); the first ACK that advances snd_una before that sends new data
  instead of retransmitting (step 2b, REXMIT_NEW) when there is new data the peer's window allows.
* The undo (``tcp_undo_cwnd_reduction(sk, true)``): no segment stays marked lost, cwnd becomes the
  congestion control's ``undo_cwnd`` (Reno/CUBIC: ``max(cwnd, prior_cwnd)``; BBR: the current cwnd,
  and its full-pipe test starts over), ssthresh ``max(ssthresh, prior_ssthresh)`` (in slow start that is
  "infinite" again: slow start resumes), the back-off is cleared and the state is Open.
* When snd_una reaches ``high_seq`` the episode is over (``tcp_try_undo_recovery``; Open).

Not modelled: D-SACK undo (``undo_retrans`` counted down by D-SACKs), RACK's marking at a timeout
(``tcp_timeout_mark_lost`` spares recently sent skbs; here every unSACKed one is marked).
"""
from __future__ import annotations

from .defaults import FRTO

# congestion states (tcp_ca_state) this module moves between; the sender's too
OPEN = "open"
LOSS = "loss"


def enter_loss(s, now: float) -> None:
    """``tcp_enter_loss``'s undo state, before the threshold is lowered: ``s`` is the TcpSender."""
    recovered = s.snd_una >= s.high_seq
    if s.state == OPEN or recovered or (s.state == LOSS and not s.backoff):
        cwnd = s.cwnd
        # tcp_current_ssthresh: in Open, max(ssthresh, 3/4 cwnd); in a reduction, ssthresh
        if s.state == OPEN:
            th = (cwnd >> 1) + (cwnd >> 2)
            s.prior_ssthresh = s.ssthresh if s.ssthresh > th else th
        else:
            s.prior_ssthresh = s.ssthresh
        s.prior_cwnd = cwnd
        s.undo_marker = s.snd_una       # tcp_init_undo
    s.loss_at = now
    if s.state != LOSS or recovered:
        s.retrans_stamp = now           # the head's retransmission follows at once
    # tp->frto: when the flow was Open (new_recovery) or on a repeated timeout (icsk_retransmits > 0)
    s.frto = FRTO and (s.state == OPEN or s.backoff > 0)


def process_loss(s, advanced: bool, ts_ecr: float, orig_tx: float, dupack: bool, sacked: bool) -> bool:
    """``tcp_process_loss`` for one ACK while in Loss; True when the timeout was undone (state Open).

    ``advanced``: snd_una moved; ``ts_ecr``: the ACK's echoed timestamp (0 without timestamps);
    ``orig_tx``: when the oldest never-retransmitted skb this ACK acknowledged was sent (-1: none); one
    sent before the latest timeout lies below ``high_seq`` (FLAG_ORIG_SACK_ACKED, cumulative ACKs only);
    ``dupack``: a duplicate ACK; ``sacked``: it SACKed new data (FLAG_DATA_SACKED)."""
    recovered = s.snd_una >= s.high_seq
    orig_acked = 0.0 <= orig_tx < s.loss_at
    if advanced and try_undo_loss(s, packet_delayed(s, ts_ecr)):
        return True
    if s.frto:
        if orig_acked and try_undo_loss(s, True):      # step 3b: the timeout was spurious
            return True
        if s.snd_nxt > s.high_seq:
            if sacked or dupack:
                s.frto = False                          # step 3a: the loss was real
        elif advanced and not recovered:
            s.high_seq = s.snd_nxt
            if (s.wq.ends or s.write_end > s.snd_nxt) and s.snd_una + s.snd_wnd > s.snd_nxt:
                s.frto_new = True                       # step 2b: new data on this ACK, not retransmissions
                return False
            s.frto = False
    return False


def packet_delayed(s, ts_ecr: float) -> bool:
    """``tcp_packet_delayed``: the ACK echoes a TSval older than the first retransmission."""
    return bool(s.timestamps and s.retrans_stamp and 0.0 < ts_ecr < s.retrans_stamp)


def try_undo_loss(s, undo: bool) -> bool:
    """``tcp_try_undo_loss``: revert the timeout's window reduction if ``undo`` and an undo is pending."""
    if not (undo and s.undo_marker is not None):
        return False
    s.q.unmark_lost()
    cwnd = s.cc.undo_cwnd()
    s.cwnd = cwnd if cwnd > 1 else 1
    if s.prior_ssthresh > s.ssthresh:
        s.ssthresh = s.prior_ssthresh
    s.undo_marker = None
    s.loss_undos += 1
    s.backoff = 0
    s.frto = False
    s.state = OPEN
    return True
