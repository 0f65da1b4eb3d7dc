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
"""
from __future__ import annotations

from bisect import bisect_right

from ..packet import Packet, tcp_frame_size
from ..sched import call_at
from .defaults import DELACK, MAX_QUICKACKS, MAX_SACK_BLOCKS

INF = float("inf")


class TcpReceiver:
    def __init__(self, sock, *, mss: int, rcvbuf: int, delack: float = DELACK,
                 quickacks: int = MAX_QUICKACKS, sack: bool = True, timestamps: bool = True,
                 app_cost: float = 0.0, byte_cost: float = 0.0, cpu=None):
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
        self.cpu_key = None
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

    # -- data in -------------------------------------------------------------------------
    def on_data(self, pkt, now: float) -> None:
        seq = pkt.seq
        end = seq + pkt.payload
        self.segs_in += 1
        if (self.app_cost or self.byte_cost) and self.cpu is not None:
            self.cpu.serve(now, self.app_cost + self.byte_cost * pkt.payload, self.cpu_key)
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
            if self.autotune is not None and self.autotune.on_data(end, end - rcv_nxt, pkt.ts_ecr, now):
                self.rcvbuf = self.autotune.window()
                self._win_at = -1           # the cached window is stale
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
        if immediate or self.quick > 0 or self.rcv_nxt - self.rcv_wup > self.mss:
            if self.quick > 0:
                self.quick -= 1
            self.send_ack(now)
        else:
            # the delayed-ACK timer: one pending event, re-checked when it fires
            if not self.ack_pending:
                self.ack_pending = True
                self._delack_at = now + self.delack
            if self._delack_ev is None:
                self._delack_ev = call_at(self.env, self._delack_at, self._delack_fire)

    def _deliver(self, new_nxt: int, now: float) -> None:
        n = new_nxt - self.rcv_nxt
        self.rcv_nxt = new_nxt
        self.bytes_received += n
        if self.on_deliver is not None:
            self.on_deliver(n, now)

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
        pkt.rwnd = (self._win if self.rcv_nxt == self._win_at and not self.ofo_bytes
                    else self.window())
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
