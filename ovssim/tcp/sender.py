"""The sending half of a TCP connection, as Linux sends.

What it models (net/ipv4/tcp_output.c, tcp_input.c, tcp_timer.c):

* Segmentation: full segments of ``mss`` payload bytes; a smaller tail is
  held by Nagle's algorithm (Linux's Minshall variant, ``tcp_nagle_check``:
  a small segment waits while an earlier small segment is unacknowledged)
  unless ``nodelay`` (``TCP_NODELAY``).  A segment is sent only when it fits
  both the congestion window (segments in flight, ``tcp_packets_in_flight``)
  and the peer's advertised window (``tcp_snd_wnd_test``).
* The application's writes and the send buffer: the bytes written but not yet
  acknowledged never exceed ``sndbuf``; a bulk writer keeps the buffer full,
  and each segment's share of the ``send()`` calls (``write_size`` bytes
  each) costs ``call_cost`` on the endpoint's CPU.
* skbs are built at write time (write_queue.py: ``tcp_sendmsg_locked``'s size_goal and
  tail append, ``tcp_push`` with autocorking): a bulk writer's writes enter the write
  queue one at a time when the sender could send, and pile up in the unsent tail while
  it waits (one write per write's CPU time, :meth:`_writer_catch_up`).  Nagle holds a
  tail's last part-segment (``tcp_mss_split_point``); ``tcp_grow_skb`` refills a head
  shorter than the window allows from the next unsent skb (Linux >= 6.10, "tcp: try to send
  bigger TSO packets", April 2024; with an older ``kernel`` the remainder of a split skb goes as
  a small skb of its own, and so does a cut that TCP Small Queues held back: see :meth:`_tsq_full`).
* Loss detection and recovery as Linux does it: with SACK (RFC 2018) a
  scoreboard marks a segment lost once ``reordering`` segments above it are
  SACKed (RFC 6675 ``IsLost``; ``reordering`` starts at 3 and grows to the
  degree of reordering seen -- an original transmission SACKed or ACKed below
  already-SACKed data -- up to ``tcp_max_reordering`` = 300, as Linux's
  ``tcp_check_sack_reordering`` before RACK); without SACK, duplicate ACKs are counted as
  Linux's "reno SACKs" and the head is retransmitted on the third and again on
  each partial ACK (NewReno, RFC 6582).  During recovery the window follows
  Proportional Rate Reduction (RFC 6937, ``tcp_cwnd_reduction``) and ends at
  ``ssthresh`` when the recovery point is acknowledged.
* The retransmission timer (RFC 6298; one pending timer re-armed lazily):
  on expiry ``ssthresh`` is reduced, ``cwnd = 1``, every unSACKed segment is
  marked lost and retransmitted in slow start, and the timeout doubles.  A
  timeout the timestamp echo or F-RTO (RFC 5682) shows spurious is undone
  (``tcp_process_loss``, loss.py).
* RTT samples from the oldest newly acknowledged never-retransmitted segment,
  else from the timestamp echo (RFC 7323), as ``tcp_clean_rtx_queue`` does.
* Spurious fast retransmissions found by the timestamp echo (Eifel, RFC 3522)
  raise ``reordering`` and, when every retransmission of a recovery was
  spurious, undo its window reduction (``tcp_try_undo_recovery``).

* Run to completion: on an endpoint that shares the host's kernel
  (``Endpoint.inline_tx``: a container, bare metal) each segment's softirq
  work -- veth, bridge, the peer's receive -- is done by the sending task
  before it sends the next (``dev_queue_xmit`` then ``local_bh_enable``), so
  a new segment waits until the flow's core is free; a CPU-bound sender keeps
  its excess in the socket, not in a per-CPU backlog.

* GSO skbs (tcp_output.c ``tcp_write_xmit``): new data leaves as the write queue's skbs, cut to
  at most ``tcp_tso_segs`` segments -- ``tcp_tso_autosize``: the pacing rate's bytes
  per ``2^-sk_pacing_shift`` s (~1 ms), plus ``gso_max_size >> (min_rtt_us >>
  tcp_tso_rtt_log)`` (a full 64 KB skb below 512 us of RTT), at most
  ``gso_max_size`` less ``MAX_TCP_HEADER + 1``, at least ``tcp_min_tso_segs`` --
  and to the congestion window's quota and the peer's window as
  ``tcp_mss_split_point`` does; the quota is ``tcp_cwnd_test``'s, at most half the cwnd, so a
  window leaves as at least two skbs (behind a 20 Mbit/s HTB this host's kernel sends a cwnd of
  18-20 as two 9-segment skbs).  The pacing rate is ``tcp_update_pacing_rate``'s
  (200 % of cwnd/srtt in slow start, 120 % after), updated on every ACK unless the
  congestion control sets it itself (BBR).
  The retransmit queue keeps them as skbs with segment counters (rtx_queue.py), cut only
  where SACK, loss marking or a retransmission needs it; retransmissions go one segment per skb.  ``gso_segs = 1`` (``gso = False``) sends MSS frames.
* TCP Small Queues (``tcp_small_queue_check``): with ``tsq`` on, the bytes of
  this socket's skbs not yet freed or orphaned below it are bounded by
  ``max(2 * truesize, pacing rate >> 10)``, at most ``tcp_limit_output_bytes``;
  above that the sender waits until the device frees one (``tcp_tsq_handler``).
  The check comes last, on the skb about to go (after ``tcp_tso_should_defer`` and the cut
  to the quota), as in ``tcp_write_xmit``.  The first element that frees or orphans the skb
  calls :meth:`tsq_free`.  Behind a qdisc on the sender's own device this keeps a window to
  two skbs: the room a grown cwnd opens waits while two skbs are queued and joins the next
  ACK's skb (HTB 20 Mbit/s, this host's kernel: two 9-segment skbs below the socket, ss
  sk_wmem_alloc 27728).

  A part-sized skb is held back for the next ACK as ``tcp_tso_should_defer`` does.
* Window validation (``tcp_cwnd_validate``, ``tcp_is_cwnd_limited``; Linux >= 6.1, commit
  "tcp: fix tcp_cwnd_validate() to not forget is_cwnd_limited"): after each push that sent or
  stopped on the congestion window, a window found limited stays limited until snd_una passes the
  snd_nxt of that moment, and ``max_packets_out`` is the most segments out in the current window;
  the congestion control grows cwnd on an ACK while the window is limited, or in slow start while
  cwnd < 2 x ``max_packets_out``.  So a flow that TCP Small Queues or pacing hold below its cwnd part
  of the time still grows it (this host, TBF 100 Mbit/s on the sender's own veth: mean RTT under load
  9.7 ms simulated against 9.3 measured, 3.3 ms without the rule).
* Pacing (``tcp_update_skb_after_send``, ``tcp_pacing_check``) when the congestion control
  asks for it (BBR) or an fq qdisc on the host paces the socket (``pacing_fq``, SK_PACING_FQ):
  each segment's earliest departure is the previous one's plus its length at
  ``pacing_rate``; without fq the socket holds segments until then, with fq it stamps them
  (``Packet.tstamp``) and hands them over up to ~1 ms ahead.  The first 10 segments leave
  unpaced.  Send-buffer growth (``sndbuf_auto``, see buffers.py).

* The socket lock: on a run-to-completion endpoint a bulk writer owns its socket while its core carries what
  it sent, and with ``write_lock`` for each ``write()``'s CPU time (:meth:`sendmsg_end`); segments arriving
  meanwhile wait in the socket's backlog until ``release_sock`` (socket.py).

Not modelled: MSG_MORE / TCP_CORK, ``sk_flush_backlog`` inside a write (every 16 new skbs),
tcp_mtu_probe's merging, the three-way handshake and FIN, RACK for original transmissions and TLP
(Linux's default loss detection since 4.18: time-based, with a reordering window of min_rtt/4; RACK's
detection of lost retransmissions is modelled, :meth:`_rack_lost_retrans`), D-SACK, the persist timer,
slow start after idle.
"""
from __future__ import annotations

from ..cpu.keys import conn_key
from ..packet import Packet, free_charge, tcp_frame_size
from ..sched import call_at
from .defaults import (BULK_WRITE_SIZE, DUPTHRESH, INFINITE_SSTHRESH, INIT_CWND, MAX_REORDERING, MAX_TCP_HEADER,
                       MIN_TSO_SEGS, PACING_CA_RATIO, PACING_SHIFT, PACING_SS_RATIO,
                       TCP_LIMIT_OUTPUT_BYTES, TSO_DEFER_RECENT, TSO_WIN_DIVISOR)
from .buffers import tcp_skb_head_truesize, tcp_skb_truesize
from . import loss
from .loss import LOSS, OPEN
from .rtt import RttEstimator
from .rtx_queue import EVER_RETRANS, SACKED, RtxQueue
from .tso import tso_autosize
from .write_queue import WriteQueue, xmit_size_goal

# congestion states (tcp_ca_state): OPEN and LOSS from loss.py
RECOVERY = "recovery"

INF = float("inf")
RTT_KEEP = 1 << 17         # RTT samples kept raw before they fold into bounded statistics (metrics.DelayStats)


class TcpSender:
    # The writer owns the socket for each bulk write()'s CPU time (sendmsg_end; ACKs arriving meanwhile wait for
    # release_sock).  Off by default: with this repository's profiles it moves no tcp_window value (their write
    # costs are 0) and it moves the rows of the profiles whose app.send_per_call / send_per_byte were fitted
    # without it (batching: 44 of 108 values, ovs-4-veth-txoff quiet throughput -3.3 % -> +41.6 %; chains 10,
    # interim 5); set True (class-wide) to use it, and refit those costs with it.
    write_lock = False

    def __init__(self, sock, *, mss: int, cc, init_cwnd: int = INIT_CWND, sndbuf: int,
                 nodelay: bool = False, sack: bool = True, timestamps: bool = True,
                 rtt: RttEstimator | None = None, app_cost: float = 0.0, call_cost: float = 0.0,
                 byte_cost: float = 0.0, cpu=None, affinity: tuple[int, ...] | None = None,
                 keep_samples: bool = True, gso: bool = True, gso_max_size: int = 65536,
                 gso_max_segs: int = 65535, tsq: bool = False,
                 limit_output_bytes: int = TCP_LIMIT_OUTPUT_BYTES, kernel: tuple[int, int] | None = None):
        self.sock = sock
        self.env = sock.env
        self.mss = mss
        self.timestamps = timestamps
        self.frame_full = tcp_frame_size(mss, timestamps)
        self.cc = cc
        # pacing (tcp_update_skb_after_send, tcp_pacing_check): sk_pacing_rate in bytes/s; 0 = not paced
        self.pacing_rate = 0.0
        self.pacing = False           # sk_pacing_status != SK_PACING_NONE (BBR asks for it)
        self.pacing_fq = False        # SK_PACING_FQ: an fq qdisc on this host holds packets to their tstamp
        self._wstamp = 0.0            # tp->tcp_wstamp_ns: earliest departure of the next segment
        self._pace_at = INF           # a pending pacing-timer push
        self.cwnd = init_cwnd
        self.cwnd_cnt = 0
        self.ssthresh = INFINITE_SSTHRESH
        self.sndbuf = max(int(sndbuf), 1)
        # Linux's send-buffer growth (buffers.SendBuffer) when the application set no SO_SNDBUF
        self.sndbuf_auto = None
        self._sndbuf_cwnd = 0         # the cwnd the buffer was last grown for
        self.nodelay = nodelay
        self.sack = sack
        self.rtt = rtt or RttEstimator()
        self.app_cost = app_cost      # CPU per segment the application hands to TCP
        self.call_cost = call_cost    # CPU per send() call of ``write_size`` bytes
        self.byte_cost = byte_cost    # CPU per byte copied in from user space (tcp_sendmsg_locked)
        self.cpu = cpu
        # the sending task's core: its connection's, where the softirq work of its segments runs too
        self.cpu_key = conn_key(sock.flow) if cpu is None else cpu.pin(conn_key(sock.flow), affinity)
        # on a host that schedules threads, the sending process is one (ovssim.cpu), first on that core
        self.app_thread = cpu.app_thread("tcp-send", self.cpu_key, affinity=affinity) if cpu is not None else None
        # run to completion (an inline_tx endpoint): the flow's core, as (its pool's free times, index,
        # the senders that take turns on it where the host schedules threads, else None)
        self._rtc = None
        self._rtc_at = INF                      # when a push deferred by run to completion resumes
        self._rtc_since = INF                   # since when it has waited for its core (turns)
        if cpu is not None and getattr(sock.endpoint, "inline_tx", False):
            self._rtc_join(cpu, self.cpu_key % cpu.cores)
        # sequence space (bytes, starting at 0)
        self.snd_una = 0
        self.snd_nxt = 0
        self.write_end = 0          # bytes the application has written
        self.snd_wnd = 65535        # peer's advertised window, set at connect
        self.snd_sml = 0            # end of the last small segment sent (Minshall)
        self.bulk_until: float | None = None
        self.write_size = mss       # bytes per send() call (netperf -m, iperf -l)
        self.write_time = 0.0       # a bulk write()'s CPU time (see sendmsg_end)
        # the unsent skbs, built as the application writes (write_queue.py); a bulk writer's bytes
        # up to ``write_end`` enter it write by write (:meth:`_app_write`)
        self.wq = WriteQueue()
        self.max_window = 0         # tp->max_window: the largest window the peer offered
        self._goal_window = -1      # the window size_goal() was last computed for
        self._goal = mss
        self._stalled = False       # the sender waits on something other than the writer, who writes on
        self._writer_next = 0.0     # when a bulk writer's next write() is due
        # the retransmit queue and scoreboard: skbs and segment counters (rtx_queue.py)
        self.q = RtxQueue(mss, self._reordered)
        self.reordering = DUPTHRESH   # tp->reordering: grows when reordering is detected
        self.reorder_events = 0
        self.prior_ssthresh = 0
        self.undo_retrans = 0         # retransmissions of this recovery not yet shown spurious
        self.spurious_retrans = 0
        self.undos = 0
        # after a timeout (loss.py): undo state and F-RTO
        self.undo_marker = None       # tp->undo_marker (None: no undo pending)
        self.retrans_stamp = 0.0      # the loss episode's first retransmission
        self.loss_at = 0.0            # the latest timeout (data sent before it lies below high_seq)
        self.frto = False             # tp->frto
        self.frto_new = False         # this ACK sends new data, not retransmissions (REXMIT_NEW)
        self.loss_undos = 0           # timeouts undone (LINUX_MIB_TCPLOSSUNDO)
        # congestion state
        self.state = OPEN
        self.high_seq = 0
        self.prior_cwnd = 0
        self.prr_delivered = 0
        self.prr_out = 0
        self.cwnd_limited = False     # the last push stopped on the congestion window
        # tcp_cwnd_validate (Linux >= 5.19): whether the window was used, remembered for a window's worth
        # of data (until snd_una passes cwnd_usage_seq), and the most segments out in that window
        self.is_cwnd_limited = False
        self.max_packets_out = 0
        self._cwnd_usage_seq = 0
        self.backoff = 0
        # retransmission timer (lazy)
        self._rto_at = INF
        self._rto_ev = None
        self._rto_ev_t = INF
        # counters (the names of ``ss -ti`` / iperf3 where they exist)
        self.segs_out = 0
        self.data_segs_out = 0
        self.bytes_sent = 0
        self.bytes_retrans = 0
        self.retransmits = 0        # iperf3 "retransmits" = tcpi_total_retrans
        self.fast_recoveries = 0
        self.timeouts = 0
        self.lost_retrans = 0         # retransmissions found lost again by RACK (re-sent without a timeout)
        self.keep_samples = keep_samples
        # RTT samples (seconds) and when they were taken; past RTT_KEEP of them, those from ``rtt_from``
        # on fold into ``rtt_folded`` (exact moments, quantiles within 0.1 %), so memory stays bounded
        self.rtt_samples: list[float] = []
        self.rtt_times: list[float] = []
        self.rtt_from = 0.0
        self.rtt_folded = None
        self.cwnd_log: list[tuple[float, int, int]] = []
        self.on_acked = None        # callback(acked_bytes, now) for the application
        # GSO (sk_setup_caps: sk_gso_max_size = the device's gso_max_size - (MAX_TCP_HEADER + 1))
        self.gso = gso
        self.gso_max_size = gso_max_size
        self.gso_max_bytes = gso_max_size - (MAX_TCP_HEADER + 1)
        self.gso_max_segs = gso_max_segs
        self.skbs_out = 0           # skbs of new data sent (a GSO skb counts once)
        # the sending kernel's version (None: this machine's 6.18) for what changed between versions:
        # tcp_grow_skb (>= 6.10) -- before it, the remainder of a split skb leaves as a small skb of its
        # own and TCP Small Queues size their limit by it -- and an skb head's truesize (buffers.py)
        self.grow_skb = kernel is None or kernel >= (6, 10)
        # an ACK's push before the writer it wakes (tcp_data_snd_check; see push): off by default, a
        # diagnostic (validation/tcp_window/tsq_regime.py --writer-late); on, 40 of the 246 tcp_window
        # values move by at most 1.0 % and no verdict changes
        self.ack_order = False
        self.skb_head = tcp_skb_head_truesize(kernel)
        # TCP Small Queues: bytes (skb truesize) below the socket, not yet freed or orphaned
        self.tsq = tsq
        self.limit_output_bytes = limit_output_bytes
        self.wmem_queued = 0
        self.tsq_throttled = 0      # times the sender stopped on TSQ
        self._tsq_waiting = False
        self._lsndtime = -1.0       # tp->lsndtime: when data was last sent
        self.tso_deferred = 0       # pushes tcp_tso_should_defer held back
        # tp->tcp_clock_cache: tcp_write_xmit reads the clock once (tcp_mstamp_refresh) and decides every
        # skb of the loop on it; a loop the model cut where the sender's core was busy, resumed by
        # _rtc_resume, keeps the clock of its start (_clock_cont)
        self._clock = 0.0
        self._clock_cont = None
        self.set_congestion_control(cc)

    def set_congestion_control(self, cc) -> None:
        """The module's ``init`` on this socket: at connect, or ``tcp_reinit_congestion_control``
        (net/ipv4/tcp_cong.c) on the established connection, where cwnd, ssthresh and ``sk_pacing_status``
        stay (a socket BBR started stays paced).  A module that runs on every ACK
        (``tcp_congestion_ops.cong_control``: BBR) asks for pacing; ``on_send`` sees every transmission
        (its delivery-rate sampler, ``tcp_rate_skb_sent``)."""
        self.cc = cc
        self._cc_main = getattr(cc, "cong_control", None)
        self._cc_sent = getattr(cc, "on_send", None)
        self._cc_app_limited = getattr(cc, "mark_app_limited", None)
        cc.attach(self)
        if self._cc_main is not None:
            self.pacing = True

    # -- views -----------------------------------------------------------------------
    @property
    def packets_out(self) -> int:
        return self.q.packets_out

    @property
    def sacked_out(self) -> int:
        return self.q.sacked_out

    @property
    def lost_out(self) -> int:
        return self.q.lost_out

    @property
    def retrans_out(self) -> int:
        return self.q.retrans_out

    @property
    def in_flight(self) -> int:
        """``tcp_packets_in_flight``: outstanding - SACKed - lost + retransmitted."""
        q = self.q
        return q.packets_out - q.sacked_out - q.lost_out + q.retrans_out

    @property
    def bytes_acked(self) -> int:
        return self.snd_una

    def _fold_rtt(self) -> None:
        """Move the RTT samples taken from ``rtt_from`` on into ``rtt_folded`` (bounded memory)."""
        from ..metrics import DelayStats
        if self.rtt_folded is None:
            self.rtt_folded = DelayStats()
        t0 = self.rtt_from
        self.rtt_folded.values.extend(r for r, t in zip(self.rtt_samples, self.rtt_times) if t >= t0)
        self.rtt_folded.fold()
        self.rtt_samples = []
        self.rtt_times = []

    def log_cwnd(self, now: float) -> None:
        self.cwnd_log.append((now, self.cwnd, min(self.ssthresh, INFINITE_SSTHRESH)))

    # -- the application -----------------------------------------------------------------
    def write(self, nbytes: int) -> None:
        """The application writes ``nbytes`` (it is never blocked: see ``sndbuf`` for bulk): the bytes
        go into the write queue's skbs, then ``tcp_push`` sends them unless autocorking holds the tail."""
        if nbytes > 0:
            self.check_app_limited()
            self.write_end += int(nbytes)
            wq = self.wq
            wq.append(self.write_end - wq.write_seq, self.size_goal(), self.snd_nxt)
            if wq.should_autocork(self.snd_nxt, self.size_goal(), len(self.q), self.wmem_queued + 1):
                self._tsq_waiting = True         # TSQ_THROTTLED: TX completion pushes the tail
                return
            self.push()

    def bulk(self, until: float, write_size: int | None = None) -> None:
        """Keep the send buffer full (a netperf/iperf sender) until time ``until``."""
        self.bulk_until = until
        self.write_size = int(write_size) if write_size else BULK_WRITE_SIZE
        self.write_time = self.call_cost + self.byte_cost * self.write_size     # one write()'s CPU time
        self.check_app_limited()            # the first write()
        self.push()

    def check_app_limited(self) -> None:
        """``tcp_rate_check_app_limited`` (net/ipv4/tcp_rate.c), which ``tcp_sendmsg_locked`` runs at the start
        of every write, before its bytes are queued -- and nothing else does (not the ACK path): with less
        than a segment written and unsent, none of this socket's skbs below TCP (``sk_wmem_alloc`` under
        ``SKB_TRUESIZE(1)``: any skb holds more), room in cwnd and every lost segment retransmitted, the
        congestion control's rate samples are marked app-limited until what is in flight is delivered.
        So an iperf3 stream's cookie, written on the idle connection, is an app-limited sample: BBR takes
        it into its bandwidth filter only as a new maximum, and it does not start ``bbr_check_full_bw_reached``'s
        count (which skips app-limited samples)."""
        if (self._cc_app_limited is not None and self.wq.write_seq - self.snd_nxt < self.mss
                and not self.wmem_queued and self.in_flight < self.cwnd and self.lost_out <= self.retrans_out):
            self._cc_app_limited()

    def size_goal(self) -> int:
        """``tcp_xmit_size_goal``: what a write fills an skb to (write_queue.py); recomputed, as
        ``tcp_send_mss`` caches it, only when the peer's largest window changes."""
        w = self.max_window if self.max_window > self.snd_wnd else self.snd_wnd
        if w != self._goal_window:
            self._goal_window = w
            self._goal = xmit_size_goal(self.mss, self.gso_max_size if self.gso else None, self.gso_max_segs, w)
        return self._goal

    def _app_write(self, now: float) -> bool:
        """The bulk writer's next ``write()`` of ``write_size`` bytes into the write queue
        (``tcp_sendmsg_locked``); False when it has nothing left to write."""
        pending = self.write_end - self.wq.write_seq
        if pending <= 0:
            return False
        self.check_app_limited()
        self.wq.append(pending if pending < self.write_size else self.write_size, self.size_goal(), self.snd_nxt)
        wt = self.call_cost + self.byte_cost * self.write_size
        if self._writer_next < now + wt:
            self._writer_next = now + wt
        return True

    def _writer_catch_up(self, now: float) -> None:
        """The writes a bulk writer made while the sender waited (on the window, TSQ, pacing, a
        deferral, Nagle or autocorking): one per ``write()``'s CPU time (``call_cost`` + ``byte_cost`` x
        ``write_size``), all of the buffer at once without costs.  They coalesce into the unsent tail
        and new skbs of ``size_goal``, as ``tcp_sendmsg_locked`` copies into an unsent tail.  (The model
        charges the writes' CPU when their bytes are sent; this clock places skb boundaries and the spans for
        which the writer owns the socket, :meth:`sendmsg_end`.)"""
        pending = self.write_end - self.wq.write_seq
        if pending <= 0:
            return
        wt = self.call_cost + self.byte_cost * self.write_size
        if wt > 0.0:
            t = self._writer_next
            if t > now:
                return
            k = int((now - t) / wt) + 1
            if k * self.write_size < pending:
                pending = k * self.write_size
            self._writer_next = t + k * wt
        self.wq.append(pending, self.size_goal(), self.snd_nxt)

    def sendmsg_end(self, now: float) -> float | None:
        """The end of the bulk writer's ``write()`` in progress at ``now`` on its clock (:meth:`_app_write`,
        :meth:`_writer_catch_up`), else None.  ``tcp_sendmsg`` (net/ipv4/tcp.c) takes the socket lock for the
        whole call -- ``lock_sock``, ``tcp_sendmsg_locked`` copies every byte of the write (and sends what it
        may: ``tcp_push_one`` once the first skb is full, ``tcp_push`` at the end), ``release_sock`` -- so a
        segment arriving meanwhile waits in the backlog (``tcp_v4_rcv`` -> ``tcp_add_backlog``) until the
        write ends (``release_sock`` -> ``__release_sock``; see :meth:`TcpSocket._owned`).  A write lasts its
        CPU time, ``call_cost`` + ``byte_cost`` x ``write_size``; a writer with bytes left to write (room in
        the buffer) writes on, one write after another.  Zero write costs: never inside a write.  Used only with
        ``write_lock``."""
        end = self._writer_next
        if end > now:
            return end
        if self.bulk_until is None:
            return None
        pending = self.write_end - self.wq.write_seq
        if pending <= 0:
            return None
        wt = self.write_time
        if wt <= 0.0:
            return None
        # the writes still to come, back to back from the last one placed
        k = int((now - end) / wt) + 1
        if (k - 1) * self.write_size >= pending:
            return None                     # it has written everything the buffer allowed by now
        return end + k * wt

    def _stall(self, now: float) -> None:
        """The sender stops with the writer free to write on (see :meth:`_writer_catch_up`)."""
        self._writer_catch_up(now)
        self._stalled = True

    # -- sending ---------------------------------------------------------------------------
    def push(self, after_ack: bool = False, resumed: bool = False) -> None:
        """``tcp_write_xmit``: send what the windows, the buffer and Nagle allow; ``resumed``: the rest of a
        loop cut where the sender's core was busy (:meth:`_rtc_resume`), on that loop's clock.

        ``after_ack``: the push of an incoming ACK, ``tcp_data_snd_check`` (tcp_input.c), which runs
        ``tcp_push_pending_frames`` before ``tcp_check_space``: the skbs are built from the write queue
        as the writer left it, and only then is a writer blocked on the buffer woken (and the buffer
        grown, ``tcp_new_space``); its write's ``tcp_push`` is a second push.  So a head that is the
        write queue's last skb has no next skb for ``tcp_grow_skb`` and leaves shorter than the quota."""
        now = self.env._now
        if after_ack and self.ack_order and self.bulk_until is not None and now < self.bulk_until:
            self._xmit(now, False)
            # then the woken writer's tcp_sendmsg -> tcp_push
        self._wake_writer(now)
        self._xmit(now, True, resumed)

    def _wake_writer(self, now: float) -> None:
        """``tcp_check_space`` -> ``tcp_new_space``: grow the buffer, wake a writer blocked on it."""
        if self.bulk_until is not None:
            # A writer blocked on a full buffer (sk_stream_wait_memory) is woken by
            # sk_stream_write_space only once the queued bytes are down to 2/3 of the buffer
            # (sk_stream_wspace >= sk_stream_min_wspace = queued / 2), then fills it again:
            # a buffer-limited flow's written-but-unacknowledged bytes swing between 2/3 and all
            # of ``sndbuf`` (measured here: sk_wmem_queued 2.9-4.1 MB under tcp_wmem[2] = 4 MB).
            if now >= self.bulk_until:
                self.bulk_until = None
            else:
                if self.sndbuf_auto is not None and self.cwnd > self._sndbuf_cwnd:
                    self._grow_sndbuf()
                full = self.snd_una + self.sndbuf
                if full > self.write_end and 3 * (self.write_end - self.snd_una) <= 2 * self.sndbuf:
                    self.write_end = self._sendmsg_stop(full)

    def _sendmsg_stop(self, full: int) -> int:
        """Where a bulk writer allowed up to ``full`` (``snd_una`` + the buffer's payload) stops writing:
        ``tcp_sendmsg_locked`` (net/ipv4/tcp.c) tests the buffer (``sk_stream_memory_free``: sk_wmem_queued <
        sk_sndbuf) only when it needs a new skb (``new_segment``); an skb once allocated -- and the unsent tail
        a blocked or new write() finds, which it tops up to the current ``size_goal`` -- is filled to
        ``size_goal`` first.  So the writer stops at the end of the skb that reaches the limit, up to one
        ``size_goal`` past it, and the write queue holds whole ``size_goal`` skbs (ss on this host: skmem w
        above tb in 12 % of the samples, by at most 66672 B, one 64 KB skb)."""
        wq = self.wq
        goal = self.size_goal()
        end = wq.write_seq
        if len(wq):
            tail = wq.tail_len(self.snd_nxt)
            if tail < goal:
                end += goal - tail
        while end < full:
            end += goal
        return end

    def _xmit(self, now: float, writer: bool, resumed: bool = False) -> None:
        """:meth:`push`'s ``tcp_write_xmit``; ``writer``: the writer may add to the write queue first
        (False: an ACK's push, which sends only what the write queue already holds)."""
        q = self.q
        wq = self.wq
        mss = self.mss
        if resumed and self._clock_cont is not None:
            self._clock = self._clock_cont        # the same tcp_write_xmit, resumed
        else:
            self._clock = now                     # tcp_mstamp_refresh
        self._clock_cont = None
        if self._stalled and writer:
            self._stalled = False
            self._writer_catch_up(now)
        # Every field is re-read on each pass: sending can run the peer synchronously on
        # a path without delay, and its ACK re-enters on_ack/push before this loop resumes.
        rtc = self._rtc
        skbs_before = self.skbs_out
        while True:
            if q.packets_out - q.sacked_out - q.lost_out + q.retrans_out >= self.cwnd:
                self.cwnd_limited = True
                self._stall(now)
                break
            if rtc is not None:
                free = rtc[0][rtc[1]]
                # still carrying earlier segments through the kernel, or another sender's turn
                if free > now or (rtc[2] is not None and self._rtc_behind(rtc[2], now)):
                    self.cwnd_limited = False
                    if self._rtc_since == INF:
                        self._rtc_since = now
                    wake = free if free > now else now
                    if self.skbs_out != skbs_before or self._clock < now:
                        # cut inside a loop that has sent: its rest runs on the same tcp_clock_cache
                        self._clock_cont = self._clock
                    if wake < self._rtc_at:
                        self._rtc_at = wake
                        call_at(self.env, wake, self._rtc_resume)
                    break
                self._rtc_since = INF
            if self.pacing and self._wstamp > now and self.data_segs_out >= 10:
                # tcp_pacing_check: the pacing timer sends the next one at its departure time.
                # Under fq the segment goes to the qdisc with its timestamp, but TCP Small Queues
                # keeps only max(2 skbs, sk_pacing_rate >> 10) = ~1 ms of it there
                # (tcp_small_queue_check): the socket hands over at most that far ahead.
                wake = self._wstamp
                if self.pacing_fq:
                    lead = 2 * mss / self.pacing_rate
                    wake -= lead if lead > 1 / 1024 else 1 / 1024
                if wake > now:
                    self.cwnd_limited = False
                    self._stall(now)
                    if wake < self._pace_at:
                        self._pace_at = wake
                        call_at(self.env, wake, self._pace_resume)
                    break
            if q.lost_out > q.retrans_out and not self.frto_new and self._retransmit_next(now):
                continue
            seq = self.snd_nxt
            end = wq.ends[0] if wq.ends else seq          # the head skb of the write queue
            if end == seq:
                # nothing unsent: the bulk writer's next write, then tcp_push (autocorking)
                if not writer or not self._app_write(now):
                    self.cwnd_limited = False
                    break
                if wq.should_autocork(seq, self.size_goal(), len(q), self.wmem_queued + 1, self.skb_head):
                    self._tsq_waiting = True       # TSQ_THROTTLED: tcp_wfree -> tcp_tsq_handler pushes it
                    self.cwnd_limited = False
                    self._stall(now)
                    break
                end = wq.ends[0]
            n = end - seq
            full = 0                        # tcp_tso_segs for this skb, once computed
            if self.grow_skb and len(wq.ends) > 1 and (self.gso or n < mss):   # no GSO: a full segment cannot grow
                # tcp_grow_skb, before tcp_small_queue_check sizes the skb: a head shorter than
                # min(cwnd quota, tcp_tso_segs) takes bytes of the next unsent skb
                quota = self.cwnd_quota()
                full = self.tso_segs()
                missing = (quota if quota < full else full) * mss - n
                if missing > 0:
                    end = wq.grow_head(seq, missing)
                    n = end - seq
            is_tail = end == wq.write_seq
            if n > mss:
                size = self._send_size(n, seq, is_tail, full)
                if size < 0:                   # tcp_tso_should_defer: wait for the next ACK
                    self.cwnd_limited = size == -2
                    self.tso_deferred += 1
                    self._stall(now)
                    break
                if size > mss:
                    if self.tsq and self._tsq_full(size):
                        if not self.grow_skb:
                            wq.split_head(seq + size)       # see _tsq_full
                        self.cwnd_limited = False
                        self._stall(now)
                        break
                    end = seq + size
                    segs = (size + mss - 1) // mss
                    self.snd_nxt = end
                    wq.sent(end)
                    q.queue(seq, end, now, segs)
                    if size % mss:             # tcp_minshall_update: it ends in a small segment
                        self.snd_sml = end
                    self._transmit(seq, size, now, True, segs)
                    if self.state == RECOVERY:
                        self.prr_out += segs
                    continue
                n = mss
            end = seq + n
            if end > self.snd_una + self.snd_wnd and q.packets_out:
                self.cwnd_limited = False
                self._stall(now)
                break
            if n < mss:
                if (is_tail and not self.nodelay and q.packets_out and self.snd_sml > self.snd_una):
                    # Nagle (tcp_nagle_test on the tail skb): the writer's next write may fill it
                    if writer and self.write_end > wq.write_seq:
                        self._app_write(now)
                        continue
                    self.cwnd_limited = False
                    break
                self.snd_sml = end
            if self.tsq and self._tsq_full(n):
                if not self.grow_skb:
                    wq.split_head(end)
                self.cwnd_limited = False
                self._stall(now)
                break
            # a new segment
            self.snd_nxt = end
            wq.sent(end)
            q.queue(seq, end, now, 1)
            self._transmit(seq, n, now, True)
            if self.state == RECOVERY:
                self.prr_out += 1
        po = q.packets_out
        limited = self.cwnd_limited or self.in_flight >= self.cwnd
        if limited or self.skbs_out != skbs_before:
            self._cwnd_validate(limited, po)
        if po and self._rto_at == INF:
            self._arm_rto(now + self.rtt.backed_off(self.backoff))

    def _cwnd_validate(self, limited: bool, packets_out: int) -> None:
        """``tcp_cwnd_validate`` after a push that sent or stopped on the window: a window found
        limited stays so until a window of data later (``cwnd_usage_seq``); otherwise
        ``max_packets_out`` tracks the most segments out in the current window."""
        if (self.snd_una >= self._cwnd_usage_seq or limited
                or (not self.is_cwnd_limited and packets_out > self.max_packets_out)):
            self.is_cwnd_limited = limited
            self.max_packets_out = packets_out
            self._cwnd_usage_seq = self.snd_nxt

    def window_used(self) -> bool:
        """``tcp_is_cwnd_limited``: may the congestion control grow cwnd -- the window was used, or in
        slow start cwnd is below twice the most segments out in this window."""
        return self.is_cwnd_limited or (self.cwnd < self.ssthresh and self.cwnd < 2 * self.max_packets_out)

    # -- GSO and TCP Small Queues -------------------------------------------------------------
    def cwnd_quota(self, left: int | None = None) -> int:
        """``tcp_cwnd_test``: the segments the congestion window lets one skb carry now --
        ``cwnd - in_flight`` (``left``, when the caller has it), but at most half the window
        (``max(cwnd >> 1, 1)``: "ensure we have at least 2 GSO packets in flight"), so a small window
        is sent as two or more skbs.  Only ``tcp_tso_should_defer`` looks at the whole ``cwnd - in_flight``."""
        cwnd = self.cwnd
        if left is None:
            left = cwnd - self.in_flight
        half = cwnd >> 1
        if half < 1:
            half = 1
        return left if left < half else half

    def tso_segs(self) -> int:
        """``tcp_tso_segs`` -> ``tcp_tso_autosize`` (tso.py): segments one GSO skb may carry now."""
        if not self.gso:
            return 1
        # sk_pacing_rate: unlimited before an RTT sample
        segs = tso_autosize(self.pacing_rate or INF, self.rtt.min_rtt, self.mss, MIN_TSO_SEGS, self.gso_max_bytes)
        return segs if segs < self.gso_max_segs else self.gso_max_segs

    def _send_size(self, skb_len: int, seq: int, is_tail: bool, full: int = 0) -> int:
        """Bytes of the head skb (``skb_len`` long) ``tcp_write_xmit`` sends now -- all of it or a cut
        (``tso_fragment``) at ``tcp_mss_split_point``'s limit: ``tcp_tso_segs`` and the congestion
        window's quota in segments, the peer's window, and on the tail skb a last small segment that
        Nagle holds (``tcp_nagle_check``) -- or -1 (-2: cwnd-limited) when ``tcp_tso_should_defer``
        holds it back for the next ACK."""
        q = self.q
        mss = self.mss
        cong_win = self.cwnd - self.in_flight
        quota = self.cwnd_quota(cong_win)
        if not full:                 # ``full``: tcp_tso_segs, when push already has it for this skb
            full = self.tso_segs()
        max_len = (quota if quota < full else full) * mss
        window = self.snd_una + self.snd_wnd - seq if q.packets_out else skb_len
        if max_len <= window and not is_tail:
            limit = max_len
        else:
            needed = skb_len if skb_len < window else window
            if max_len <= needed:
                limit = max_len
            else:
                partial = needed % mss
                limit = needed
                if partial and not self.nodelay and q.packets_out and self.snd_sml > self.snd_una:
                    limit -= partial
        size = skb_len if skb_len < limit else limit
        if size < mss:
            return size
        segs = (size + mss - 1) // mss
        if (q.packets_out and segs < full and (is_tail or size < skb_len)
                and self._tso_should_defer(cong_win, seq, full)):
            # is_cwnd_limited only when the window left is the smaller limit and no larger than the
            # skb ("1) We are cwnd-limited": cong_win < send_win and cong_win <= skb->len)
            cong_bytes = cong_win * mss
            return -2 if cong_bytes < self.snd_una + self.snd_wnd - seq and cong_bytes <= skb_len else -1
        return size

    def _tso_should_defer(self, cong_win: int, seq: int, full: int) -> bool:
        """``tcp_tso_should_defer`` (tcp_output.c, Linux 6.18): hold back a part-sized skb, expecting an
        ACK soon to let a bigger one go -- only outside recovery, when the last send was within 1 ms
        (``tcp_wstamp_ns``), the window left (``min(send_win, cong_win)``, whatever the skb's own length)
        is under a full-sized TSO skb (``full`` segments) and under a third of
        ``min(snd_wnd, cwnd)`` (``tcp_tso_win_divisor`` = 3), and the oldest unacknowledged skb's ACK
        is expected within ``min(srtt / 2, 1 ms)`` (the 6.18 rule, commit "tcp: fix
        tcp_tso_should_defer() vs large RTT"; before: sent at least srtt / 2 ago).  "Now" is
        ``tcp_clock_cache``, read once at the start of ``tcp_write_xmit`` (``_clock``): an rtx head sent earlier
        in the same loop has its ACK a whole srtt away, so the loop is never held back by its own skbs."""
        if self.state != OPEN:
            return False
        now = self._clock                    # tcp_clock_cache, read once per tcp_write_xmit
        last = self._wstamp if self.pacing and self._wstamp > self._lsndtime else self._lsndtime
        if now - last > TSO_DEFER_RECENT:
            return False
        mss = self.mss
        limit = cong_win * mss
        send_win = self.snd_una + self.snd_wnd - seq
        if send_win < limit:
            limit = send_win
        if limit >= full * mss:              # "If a full-sized TSO skb can be sent, do it."
            return False
        chunk = self.cwnd * mss
        if self.snd_wnd < chunk:
            chunk = self.snd_wnd
        if limit >= chunk / TSO_WIN_DIVISOR:
            return False
        srtt = self.rtt.srtt
        how_far = self.q.head_sent() + srtt - now
        return how_far <= (srtt / 2 if srtt / 2 < TSO_DEFER_RECENT else TSO_DEFER_RECENT)

    def _tsq_full(self, nbytes: int) -> bool:
        """``tcp_small_queue_check`` for the skb of ``nbytes`` about to go -- tcp_write_xmit runs it last,
        after ``tcp_tso_should_defer`` and the cut to the congestion window's quota and tcp_tso_segs
        (``tcp_mss_split_point``, ``tso_fragment``): too many of this socket's bytes below it (throttled).

        The cut is made before this check, so an skb it holds back stays cut in the write queue at the
        quota of that moment -- often a segment or two, the first ACK after a burst that filled the
        window -- and its small truesize keeps the limit low until the rtx queue is down to one skb.
        Before Linux 6.10 it leaves at that size however far the window has opened meanwhile; since
        then ``tcp_grow_skb`` first refills it from the next skb, which :meth:`push` does by recutting
        the head (only ``grow_skb = False`` keeps the cut, ``WriteQueue.split_head``).  Inside UML's
        6.1 this holds a flow near the TSQ limit rather than at its cwnd (ss -tinm: unacked / cwnd
        0.40-0.87, mean 0.59; simulated 0.59, and 0.70-0.77 with the cut recomputed)."""
        if not self.wmem_queued:
            return False
        rate = self.pacing_rate or INF       # sk_pacing_rate: unlimited before an RTT sample
        limit = 2 * tcp_skb_truesize(nbytes, self.skb_head)
        paced = rate / (1 << PACING_SHIFT)
        if paced > limit:
            limit = paced
        if limit > self.limit_output_bytes:
            limit = self.limit_output_bytes
        if self.wmem_queued < limit:             # sk_wmem_alloc (which starts at 1) > limit: throttled
            return False
        if len(self.q) <= 1:                     # tcp_rtx_queue_empty_or_single_skb: at most one skb is out
            return False
        self.tsq_throttled += 1
        self._tsq_waiting = True
        return True

    def tsq_free(self, pkt, t: float) -> None:
        """The skb ``pkt`` is freed or orphaned at ``t`` (``tcp_wfree``): its bytes leave the budget."""
        free_charge(self, pkt, t, self.env, self._tsq_release)

    def tsq_charge(self, delta: int) -> None:
        """A device below re-charged this socket's skb by ``delta`` bytes (``tcp_gso_segment``'s
        ``refcount_add(sum_truesize - gso_skb->truesize, &sk->sk_wmem_alloc)``)."""
        self.wmem_queued += delta

    def _tsq_release(self, nbytes: int) -> None:
        self.wmem_queued -= nbytes
        if self._tsq_waiting:                    # tcp_tsq_handler: write more
            self._tsq_waiting = False
            self.push()

    def _update_pacing_rate(self) -> None:
        """``tcp_update_pacing_rate``: 200 % of cwnd / srtt in slow start (cwnd < ssthresh / 2), else 120 %."""
        srtt = self.rtt.srtt
        if srtt > 0.0:
            cwnd = max(self.cwnd, self.packets_out)
            ratio = 2.0 if self.cwnd < self.ssthresh / 2 else 1.2
            self.pacing_rate = ratio * cwnd * self.mss / srtt

    def _pace_resume(self, _=None) -> None:
        if self.env._now >= self._pace_at:
            self._pace_at = INF
            self.push()

    def _grow_sndbuf(self) -> None:
        """``tcp_new_space`` -> ``tcp_sndbuf_expand`` for the current cwnd (see buffers.SendBuffer)."""
        self._sndbuf_cwnd = self.cwnd
        if self.sndbuf_auto.expand(self.cwnd, self.reordering):
            self.sndbuf = self.sndbuf_auto.payload

    def share_core(self, other: "TcpSender") -> None:
        """Do the sending work on ``other``'s core: one thread writing both sockets (iperf3 before 3.16
        runs every ``-P`` stream in its one thread)."""
        self.cpu_key = other.cpu_key
        if self._rtc is not None:
            if self._rtc[2] is not None:
                self._rtc[2].remove(self)
            self.cpu.remove_sender(self._rtc[1])
        self._rtc = None
        if other._rtc is not None:
            self._rtc_join(self.cpu, other._rtc[1])

    def _rtc_join(self, cpu, core: int) -> None:
        """Run to completion on ``core``; where the host schedules threads, take turns with its other senders.

        Each sending task carries its segments through the kernel on its own CPU time, and the fair
        class shares a core among its runnable tasks (kernel/sched/fair.c): when the core is free,
        the sender that has waited longest for it goes first (FIFO turns, one skb's run to
        completion each; over a slice each runnable sender gets an equal share, as EEVDF gives
        equal-weight tasks).  Without turns the sender whose wake-up comes first at each free
        instant kept the core and the core's other flows never sent (iperf -P 8 on 2 cores:
        Jain 0.25, 6 of 8 streams at 0).  Not modelled: turns a whole slice long (tried: they left
        a core ~18 % idle in that scenario, holding the core for a sender that was not ready)."""
        peers = None
        cpu.add_sender(core)
        if getattr(cpu, "schedule_threads", False):
            peers = cpu.rtc_senders[core]
            peers.append(self)
        self._rtc = (cpu.free, core, peers)

    def _rtc_behind(self, peers: list, now: float) -> bool:
        """Whether another sender on this core, waiting for it (a wake-up pending), has waited longer."""
        mine = (self._rtc_since if self._rtc_since < now else now, peers.index(self))
        return any(p is not self and p._rtc_at < INF and (p._rtc_since, i) < mine for i, p in enumerate(peers))

    def _only_core_stops(self, now: float) -> bool:
        """Whether the busy core is all that stops ``push`` now: the window has room and the bulk
        writer would neither write (its buffer full, or above 2/3 of it: push's refill rule) nor grow
        its buffer."""
        if self.in_flight >= self.cwnd:
            return False
        bulk = self.bulk_until
        if bulk is None:
            return True
        una, we, buf = self.snd_una, self.write_end, self.sndbuf
        return (now < bulk and (una + buf <= we or (not self._stalled and 3 * (we - una) > 2 * buf))
                and (self.sndbuf_auto is None or self.cwnd <= self._sndbuf_cwnd))

    def _push_after_ack(self, now: float) -> None:
        """``push`` after an ACK, unless the sender waits for its core (a run-to-completion wake-up
        pending, the core busy) and push would only find it busy again: it would change nothing."""
        rtc = self._rtc
        if (self._rtc_at < INF and rtc is not None and rtc[0][rtc[1]] > now and not self._stalled
                and (self._rto_at < INF or not self.q.packets_out) and self._only_core_stops(now)):
            self.cwnd_limited = False
            if self._rtc_since == INF:
                self._rtc_since = now
            return
        self.push(after_ack=True)

    def _rtc_resume(self, _=None) -> None:
        """The flow's core is free again: send what was held back (a stale wake-up does nothing).

        If other work took the core meanwhile, and nothing else would stop ``push`` first (the
        window, the writer's buffer), wait on for the core as ``push`` would, without running it."""
        now = self.env._now
        if now >= self._rtc_at:
            self._rtc_at = INF
            rtc = self._rtc
            free = rtc[0][rtc[1]]
            if free > now:
                if self._only_core_stops(now):
                    self.cwnd_limited = False
                    self._rtc_at = free
                    call_at(self.env, free, self._rtc_resume)
                    return
            self.push(resumed=True)
            if self._rtc_at == INF:
                self._rtc_since = INF      # sent, or stopped by something else than the core: no longer waiting

    def _transmit(self, seq: int, n: int, now: float, new: bool, segs: int = 1) -> None:
        sock = self.sock
        rcv = sock.receiver
        # by position (a keyword call costs more): flow, size, created, payload, seq; kind "data"
        if segs > 1:
            # a GSO skb: its size counts every segment's headers (qdisc_pkt_len)
            last = n - (segs - 1) * self.mss
            pkt = Packet(sock.flow, self.frame_full * (segs - 1) + (
                self.frame_full if last == self.mss else tcp_frame_size(last, self.timestamps)), now, n, seq)
            pkt.gso_size = self.mss
            pkt.gso_segs = segs
            self.skbs_out += 1
        else:
            pkt = Packet(sock.flow, self.frame_full if n == self.mss else tcp_frame_size(n, self.timestamps),
                         now, n, seq)
            if new:
                self.skbs_out += 1
        if self.tsq:
            pkt.owner = self
            pkt.wmem = tcp_skb_truesize(n, self.skb_head)
            self.wmem_queued += pkt.wmem
        rcv_nxt = rcv.rcv_nxt
        pkt.ack = rcv_nxt
        pkt.ts_val = now
        pkt.ts_ecr = rcv.ts_recent
        # rcv.window(), its cached answer inline
        pkt.rwnd = rcv._win if rcv_nxt == rcv._win_at and not rcv.ofo_bytes else rcv.window()
        self._lsndtime = now
        self.segs_out += segs
        self.data_segs_out += segs
        self.bytes_sent += n
        if self.pacing and self.pacing_rate > 0.0:
            # tcp_update_skb_after_send: the next departure is this one's plus len / rate,
            # minus up to half of that as credit for time the socket sat idle
            prior = self._wstamp
            if prior < now:
                self._wstamp = now
            if self.data_segs_out > 10:
                pkt.tstamp = self._wstamp        # skb->tstamp (EDT): fq holds it until then
            len_t = n / self.pacing_rate if self.data_segs_out >= 10 else 0.0
            credit = self._wstamp - prior
            self._wstamp += len_t - (len_t / 2 if credit > len_t / 2 else credit)
        if self._cc_sent is not None:
            self._cc_sent(seq, n, now, new)
        if new and (self.app_cost or self.call_cost or self.byte_cost):
            # the application's send() work for these bytes (retransmissions cost it nothing):
            # ``app_cost`` per skb the stack builds and sends, ``call_cost`` per send() call,
            # ``byte_cost`` per byte tcp_sendmsg_locked copies from user (skb_copy_to_page_nocache)
            cost = self.app_cost + self.call_cost * n / self.write_size + self.byte_cost * n
            t = None
            if self.cpu is not None:
                t = (self.cpu.serve(now, cost, self.cpu_key) if self.app_thread is None else
                     self.cpu.run(self.app_thread, now, cost))
            pkt.t = t if t is not None else now + cost
        if rcv.ack_pending or rcv_nxt != rcv.last_ack_sent:
            rcv.ack_piggybacked()
        sock.endpoint.send(pkt)

    def _retransmit_next(self, now: float) -> bool:
        """Retransmit the first segment marked lost and not yet retransmitted."""
        found = self.q.next_retransmit(now)
        if found is None:
            # nothing found although lost_out > retrans_out: counters out of step would loop
            return False
        r, is_head = found
        self.retransmits += 1
        self.bytes_retrans += r[1] - r[0]
        self.undo_retrans += 1
        self._transmit(r[0], r[1] - r[0], now, False)
        if self.state == RECOVERY:
            self.prr_out += 1
        if is_head:      # tcp_xmit_retransmit_queue re-arms the RTO on the head
            self._arm_rto(now + self.rtt.backed_off(self.backoff))
        return True

    # -- acknowledgements -------------------------------------------------------------------
    def on_ack(self, pkt, now: float) -> None:
        """``tcp_ack``: process the cumulative ACK, SACK blocks and window of ``pkt``."""
        ack = pkt.ack
        if ack > self.snd_nxt:
            return      # acknowledges data never sent: ignore (tcp_ack's "too new")
        prior_una = self.snd_una
        rwnd = pkt.rwnd
        wnd_changed = rwnd != self.snd_wnd
        self.snd_wnd = rwnd
        if rwnd > self.max_window:
            self.max_window = rwnd
        q = self.q
        prior_out = q.packets_out
        if ack < prior_una or (ack == prior_una and not prior_out):
            if wnd_changed:
                self.push()
            return
        acked = 0            # segments newly acknowledged cumulatively
        orig_tx = -1.0
        delivered = 0        # newly delivered: cum-acked not SACKed before + newly SACKed
        first_tx = last_tx = -1.0
        if ack > prior_una:
            prior_sacked = q.sacked_out
            r = q.recs[q.head]
            head_seq, head_flags = r[0], r[3]
            acked, sacked_before, first_tx, last_tx, karn, spurious = q.clean(
                ack, pkt.ts_ecr if self.timestamps else 0.0)
            orig_tx = first_tx           # the oldest never-retransmitted skb acked (for F-RTO)
            if karn:
                first_tx = -1.0          # Karn: no sequence RTT when retransmitted data is acked
            if prior_sacked and self.sack:
                # data below SACKed data arrived without (or before) its retransmission: reordering
                high = q.high_sacked - 1
                if (not head_flags & (SACKED | EVER_RETRANS) or spurious) and head_seq < high:
                    self._reordered((high - head_seq) // self.mss + 1)
            if spurious:
                self.spurious_retrans += spurious
                self.undo_retrans -= spurious
            if self.sack:
                delivered = acked - sacked_before
            elif acked:
                # tcp_remove_reno_sacks: dupACKs already counted some of these
                so = q.sacked_out
                delivered = acked - so if acked - so > 1 else 1
                q.sacked_out = 0 if acked - 1 >= so else so - (acked - 1)
            self.snd_una = ack
            self.backoff = 0
            if self.on_acked is not None:
                self.on_acked(ack - prior_una, now)
        newly = 0
        if self.sack:
            if pkt.sack:
                newly = q.sacktag(pkt.sack, self.snd_una)
                delivered += newly
                if newly:
                    q.mark_lost(self.reordering)
            if q.retrans_out and delivered:
                self._rack_lost_retrans()
        elif ack == prior_una and not pkt.payload and not wnd_changed and prior_out:
            # a duplicate ACK counted as a "reno SACK" (tcp_add_reno_sack)
            if q.sacked_out < prior_out - 1 or q.sacked_out < self.reordering:
                q.sacked_out += 1
            delivered = 1
        # RTT sample (tcp_ack_update_rtt): sequence RTT, else the timestamp echo
        if first_tx >= 0.0:
            rtt = self.rtt
            rtt.sample(now - first_tx)
            self.cc.on_rtt(now - last_tx, now)
            if self.keep_samples:
                self.rtt_samples.append(rtt.latest)
                self.rtt_times.append(now)
                if len(self.rtt_samples) >= RTT_KEEP:
                    self._fold_rtt()
        elif acked and self.timestamps and pkt.ts_ecr > 0.0:
            sample = now - pkt.ts_ecr
            self.rtt.sample(sample)
            self.cc.on_rtt(sample, now)
            if self.keep_samples:
                self.rtt_samples.append(sample)
                self.rtt_times.append(now)
                if len(self.rtt_samples) >= RTT_KEEP:
                    self._fold_rtt()
        # the retransmission timer restarts when new data is acknowledged (tcp_rearm_rto)
        if acked:
            if q.packets_out:
                # _arm_rto inline, lazy: moves the deadline; an event only if it comes earlier
                deadline = now + self.rtt.rto
                self._rto_at = deadline
                if deadline < self._rto_ev_t:
                    self._arm_rto(deadline)
            else:
                self._rto_at = INF
            if self.state == OPEN and not delivered - acked and self.sack and not q.lost_out:
                # fast path: nothing lost, nothing SACKed -- just grow the window
                if self.window_used():
                    self.cc.cong_avoid(acked, now)
                if self._cc_main is not None:
                    self._cc_main(acked, delivered, now)
                else:
                    self._update_pacing_rate()
                self._push_after_ack(now)
                return
        if self.state == LOSS:
            self._process_loss(pkt, orig_tx, ack > prior_una, newly, prior_out, wnd_changed)
        self._congestion_control(acked, delivered, ack > prior_una, now)
        if self._cc_main is not None:
            self._cc_main(acked, delivered, now)
        else:
            self._update_pacing_rate()
        self._push_after_ack(now)
        self.frto_new = False

    def _congestion_control(self, acked: int, delivered: int, advanced: bool, now: float) -> None:
        """``tcp_fastretrans_alert`` + ``tcp_cong_control``."""
        state = self.state
        if state == RECOVERY:
            if self.snd_una >= self.high_seq:
                if self.undo_retrans <= 0 and self.timestamps:
                    # every retransmission was spurious (Eifel, RFC 3522): undo the
                    # reduction (tcp_try_undo_recovery -> tcp_undo_cwnd_reduction)
                    self.undos += 1
                    if self.prior_cwnd > self.cwnd:
                        self.cwnd = self.prior_cwnd
                    if self.prior_ssthresh > self.ssthresh:
                        self.ssthresh = self.prior_ssthresh
                # recovery complete: tcp_end_cwnd_reduction
                elif self.ssthresh < self.cwnd:
                    self.cwnd = self.ssthresh
                self.state = OPEN
                if not self.sack:
                    self.q.sacked_out = 0
                self.log_cwnd(now)
                return
            if not self.sack and advanced:
                self.q.mark_head_lost()         # NewReno partial ACK
            self._prr(delivered)
            return
        if state == LOSS and self.snd_una >= self.high_seq:
            self.state = state = OPEN
        if state == OPEN:
            if self.sack:
                enter = self.q.lost_out > 0
            else:
                enter = self.q.sacked_out >= self.reordering
                if enter:
                    self.q.mark_head_lost()
            if enter:
                self._enter_recovery(now)
                self._prr(delivered)
                return
        if acked and self.window_used():
            self.cc.cong_avoid(acked, now)
            if self.cwnd < 1:
                self.cwnd = 1

    def _process_loss(self, pkt, orig_tx: float, advanced: bool, sacked: int, prior_out: int,
                      wnd_changed: bool) -> None:
        """``tcp_process_loss``: undo a spurious timeout, or F-RTO's next step (loss.py)."""
        dupack = not advanced and not pkt.payload and not wnd_changed and prior_out > 0
        ts_ecr = pkt.ts_ecr if self.timestamps else 0.0
        if loss.process_loss(self, advanced, ts_ecr, orig_tx, dupack, sacked > 0):
            self.log_cwnd(self.env._now)

    def _rack_lost_retrans(self) -> None:
        """RACK's loss detection for retransmissions (``tcp_rack_mark_lost``, net/ipv4/tcp_recovery.c): a
        retransmission sent before data that has since been delivered, by more than the reordering
        window, was lost again and goes out again now, not after a retransmission timeout.  The window
        (``tcp_rack_reo_wnd``): none in Recovery or Loss while no reordering has been seen, else
        min(min_rtt / 4, srtt)."""
        rtt = self.rtt
        if not self.reorder_events and self.state != OPEN:
            reo = 0.0
        else:
            reo = rtt.min_rtt / 4 if rtt.min_rtt < rtt.srtt else rtt.srtt
        self.lost_retrans += self.q.mark_lost_retrans(reo)

    def _reordered(self, degree: int, count: int = 1) -> None:
        """``tcp_check_sack_reordering``: raise the loss threshold to the reordering seen
        (``count`` segments found out of order, the worst ``degree`` segments)."""
        self.reorder_events += count
        if degree > self.reordering:
            self.reordering = degree if degree < MAX_REORDERING else MAX_REORDERING

    def _enter_recovery(self, now: float) -> None:
        """``tcp_enter_recovery`` + ``tcp_init_cwnd_reduction``."""
        self.fast_recoveries += 1
        self.prior_cwnd = self.cwnd
        self.prior_ssthresh = self.ssthresh
        self.undo_retrans = 0
        self.ssthresh = self.cc.ssthresh()
        self.high_seq = self.snd_nxt
        self.prr_delivered = 0
        self.prr_out = 0
        self.cwnd_cnt = 0
        self.state = RECOVERY
        self.log_cwnd(now)

    def _prr(self, delivered: int) -> None:
        """Proportional Rate Reduction (RFC 6937; ``tcp_cwnd_reduction``)."""
        if delivered <= 0 and self.prr_out:
            return
        self.prr_delivered += delivered
        pipe = self.in_flight
        delta = self.ssthresh - pipe
        if delta < 0:
            sndcnt = (self.ssthresh * self.prr_delivered + self.prior_cwnd - 1) // self.prior_cwnd - self.prr_out
        else:
            sndcnt = self.prr_delivered - self.prr_out
            if sndcnt < delivered:
                sndcnt = delivered
            if sndcnt > delta:
                sndcnt = delta
        if sndcnt < 0:
            sndcnt = 0
        if not self.prr_out and sndcnt < 1:
            sndcnt = 1      # always send the fast retransmission
        cwnd = pipe + sndcnt
        self.cwnd = cwnd if cwnd > 1 else 1

    # -- retransmission timer ----------------------------------------------------------------
    def _arm_rto(self, deadline: float) -> None:
        self._rto_at = deadline
        if deadline < self._rto_ev_t:
            if self._rto_ev is not None:
                self._rto_ev.cancel()
            self._rto_ev_t = deadline
            self._rto_ev = call_at(self.env, deadline, self._rto_fire)

    def _rto_fire(self, _=None) -> None:
        self._rto_ev = None
        self._rto_ev_t = INF
        if not self.q.packets_out or self._rto_at == INF:
            self._rto_at = INF
            return
        now = self.env._now
        if self._rto_at > now + 1e-12:
            at = self._rto_at
            self._rto_at = INF
            self._arm_rto(at)
            return
        self._on_timeout(now)

    def _on_timeout(self, now: float) -> None:
        """``tcp_retransmit_timer`` + ``tcp_enter_loss``."""
        self.timeouts += 1
        loss.enter_loss(self, now)
        if self.state != LOSS or self.snd_una >= self.high_seq:
            self.ssthresh = self.cc.ssthresh()
        self.cc.on_loss_timeout()
        self.cwnd = 1
        self.cwnd_cnt = 0
        self.state = LOSS
        self.high_seq = self.snd_nxt
        if not self.sack:
            self.q.sacked_out = 0
        self.q.enter_loss()
        self.backoff += 1
        self._rto_at = INF
        self.log_cwnd(now)
        self.push()
        self._arm_rto(now + self.rtt.backed_off(self.backoff))
