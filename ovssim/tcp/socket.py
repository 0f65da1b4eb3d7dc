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
autotuning at its maximum.
"""
from __future__ import annotations

from ..packet import FlowKey
from ..sched import call_at
from .congestion import make_congestion_control
from .defaults import (AUTOTUNED_RCV_WINDOW, AUTOTUNED_SND_BYTES, DELACK, INIT_CWND, SACK,
                       TIMESTAMPS, mss_for_mtu)
from .receiver import TcpReceiver
from .rtt import RttEstimator
from .sender import TcpSender


class TcpSocket:
    def __init__(self, env, endpoint, local_port: int, remote: str, remote_port: int, *,
                 cc="cubic", mtu: int = 1500, mss: int | None = None,
                 sndbuf: int | None = None, rcvbuf: int | None = None,
                 nodelay: bool = False, sack: bool = SACK, timestamps: bool = TIMESTAMPS,
                 init_cwnd: int = INIT_CWND, delack: float = DELACK,
                 rto_min: float | None = None, send_cost: float = 0.0, recv_cost: float = 0.0,
                 call_cost: float = 0.0,
                 keep_samples: bool = True, name: str | None = None):
        self.env = env
        self.endpoint = endpoint
        self.name = name or f"{endpoint.name}:{local_port}"
        self.flow = FlowKey(endpoint.name, remote, local_port, remote_port, "tcp")
        self.rflow = self.flow           # pure ACKs travel the same way as data
        self.mss = mss or mss_for_mtu(mtu, timestamps)
        cpu = getattr(endpoint, "cpu", None)
        rtt = RttEstimator() if rto_min is None else RttEstimator(rto_min=rto_min)
        self.receiver = TcpReceiver(self, mss=self.mss,
                                    rcvbuf=AUTOTUNED_RCV_WINDOW if rcvbuf is None else rcvbuf,
                                    delack=delack, sack=sack, timestamps=timestamps,
                                    app_cost=recv_cost, cpu=cpu)
        self.sender = TcpSender(self, mss=self.mss, cc=make_congestion_control(cc),
                                init_cwnd=init_cwnd,
                                sndbuf=AUTOTUNED_SND_BYTES if sndbuf is None else sndbuf,
                                nodelay=nodelay, sack=sack, timestamps=timestamps, rtt=rtt,
                                app_cost=send_cost, call_cost=call_cost, cpu=cpu,
                                keep_samples=keep_samples,
                                gso=getattr(endpoint, "gso", False),
                                gso_max_size=getattr(endpoint, "gso_max_size", 65536),
                                tsq=getattr(endpoint, "tsq", False))
        self.peer: TcpSocket | None = None

    # -- wiring -----------------------------------------------------------------------
    def connected_to(self, peer: "TcpSocket") -> None:
        """Complete the (unmodelled) handshake: learn the peer's window."""
        self.peer = peer
        self.sender.snd_wnd = peer.receiver.window()

    # -- packets in ----------------------------------------------------------------------
    def put(self, pkt) -> None:
        now = self.env._now
        if pkt.t > now:
            call_at(self.env, pkt.t, self._input, pkt)
            return
        s = self.sender
        if s.snd_nxt or pkt.rwnd != s.snd_wnd:
            s.on_ack(pkt, now)
        if pkt.payload:
            self.receiver.on_data(pkt, now)

    def _input(self, pkt) -> None:
        now = self.env._now
        s = self.sender
        if s.snd_nxt or pkt.rwnd != s.snd_wnd:
            s.on_ack(pkt, now)
        if pkt.payload:
            self.receiver.on_data(pkt, now)

    # -- the application ------------------------------------------------------------------
    def write(self, nbytes: int) -> None:
        self.sender.write(nbytes)

    def bulk(self, until: float, write_size: int | None = None) -> None:
        self.sender.bulk(until, write_size)

    def sample_cwnd(self, interval: float, until: float) -> None:
        """Log (time, cwnd, ssthresh) every ``interval`` seconds until ``until`` (one timer)."""
        def tick(_):
            now = self.env._now
            self.sender.log_cwnd(now)
            if now + interval <= until:
                call_at(self.env, now + interval, tick)
        call_at(self.env, self.env._now, tick)
