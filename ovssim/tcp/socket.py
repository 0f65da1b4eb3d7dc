"""One end of a TCP connection: a sender and a receiver behind one port.

A :class:`TcpSocket` is what a traffic tool holds.  It is bound on its
:class:`~ovssim.path.endpoint.Endpoint` (directly, or through a
:class:`~ovssim.tcp.connection.TcpListener` on the server side), demultiplexes
each arriving segment to its :class:`TcpSender` (the ACK fields) and its
:class:`TcpReceiver` (the payload), and sends through ``endpoint.send``.
Data it sends carries its receiver's ACK, so request/response traffic needs
no pure ACKs, as in Linux.

Buffers: ``sndbuf``/``rcvbuf`` are in payload bytes, i.e. the value an
application passes to ``setsockopt(SO_SNDBUF/SO_RCVBUF)`` (see
:func:`ovssim.tcp.defaults.socket_buffer_payload`); ``None`` means Linux
autotuning from the host's ``tcp_wmem``/``tcp_rmem`` (``sysctls``, the endpoint's
``tcp_sysctls`` or the kernel defaults; see :mod:`ovssim.tcp.buffers`).  ``cc=None``
follows the host's ``net.ipv4.tcp_congestion_control``, as iperf3 and netperf do
without ``-C``/``-K``.

``cc_after_connect``: the application sets ``TCP_CONGESTION`` on the established socket, as iperf3
does (``iperf_create_streams``, src/iperf_client_api.c: ``setsockopt(TCP_CONGESTION)`` after
``protocol->connect()``; strace of iperf3 3.12 on this host: ``connect(5, ...)`` then
``setsockopt(5, SOL_TCP, TCP_CONGESTION, "cubic")``).  The connection was then established under the
host's default congestion control, whose ``init`` ran at ``tcp_init_transfer``; if that is BBR,
``bbr_init`` set ``sk_pacing_status = SK_PACING_NEEDED`` and ``tcp_reinit_congestion_control``
(net/ipv4/tcp_cong.c), which switches to the requested module, leaves it as it is: the new module
(CUBIC) is paced by TCP itself (``tcp_pacing_check``, ``tcp_update_skb_after_send``) at
``tcp_update_pacing_rate``'s 120 % (200 % in slow start) of cwnd / srtt.  Measured on this host
(kernel 6.18, default congestion control bbr, ``iperf3 -C cubic`` through a 100 Mbit/s HTB on a Linux
bridge's port): the sender's veth transmits one 64 KB skb every 4.2 ms from the pacing timer's
softirq (trace event net_dev_xmit), 124 Mbit/s = ss's pacing_rate, at most two skbs between two
ACKs, and in-flight stays at 1900-2170 segments under a cwnd of 2276 while up to 1.2 MB waits
unsent.
"""
from __future__ import annotations

from ..packet import ETH_HEADER, IPV4_HEADER, FlowKey, Packet
from ..sched import call_at
from .congestion import make_congestion_control
from .defaults import DELACK, INIT_CWND, SACK, TIMESTAMPS, mss_for_mtu
from .buffers import ReceiveBuffer, SendBuffer, TcpSysctls
from .receiver import TcpReceiver
from .rtt import RttEstimator
from .sender import TcpSender


HANDSHAKE = ("syn", "synack")
# a SYN / SYN-ACK frame: Ethernet + IPv4 + 40 bytes of TCP header with options (MSS, SACK-permitted,
# timestamps, window scale)
SYN_FRAME = ETH_HEADER + IPV4_HEADER + 40


class TcpSocket:
    def __init__(self, env, endpoint, local_port: int, remote: str, remote_port: int, *,
                 cc=None, mtu: int = 1500, mss: int | None = None,
                 sndbuf: int | None = None, rcvbuf: int | None = None,
                 nodelay: bool = False, sack: bool = SACK, timestamps: bool = TIMESTAMPS,
                 init_cwnd: int = INIT_CWND, delack: float = DELACK,
                 rto_min: float | None = None, send_cost: float = 0.0, recv_cost: float = 0.0,
                 call_cost: float = 0.0, send_byte_cost: float = 0.0, recv_byte_cost: float = 0.0,
                 keep_samples: bool = True, name: str | None = None,
                 sysctls: TcpSysctls | None = None, cc_after_connect: bool = False,
                 affinity: tuple[int, ...] | None = None):
        self.env = env
        sysctls = sysctls or getattr(endpoint, "tcp_sysctls", None) or TcpSysctls()
        # the module the connection was established under (see cc_after_connect above)
        established_under = sysctls.congestion_control if cc is None or cc_after_connect else cc
        if cc is None:
            cc = sysctls.congestion_control
        cc = make_congestion_control(cc)
        # -C set after connect: the connection runs under the module it was established under until the
        # application's setsockopt (set_congestion_control; write and bulk apply it if not yet done); the
        # sender's pacing follows that first module and survives the switch (TcpSender.set_congestion_control)
        first = make_congestion_control(established_under) if cc_after_connect else cc
        self.pending_cc = cc if first.name != cc.name else None
        if self.pending_cc is None:
            first = cc
        self.endpoint = endpoint
        self.name = name or f"{endpoint.name}:{local_port}"
        self.flow = FlowKey(endpoint.name, remote, local_port, remote_port, "tcp")
        self.rflow = self.flow           # pure ACKs travel the same way as data
        self.mss = mss or mss_for_mtu(mtu, timestamps)
        cpu = getattr(endpoint, "cpu", None)
        rtt = RttEstimator() if rto_min is None else RttEstimator(rto_min=rto_min)
        rcv_auto = (ReceiveBuffer(sysctls.rmem, mss=self.mss, moderate=sysctls.moderate_rcvbuf)
                    if rcvbuf is None else None)
        snd_auto = (SendBuffer(sysctls.wmem, mss=self.mss, factor=getattr(cc, "sndbuf_expand", 2))
                    if sndbuf is None else None)
        self.receiver = TcpReceiver(self, mss=self.mss,
                                    rcvbuf=rcv_auto.window() if rcv_auto else rcvbuf,
                                    delack=delack, sack=sack, timestamps=timestamps,
                                    app_cost=recv_cost, byte_cost=recv_byte_cost, cpu=cpu, affinity=affinity)
        self.receiver.autotune = rcv_auto
        self.sender = TcpSender(self, mss=self.mss, cc=first,
                                init_cwnd=init_cwnd,
                                sndbuf=snd_auto.payload if snd_auto else sndbuf,
                                nodelay=nodelay, sack=sack, timestamps=timestamps, rtt=rtt,
                                app_cost=send_cost, call_cost=call_cost, byte_cost=send_byte_cost, cpu=cpu, affinity=affinity,
                                keep_samples=keep_samples,
                                gso=getattr(endpoint, "gso", False),
                                gso_max_size=getattr(endpoint, "gso_max_size", 65536),
                                tsq=getattr(endpoint, "tsq", False),
                                limit_output_bytes=sysctls.limit_output_bytes,
                                kernel=getattr(endpoint, "kernel", None))
        self.sender.sndbuf_auto = snd_auto
        if getattr(endpoint, "fq_pacing", False):
            # an fq qdisc on this host's device paces every TCP socket by EDT (SK_PACING_FQ):
            # TCP stamps departure times instead of holding packets itself
            self.sender.pacing = self.sender.pacing_fq = True
        self.peer: TcpSocket | None = None
        self.backlog: list = []             # sk_backlog: segments that arrived while the writer owned the socket
        self.use_backlog = True             # False: every segment is processed on arrival (tests compare)
        self.on_established = None          # callback(now), once: the client's connect() returns (SYN-ACK in)

    # -- wiring -----------------------------------------------------------------------
    def connected_to(self, peer: "TcpSocket") -> None:
        """Complete the (unmodelled) handshake: learn the peer's window."""
        self.peer = peer
        self.sender.snd_wnd = peer.receiver.window()

    # -- the handshake's round trip -----------------------------------------------------
    def syn(self) -> None:
        """Send the SYN (the connection is already established; only its round trip is simulated):
        the SYN-ACK's echo gives the client its first RTT sample, as ``tcp_ack_update_rtt`` takes it
        from the SYN-ACK, so srtt, the RTO and ``tcp_min_rtt`` -- which ``tcp_tso_autosize`` reads --
        start from the path's idle round trip, as when iperf3 connects its streams before the test."""
        now = self.env._now
        pkt = Packet(self.flow, SYN_FRAME, now, 0, 0, None, 0, 0, "syn")
        pkt.ts_val = now
        self.endpoint.send(pkt)

    def _handshake(self, pkt, now: float) -> None:
        if pkt.kind == "syn":                       # the server answers with a SYN-ACK echoing the SYN's stamp
            rep = Packet(self.flow, SYN_FRAME, now, 0, 0, None, 0, 0, "synack")
            rep.ts_val = now
            rep.ts_ecr = pkt.ts_val
            self.endpoint.send(rep)
        else:                                       # the client: its first RTT sample
            self.sender.rtt.sample(now - pkt.ts_ecr)
            cb = self.on_established
            if cb is not None:                      # a blocking connect() returns to its caller
                self.on_established = None
                cb(now)

    # -- packets in ----------------------------------------------------------------------
    def put(self, pkt) -> None:
        now = self.env._now
        if pkt.t > now:
            call_at(self.env, pkt.t, self._input, pkt)
            return
        self._input(pkt)

    def _input(self, pkt) -> None:
        now = self.env._now
        if self.backlog or self._owned(now):
            self._add_backlog(pkt)
            return
        self._deliver(pkt, now)

    def _deliver(self, pkt, now: float) -> None:
        """``tcp_v4_do_rcv``: the ACK fields to the sender, the payload to the receiver."""
        if pkt.kind in HANDSHAKE:
            self._handshake(pkt, now)
            return
        s = self.sender
        if not pkt.payload and pkt.seq <= self.receiver.rcv_wup:
            # a pure ACK's timestamp becomes TS.Recent too (tcp_replace_ts_recent: seq <= rcv_wup),
            # so the data this end sends echoes it and the peer's receiver can time its round trip.
            # Before the ACK is processed: tcp_rcv_established's fast path runs tcp_store_ts_recent
            # before tcp_ack, its slow path tcp_replace_ts_recent at the top of tcp_ack
            # (FLAG_UPDATE_TS_RECENT), and only then does tcp_data_snd_check send -- so the data an
            # ACK releases echoes that ACK's timestamp, not the one before.
            self.receiver.ts_recent = pkt.ts_val
        if s.snd_nxt or pkt.rwnd != s.snd_wnd:
            s.on_ack(pkt, now)
        if pkt.payload:
            self.receiver.on_data(pkt, now)

    # -- the socket lock ------------------------------------------------------------------
    def _owned(self, now: float) -> bool:
        """``sock_owned_by_user`` for a bulk writer: on a run-to-completion endpoint while the path's softirq
        work of what it sent, done in its context under ``lock_sock``, keeps the flow's core busy; with
        ``TcpSender.write_lock``, also inside its ``write()`` -- ``tcp_sendmsg`` holds the socket lock from
        ``lock_sock`` to ``release_sock`` while ``tcp_sendmsg_locked`` copies the write's bytes
        (:meth:`TcpSender.sendmsg_end`)."""
        if not self.use_backlog:
            return False
        s = self.sender
        rtc = s._rtc
        if rtc is not None and s.bulk_until is not None and rtc[0][rtc[1]] > now:
            return True
        return s.write_lock and s.sendmsg_end(now) is not None

    def _add_backlog(self, pkt) -> None:
        """``tcp_v4_rcv`` -> ``tcp_add_backlog``: the segment waits in the socket backlog for the owner's
        ``release_sock``: when the write in progress ends and the core is free."""
        self.backlog.append(pkt)
        if len(self.backlog) == 1:
            now = self.env._now
            s = self.sender
            t = now
            rtc = s._rtc
            if rtc is not None and rtc[0][rtc[1]] > t:
                t = rtc[0][rtc[1]]
            end = s.sendmsg_end(now) if s.write_lock else None
            if end is not None and end > t:
                t = end
            call_at(self.env, t, self._release)

    def _release(self, _=None) -> None:
        """``release_sock`` -> ``__release_sock``: the backlog's segments in arrival order (``sk_backlog_rcv``)."""
        pkts, self.backlog = self.backlog, []
        now = self.env._now
        for pkt in pkts:
            self._deliver(pkt, now)

    # -- the application ------------------------------------------------------------------
    def set_congestion_control(self, _=None) -> None:
        """``setsockopt(TCP_CONGESTION)`` on the established socket (``cc_after_connect``): the requested
        module takes over (``tcp_reinit_congestion_control``); nothing if it already has."""
        cc, self.pending_cc = self.pending_cc, None
        if cc is not None:
            self.sender.set_congestion_control(cc)

    def set_congestion_control_once_acked(self) -> None:
        """iperf3's order: ``write(cookie)``, then ``setsockopt(TCP_CONGESTION)`` -- by when, on a veth, the
        cookie's ACK has been processed under the module the connection started with: the write's softirq
        carries the segment to the peer and its ACK back before the syscall returns (tcp_probe on this host,
        ``iperf3 -C cubic``, default bbr: the cookie's ACK raised cwnd 10 -> 11, as ``bbr_set_cwnd`` does in
        STARTUP and CUBIC's slow start, not cwnd-limited by one segment, would not; CUBIC's first data flight
        was 11 segments).  So the switch comes once what was written is acknowledged."""
        s = self.sender
        if self.pending_cc is None:
            return
        if s.snd_una >= s.snd_nxt:
            self.set_congestion_control()
            return
        prev = s.on_acked

        def acked(nbytes, now):
            if prev is not None:
                prev(nbytes, now)
            if s.snd_una >= s.snd_nxt:
                s.on_acked = prev
                call_at(self.env, now, self.set_congestion_control)   # after this ACK's processing
        s.on_acked = acked

    def write(self, nbytes: int, *, before_setsockopt: bool = False) -> None:
        if self.pending_cc is not None and not before_setsockopt:
            self.set_congestion_control()
        self.sender.write(nbytes)

    def bulk(self, until: float, write_size: int | None = None) -> None:
        if self.pending_cc is not None:
            self.set_congestion_control()
        self.sender.bulk(until, write_size)

    def ss_info(self) -> dict:
        """This end's window state with ``ss -tinm``'s names (bytes unless said): cwnd and
        unacked in segments, bytes_in_flight, notsent, snd_wnd (the peer's window), tb
        (sk_sndbuf), rb (sk_rcvbuf), rcv_space, rcv_ssthresh, rcv_wnd (what it advertises)."""
        s, r = self.sender, self.receiver
        auto = r.autotune
        return {"cwnd": s.cwnd, "ssthresh": min(s.ssthresh, 0x7FFFFFFF), "unacked": s.packets_out,
                "bytes_in_flight": s.snd_nxt - s.snd_una, "notsent": max(s.write_end - s.snd_nxt, 0),
                "snd_wnd": s.snd_wnd,
                "tb": s.sndbuf_auto.sk_sndbuf if s.sndbuf_auto is not None else s.sndbuf,
                "rb": auto.sk_rcvbuf if auto is not None else r.rcvbuf,
                "rcv_space": auto.space if auto is not None else r.rcvbuf,
                "rcv_ssthresh": auto.rcv_ssthresh if auto is not None else r.rcvbuf,
                "rcv_wnd": r._right_edge - r.rcv_nxt}      # the last advertised window (tp->rcv_wnd), no side effect

    def sample_windows(self, interval: float, until: float) -> list[dict]:
        """``ss -tinm`` every ``interval`` s until ``until``: the returned list fills as the run goes."""
        rows: list[dict] = []

        def tick(_):
            now = self.env._now
            rows.append(dict(self.ss_info(), t=now))
            if now + interval <= until:
                call_at(self.env, now + interval, tick)
        call_at(self.env, self.env._now, tick)
        return rows

    def sample_cwnd(self, interval: float, until: float) -> None:
        """Log (time, cwnd, ssthresh) every ``interval`` seconds until ``until`` (one timer)."""
        def tick(_):
            now = self.env._now
            self.sender.log_cwnd(now)
            if now + interval <= until:
                call_at(self.env, now + interval, tick)
        call_at(self.env, self.env._now, tick)
