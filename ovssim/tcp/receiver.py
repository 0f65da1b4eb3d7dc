"""The receiving half of a TCP connection, as Linux acknowledges.

What it models (net/ipv4/tcp_input.c: ``tcp_data_queue``, ``__tcp_ack_snd_check``,
``tcp_send_delayed_ack``; tcp_output.c: ``tcp_select_window``):

* In-order data is delivered to the application at once (netperf and iperf
  read as fast as data arrives); out-of-order data waits in an interval set.
* Delayed ACKs: an ACK goes out at once when more than one full segment has
  arrived since the last ACK (so every second full segment), in quick-ACK
  mode (the first ``MAX_QUICKACKS`` segments of a connection and after a
  duplicate segment), for out-of-order or duplicate data, and when data
  fills a hole; otherwise a timer of ``delack`` (Linux's TCP_DELACK_MIN,
  40 ms) sends it.  Data the local application sends in the meantime
  carries the ACK (piggybacking) and cancels the timer.
* SACK blocks (RFC 2018): up to 3 with timestamps, the block holding the most
  recently received segment first.
* The receive window: socket buffer minus out-of-order bytes held, rounded
  down to whole segments, and never shrinking its right edge.
* Timestamps (RFC 7323): ``TS.Recent`` is taken from the segment that
  starts at the last ACK sent, so RTT samples include the delayed-ACK wait.
* A reader that is not instantaneous (``read_delay``, off by default): the application reads the
  queued data ``read_delay()`` after it is queued (its wake-up; one read takes all that is queued),
  and until then the data is unread (``rcv_nxt - copied_seq``) and takes its room from the window.
  ``__tcp_ack_snd_check`` then sends the every-second-segment ACK only if nothing is unread
  (``rcv_nxt - copied_seq < sk_rcvlowat``) or the window ``__tcp_select_window`` would offer now is at
  least the one last advertised (``tp->rcv_wnd``) -- "tcp_recvmsg() will send ACK otherwise": the
  read's ``tcp_cleanup_rbuf`` sends it (more than one segment not yet ACKed, or the window at least
  doubled).  Behind a shaper that releases 64 KB GSO skbs, the free space is above ``rcv_ssthresh``
  by less than one skb, so every ACK waits for the reader, and a reader that is not scheduled for a
  few milliseconds withholds every ACK of that time: the sender gets one cumulative ACK, which BBR's
  ``bbr_update_ack_aggregation`` turns into a larger cwnd (data/local/tcp_window/2026-11-28-bbr).
"""
from __future__ import annotations

from bisect import bisect_right

from ..cpu.keys import conn_key
from ..packet import Packet, tcp_frame_size
from ..sched import call_at
from .buffers import tcp_skb_truesize
from .defaults import DELACK, MAX_QUICKACKS, MAX_SACK_BLOCKS

INF = float("inf")


class TcpReceiver:
    def __init__(self, sock, *, mss: int, rcvbuf: int, delack: float = DELACK,
                 quickacks: int = MAX_QUICKACKS, sack: bool = True, timestamps: bool = True,
                 app_cost: float = 0.0, byte_cost: float = 0.0, cpu=None,
                 affinity: tuple[int, ...] | None = None):
        self.sock = sock
        self.env = sock.env
        self.mss = mss
        self.rcvbuf = max(int(rcvbuf), 1)
        self.delack = delack
        self.max_quickacks = quickacks
        self.quick = min(quickacks, max(1, self.rcvbuf // (2 * mss)))
        self.sack = sack
        self.timestamps = timestamps
        self.app_cost = app_cost
        self.byte_cost = byte_cost    # CPU per byte tcp_recvmsg copies to user (skb_copy_datagram_iter)
        self.cpu = cpu
        # the reading application's recv() copies run where the scheduler puts the process: the core
        # that is free first (not pinned -- the softirq work that queued the data is on the connection's)
        # (``affinity``, taskset -c: keyed to an allowed core -- the thread, where threads are scheduled, may
        # move among them)
        self.cpu_key = None if affinity is None or cpu is None else cpu.pin(conn_key(sock.flow), affinity)
        self.app_thread = cpu.app_thread("tcp-recv", self.cpu_key, affinity=affinity) if cpu is not None else None
        self.ack_size = tcp_frame_size(0, timestamps)
        self.rcv_nxt = 0
        self.rcv_wup = 0            # rcv_nxt when the last ACK was sent
        self.last_ack_sent = 0
        self._right_edge = 0
        self.ts_recent = 0.0
        self.ofo: list[list[int]] = []   # disjoint sorted [start, end) intervals
        self.ofo_bytes = 0
        self._last_block_start = -1
        self.ack_pending = False
        self._delack_at = INF
        self._delack_ev = None
        # counters
        self.segs_in = 0
        self.bytes_received = 0     # in-order bytes delivered to the application
        self.acks_sent = 0
        self.delayed_acks = 0
        self.ofo_segments = 0
        self.dup_segments = 0
        self.on_deliver = None      # callback(nbytes, now): the application reads
        self.autotune = None        # buffers.ReceiveBuffer when the application set no SO_RCVBUF
        # the reading application (module docstring): None reads at once (copied_seq follows rcv_nxt);
        # a callable gives the delay (s) from data queued to the read that takes it
        self.read_delay = None
        self.copied_seq = 0         # tp->copied_seq (with read_delay only)
        # sk_rmem_alloc of the in-order data not yet read (with read_delay; without it only the skb being
        # processed): each skb's truesize as its sender built it (tcp_skb_truesize; the skb crosses veths whole)
        self.rmem_alloc = 0
        self._forced_win = None     # the window of the ACK being sent, when the softirq sends it (unread data)
        self._read_at = INF
        self.rcv_wnd = 0            # tp->rcv_wnd: the window the last ACK advertised (with read_delay only)
        self.reader_acks = 0        # ACKs tcp_cleanup_rbuf sent after a read
        # the reader's system calls (profile app.syscall, a UML instance's ptrace round trip; 0 = not counted):
        # a reader blocked in select() and woken by new data makes ``wake_calls`` calls (set by its tool, e.g.
        # iperf3's server loop), data arriving before its loop ends one read() more; ``_loop_end`` is when its
        # calls end (its own time line: the calls' host CPU delays no packet, ovssim/cpu/pool.py account)
        self.syscall = 0.0
        self.wake_calls = 0
        self.reader_calls = 0
        self._loop_end = 0.0
        self._right_edge = self._compute_window()
        self._win = self._right_edge
        self._win_at = 0

    # -- the advertised window -------------------------------------------------------
    def _compute_window(self) -> int:
        free = self.rcvbuf - self.ofo_bytes
        if free >= self.mss:
            free -= free % self.mss
        return free if free > 0 else 0

    def window(self) -> int:
        """``tcp_select_window``: free space, never moving the right edge left."""
        if self.read_delay is not None:
            self._win_at = -1               # no cached answer: unread data moves the window too
            return self._keep_right_edge(self._offer())
        if not self.ofo_bytes:
            if self.rcv_nxt == self._win_at:
                return self._win
            # _compute_window with nothing held out of order, inline
            win = self.rcvbuf
            if win >= self.mss:
                win -= win % self.mss
            elif win < 0:
                win = 0
        else:
            win = self._compute_window()
        right = self.rcv_nxt + win
        if right < self._right_edge:
            return self._right_edge - self.rcv_nxt
        self._right_edge = right
        if not self.ofo_bytes:
            self._win_at = self.rcv_nxt
            self._win = win
        return win

    def _keep_right_edge(self, win: int) -> int:
        """``tcp_select_window``'s rule for a window ``win``: never move the right edge left (offer up to the
        old edge instead), else advance the edge to ``rcv_nxt + win``."""
        right = self.rcv_nxt + win
        if right < self._right_edge:
            return self._right_edge - self.rcv_nxt
        self._right_edge = right
        return win

    def _offer(self) -> int:
        """``__tcp_select_window``'s window (before ``tcp_select_window`` keeps the right edge): the free
        space, ``tcp_space`` -- the buffer's window less the unread and out-of-order data -- at most
        ``rcv_ssthresh`` (and the clamp), in whole segments.  With autotuning the unread data counts by its
        truesize (``tcp_space``: ``tcp_win_from_space(sk_rcvbuf - sk_rmem_alloc)``), as in ``tcp_grow_window``."""
        held = self.rcv_nxt - self.copied_seq + self.ofo_bytes
        auto = self.autotune
        if auto is not None:
            free = auto.win_from_space(auto.sk_rcvbuf - self.rmem_alloc) - self.ofo_bytes
            cap = auto.rcv_ssthresh if auto.rcv_ssthresh < auto.window_clamp else auto.window_clamp
            if free > cap:
                free = cap
        else:
            free = self.rcvbuf - held
        if free >= self.mss:
            free -= free % self.mss
        return free if free > 0 else 0

    def _queued(self, now: float) -> None:
        """In-order data queued for the application: read at once, or at the reader's next read."""
        if self.read_delay is None:
            self.copied_seq = self.rcv_nxt
            self.rmem_alloc = 0
        elif self._read_at == INF:
            self._read_at = now + self.read_delay()
            call_at(self.env, self._read_at, self._app_read)

    def _app_read(self, _=None) -> None:
        """The reader takes everything queued (``tcp_recvmsg``), then ``tcp_cleanup_rbuf``: an ACK if one is
        scheduled and more than one segment is unacknowledged ("Once-per-two-segments ACK was not sent by
        tcp_input.c"), or if the read lets the window at least double (``2 * rcv_window_now <=
        window_clamp`` and the new window >= 2 x ``tcp_receive_window``)."""
        now = self.env._now
        self._read_at = INF
        copied = self.rcv_nxt - self.copied_seq
        self.copied_seq = self.rcv_nxt
        self.rmem_alloc = 0
        time_to_ack = self.ack_pending and self.rcv_nxt - self.rcv_wup > self.mss
        if copied > 0 and not time_to_ack:
            now_win = self.rcv_wup + self.rcv_wnd - self.rcv_nxt          # tcp_receive_window
            clamp = self.autotune.window_clamp if self.autotune is not None else self.rcvbuf
            if 2 * now_win <= clamp:
                new = self._offer()
                time_to_ack = new > 0 and new >= 2 * now_win
        if time_to_ack:
            self.reader_acks += 1
            self.send_ack(now)

    def _ack_now_ok(self) -> bool:
        """``__tcp_ack_snd_check``'s condition on the every-second-segment ACK, past "more than one full
        frame received": nothing unread, or the right edge advances far enough (the window offered now
        at least ``tp->rcv_wnd``)."""
        if self.rcv_nxt - self.copied_seq < 1:             # sk_rcvlowat = 1
            return True
        return self._offer() >= self.rcv_wnd

    # -- data in -------------------------------------------------------------------------
    def on_data(self, pkt, now: float) -> None:
        seq = pkt.seq
        end = seq + pkt.payload
        self.segs_in += 1
        if (self.app_cost or self.byte_cost) and self.cpu is not None:
            cost = self.app_cost + self.byte_cost * pkt.payload
            if self.app_thread is None:
                self.cpu.serve(now, cost, self.cpu_key)
            else:
                self.cpu.run(self.app_thread, now, cost)
        if seq <= self.last_ack_sent < end:
            self.ts_recent = pkt.ts_val
        rcv_nxt = self.rcv_nxt
        if seq == rcv_nxt:
            if self.ofo:
                end = self._drain_ofo(end)
                immediate = True
            else:
                immediate = False
            # _deliver, inline
            self.rcv_nxt = end
            self.bytes_received += end - rcv_nxt
            if self.on_deliver is not None:
                self.on_deliver(end - rcv_nxt, now)
            # tcp_queue_rcv charges the skb to sk_rmem_alloc before tcp_event_data_recv -> tcp_grow_window
            self.rmem_alloc += tcp_skb_truesize(end - rcv_nxt)
            auto = self.autotune
            softirq = auto is not None and self.read_delay is None
            if auto is not None and auto.on_data(end, end - rcv_nxt, pkt.ts_ecr, now, self.rmem_alloc,
                                                 read=not softirq):
                self.rcvbuf = auto.window()
                self._win_at = -1           # the cached window is stale
            if self.read_delay is not None:
                self._queued(now)
            elif not softirq:
                self.rmem_alloc = 0         # read at once
            if self.wake_calls:
                self._reader_calls(now)
            if softirq:
                self._softirq_ack_then_read(immediate, now)
                return
        elif end <= rcv_nxt:
            # a retransmission of data already here: quick-ACK mode and an ACK now
            # (tcp_data_queue -> tcp_enter_quickack_mode, tcp_send_dupack)
            self.dup_segments += 1
            self.quick = self.max_quickacks
            self.send_ack(now)
            return
        elif seq < rcv_nxt:
            # partly new: keep the new part
            self._deliver(end if not self.ofo else self._drain_ofo(end), now)
            immediate = True
        else:
            # out of order: queued, and ACKed at once while the queue is not empty
            # (tcp_data_queue_ofo schedules the ACK, __tcp_ack_snd_check sends it now)
            self._add_ofo(seq, end)
            self.ofo_segments += 1
            self.send_ack(now)
            return
        if self.rcv_wup == self.rcv_nxt and not self.ack_pending:
            return                      # the application's reply already carried the ACK
        if (immediate or self.quick > 0
                or (self.rcv_nxt - self.rcv_wup > self.mss
                    and (self.read_delay is None or self._ack_now_ok()))):
            if self.quick > 0:
                self.quick -= 1
            self.send_ack(now)
        else:
            self._delay_ack(now)

    def _delay_ack(self, now: float) -> None:
        """The delayed-ACK timer (``inet_csk_reset_xmit_timer(ICSK_TIME_DACK)``): one pending event, re-checked
        when it fires."""
        if not self.ack_pending:
            self.ack_pending = True
            self._delack_at = now + self.delack
        if self._delack_ev is None:
            self._delack_ev = call_at(self.env, self._delack_at, self._delack_fire)

    def _softirq_ack_then_read(self, immediate: bool, now: float) -> None:
        """An autotuned receiver whose reader reads at once, in Linux's order: the softirq decides the ACK with
        the skb queued unread (``tcp_event_data_recv`` -> ``__tcp_ack_snd_check``), then the reader copies it
        (``tcp_recvmsg``: ``tcp_rcv_space_adjust``, then ``tcp_cleanup_rbuf``).

        The softirq sends the ACK now in quick-ACK mode or, past one full segment, if the window
        ``__tcp_select_window`` offers now is at least the one last advertised (``tp->rcv_wnd``); that window
        is ``tcp_space`` less the unread skb's truesize, and the buffer is the one before this read's
        ``tcp_rcv_space_adjust``.  Otherwise "tcp_recvmsg() will send ACK": the read's ``tcp_cleanup_rbuf``
        sends it (more than one segment unacknowledged) with the window after the read.  Not modelled:
        ``tcp_grow_window`` also enters quick-ACK mode whenever it raises ``rcv_ssthresh`` (``icsk_ack.quick |=
        1``), an ACK per such segment; with it the UML rows' MTU-segment flows moved away from their
        measurements (uml-pfifo_fast's ping KS 0.07 -> 0.19, tests/collect/test_uml_validate.py), without it the
        tcp_window rows are the same (CUBIC) or within a few points (BBR).  Behind the bridge
        port's HTB 20 Mbit/s the ACK of a 39-segment skb in slow start advertised 221184 B
        (tcp_probe, data/local/tcp_window/2026-11-28-trace: (303589 - 57304) x 229 >> 8 = 220313 aligned to
        the window scale) where the buffer's window after the read was 233262."""
        auto = self.autotune
        ack = False
        if not (self.rcv_wup == self.rcv_nxt and not self.ack_pending):
            more = self.rcv_nxt - self.rcv_wup > self.mss
            if immediate or self.quick > 0 or (
                    more and auto.offer(self.rmem_alloc) >= self.rcv_wnd):
                if self.quick > 0:
                    self.quick -= 1
                self._send_ack_unread(now)
            elif more:
                ack = True                  # left to tcp_cleanup_rbuf
            else:
                self._delay_ack(now)
        # the read
        self.rmem_alloc = 0
        if auto.read(self.rcv_nxt, now):
            self.rcvbuf = auto.window()
            self._win_at = -1
        if ack:
            self.send_ack(now)

    def _send_ack_unread(self, now: float) -> None:
        """:meth:`send_ack` with the window ``tcp_select_window`` offers while ``rmem_alloc`` is unread."""
        win = self.autotune.offer(self.rmem_alloc) - self.ofo_bytes
        if win < self.mss:
            win = self.mss if win > 0 else 0
        self._win_at = -1
        self._forced_win = self._keep_right_edge(win)
        self.send_ack(now)

    def _deliver(self, new_nxt: int, now: float) -> None:
        n = new_nxt - self.rcv_nxt
        self.rcv_nxt = new_nxt
        self.bytes_received += n
        if self.on_deliver is not None:
            self.on_deliver(n, now)
        if self.read_delay is not None:
            self.rmem_alloc += tcp_skb_truesize(n)
            self._queued(now)
        if self.wake_calls:
            self._reader_calls(now)

    def _reader_calls(self, now: float) -> None:
        """New in-order data readable at ``now``: the reader's system calls for it -- a wake-up's
        ``wake_calls`` if its loop had ended (it sleeps in select()), else one read() more -- counted as
        ``syscall`` each of busy time on its core (:meth:`ovssim.cpu.pool.CpuPool.account`)."""
        if now >= self._loop_end:
            n = self.wake_calls
            self._loop_end = now + n * self.syscall
        else:
            n = 1
            self._loop_end += self.syscall
        self.reader_calls += n
        if self.cpu is not None:
            self.cpu.account(n * self.syscall, self.cpu_key, self.app_thread)

    def _add_ofo(self, s: int, e: int) -> None:
        """Queue ``[s, e)`` out of order, merged with the intervals it overlaps or touches.

        The queue's intervals are sorted, disjoint and never adjacent, so only the
        neighbours of the new one can merge: found by bisection, not by a scan.
        """
        ofo = self.ofo
        i = bisect_right(ofo, [s, e])
        if i and ofo[i - 1][1] >= s:
            i -= 1
            blk = ofo[i]
            removed = blk[1] - blk[0]
            end = blk[1] if blk[1] > e else e
        else:
            blk = [s, e]
            ofo.insert(i, blk)
            removed = 0
            end = e
        j = i + 1
        n = len(ofo)
        while j < n and ofo[j][0] <= end:
            nb = ofo[j]
            removed += nb[1] - nb[0]
            if nb[1] > end:
                end = nb[1]
            j += 1
        if j > i + 1:
            del ofo[i + 1:j]
        blk[1] = end
        self.ofo_bytes += end - blk[0] - removed
        self._last_block_start = s

    def _drain_ofo(self, nxt: int) -> int:
        """Take the queued intervals ``nxt`` reaches; return the new ``rcv_nxt``."""
        ofo = self.ofo
        i = 0
        n = len(ofo)
        removed = 0
        while i < n and ofo[i][0] <= nxt:
            a, b = ofo[i]
            removed += b - a
            if b > nxt:
                nxt = b
            i += 1
        if i:
            del ofo[:i]
            self.ofo_bytes -= removed
        return nxt

    def _sack_blocks(self):
        ofo = self.ofo
        if not ofo:
            return None
        # the block holding the most recently received segment (intervals are disjoint)
        x = self._last_block_start
        i = bisect_right(ofo, [x, INF]) - 1
        recent = ofo[i] if i >= 0 and x < ofo[i][1] else None
        out = []
        if recent is not None:
            out.append((recent[0], recent[1]))
        for blk in reversed(ofo):
            if len(out) >= MAX_SACK_BLOCKS:
                break
            if blk is not recent:
                out.append((blk[0], blk[1]))
        return out

    # -- ACKs out ----------------------------------------------------------------------------
    def send_ack(self, now: float) -> None:
        """Send a pure ACK now."""
        sock = self.sock
        # by position (a keyword call costs more): flow, size, created, payload, seq, vlan,
        # priority, tos, kind
        pkt = Packet(sock.rflow, self.ack_size, now, 0, sock.sender.snd_nxt, None, 0, 0, "ack")
        pkt.ack = self.rcv_nxt
        pkt.ts_val = now
        pkt.ts_ecr = self.ts_recent
        if self._forced_win is not None:
            pkt.rwnd, self._forced_win = self._forced_win, None
        else:
            pkt.rwnd = (self._win if self.rcv_nxt == self._win_at and not self.ofo_bytes
                        and self.read_delay is None else self.window())
        self.rcv_wnd = pkt.rwnd
        if self.sack and self.ofo:
            blocks = self._sack_blocks()
            pkt.sack = blocks
            pkt.size += 4 + 8 * len(blocks)     # SACK option + 2 NOPs (RFC 2018)
        self.acks_sent += 1
        self.ack_pending = False
        self.rcv_wup = self.last_ack_sent = self.rcv_nxt
        sock.sender.segs_out += 1
        sock.endpoint.send(pkt)

    def ack_piggybacked(self) -> None:
        """Outgoing data carries the ACK (``tcp_event_ack_sent``)."""
        self.ack_pending = False
        self.rcv_wup = self.last_ack_sent = self.rcv_nxt
        if self.read_delay is not None:
            self.rcv_wnd = self.window()

    def _delack_fire(self, _=None) -> None:
        self._delack_ev = None
        if not self.ack_pending:
            return
        now = self.env._now
        if now + 1e-12 < self._delack_at:
            self._delack_ev = call_at(self.env, self._delack_at, self._delack_fire)
            return
        self.delayed_acks += 1
        self.send_ack(now)
