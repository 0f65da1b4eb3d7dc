"""iperf3 TCP (``iperf3 -c HOST -P N -w W -t T -C cc``) over the simulated TCP.

Keys are iperf3's flags (iperf3(1)) or their long names:

* ``P``/``parallel``  parallel streams (seed 004 used ``-P 10``; seed 003 1-8);
* ``w``/``window``    socket buffer in bytes on both ends (iperf3 sets SO_SNDBUF
  and SO_RCVBUF to it); without it the buffers are autotuned;
* ``t``/``time``      test length (default 10 s);
* ``O``/``omit``      seconds at the start left out of the results (iperf3 -O: "skip past the
  TCP slow-start period"); the test then runs ``omit + time``;
* ``C``/``congestion`` ``cubic``, ``bbr`` or ``reno``/``newreno``; without it the client host's
  ``net.ipv4.tcp_congestion_control`` (the vm's ``sysctl`` table; Linux's built-in default cubic);
* ``l``/``length``    bytes per write (iperf3's TCP default: 128 KiB); a bulk writer
  keeps the send buffer full whatever its write size, so this matters only
  through ``call_cost`` (CPU per write call);
* ``M``/``set-mss``   maximum segment size in bytes;
* ``N``/``no-delay``  TCP_NODELAY.

ovssim's own: ``name``, ``start``, ``call_cost`` (CPU per write call; default ``app.send_per_call``),
``send_cost``/``recv_cost`` (CPU per segment,
charged to the endpoints' CPUs; default: the profile's ``app.send_per_packet``
/ ``app.recv_per_packet`` from ``RunContext.extra["app"]``, else 0), ``port`` (default 5201), ``stagger``
(streams start uniformly within this time, default 1 ms, drawn from the run's
``iperf`` random stream, as connections made one after another would).  ``one_thread``: every stream's sending
work on the first stream's core, as iperf3 before 3.16 does it (one thread for all ``-P`` streams;
default false: a thread per stream, as iperf 2 and iperf3 3.16+).

Results: ``throughput`` (the receivers' sum, 10^6 bit/s, iperf3's
``sum_received``), ``retransmits`` (iperf3's sender ``retransmits``: all
retransmitted segments), ``fairness`` (Jain's index over the streams),
``throughput_min``/``throughput_max`` per stream, and TCP's RTT.  Samples:
``tcp_rtt`` (ms), ``cwnd`` (segments, every ``cwnd_interval``, all streams),
``stream_throughput`` (Mbit/s per stream).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..sched import call_at
from ..tcp.connection import connect
from ..tcp.spec import (Option, as_bool, as_cc, as_count, as_port, as_positive_time, as_size,
                        as_time, parse_table)
from ..tcp.stats import GoodputMeter, cwnd_array, jain_index, rtt_array_ms, rtt_summary
from .base import Metric, RunContext, Workload

IPERF3_PORT = 5201
IPERF3_TCP_LENGTH = 128 * 1024
IPERF3_DEFAULT_TIME = 10.0


class IperfTcp(Workload):
    kind = "iperf_tcp"
    OPTIONS = [
        Option("parallel", ("P", "parallel"), as_count, "number of parallel streams"),
        Option("window", ("w", "window"), as_size, "socket buffer in bytes, e.g. \"256k\""),
        Option("time", ("t", "time"), as_positive_time, "test length, e.g. \"10s\""),
        Option("omit", ("O", "omit"), as_time, "seconds left out at the start, e.g. \"1s\""),
        Option("cc", ("C", "congestion"), as_cc, "cubic, bbr or reno (default: the host's tcp_congestion_control)"),
        Option("length", ("l", "length"), as_size, "bytes per write, e.g. \"128k\""),
        Option("mss", ("M", "set-mss", "set_mss"), as_size, "maximum segment size in bytes"),
        Option("nodelay", ("N", "no-delay", "no_delay"), as_bool, "true to set TCP_NODELAY"),
        Option("name", ("name",), str, "a name for the results"),
        Option("start", ("start",), as_time, "start offset"),
        Option("send_cost", ("send_cost",), as_time, "CPU time per segment sent"),
        Option("recv_cost", ("recv_cost",), as_time, "CPU time per segment received"),
        Option("call_cost", ("call_cost",), as_time, "CPU time per send() call of l bytes"),
        Option("port", ("port", "p"), as_port, "server port"),
        Option("stagger", ("stagger",), as_time, "spread of the streams' start times"),
        Option("one_thread", ("one_thread",), as_bool, "true: all streams sent from one thread (iperf3 < 3.16)"),
        Option("cwnd_interval", ("cwnd_interval",), as_time, "how often to sample cwnd (0: never)"),
    ]

    def __init__(self, *, parallel: int = 1, window: int | None = None, time: float | None = None,
                 cc: str | None = None, length: int = IPERF3_TCP_LENGTH, mss: int | None = None,
                 nodelay: bool = False, name: str | None = None, start: float = 0.0,
                 send_cost: float | None = None, recv_cost: float | None = None,
                 call_cost: float | None = None, port: int = IPERF3_PORT,
                 stagger: float = 1e-3, mtu: int | None = None, cwnd_interval: float = 0.01,
                 omit: float = 0.0, one_thread: bool = False):
        super().__init__(name)
        if parallel < 1:
            raise ConfigError(f"iperf -P must be >= 1, got {parallel}", key="P", fix="use P = 1 or more")
        if omit < 0:
            raise ConfigError(f"iperf -O must be >= 0, got {omit}", key="O", fix='e.g. O = "1s"')
        self.omit = omit
        self.one_thread = one_thread
        self.parallel = parallel
        self.window = window
        self.time = time
        self.cc = cc
        self.length = length
        self.mss = mss
        self.nodelay = nodelay
        self.start_offset = start
        self.send_cost = send_cost
        self.recv_cost = recv_cost
        self.call_cost = call_cost
        self.port = port
        self.stagger = stagger
        self.mtu = mtu
        self.cwnd_interval = cwnd_interval
        self.streams: list = []
        self.meters: list[GoodputMeter] = []
        self.t0 = self.t1 = 0.0
        self.retx_omitted = 0
        self.windows: list[tuple[list, list]] = []     # per stream: (sender rows, receiver rows) of ss_info

    @classmethod
    def from_spec(cls, table: dict) -> "IperfTcp":
        return cls(**parse_table(table, cls.OPTIONS, tool="iperf TCP",
                                 fixed={"tool": ("iperf", "iperf2", "iperf3"), "proto": ("tcp",)}))

    def start(self, ctx: RunContext) -> None:
        env = ctx.env
        self.t0 = max(env.now, ctx.start_at + self.start_offset)
        length = self.time if self.time is not None else (ctx.duration or IPERF3_DEFAULT_TIME)
        self.t1 = self.t0 + self.omit + length
        measured_from = self.t0 + self.omit
        app = (ctx.extra or {}).get("app", {})
        send_cost = self.send_cost if self.send_cost is not None else app.get("send_per_packet", 0.0)
        recv_cost = self.recv_cost if self.recv_cost is not None else app.get("recv_per_packet", 0.0)
        call_cost = self.call_cost if self.call_cost is not None else app.get("send_per_call", 0.0)
        offsets = np.zeros(self.parallel)
        if self.stagger > 0 and self.parallel > 1 and ctx.rng is not None:
            offsets = ctx.rng("iperf").uniform(0.0, self.stagger, self.parallel)
        for i in range(self.parallel):
            c, s = connect(env, ctx.src, ctx.dst, self.port, cc=self.cc, mtu=self.mtu, mss=self.mss,
                           nodelay=self.nodelay, sndbuf=self.window, rcvbuf=self.window,
                           send_cost=send_cost, recv_cost=recv_cost, call_cost=call_cost,
                           send_byte_cost=app.get("send_per_byte", 0.0), recv_byte_cost=app.get("recv_per_byte", 0.0))
            c.sender.rtt_from = measured_from       # what the RTT figures cover (and keep once folded)
            if self.one_thread and self.streams:
                c.sender.share_core(self.streams[0][0].sender)
            meter = GoodputMeter(measured_from, self.t1)
            s.receiver.on_deliver = meter
            self.streams.append((c, s))
            self.meters.append(meter)
            at = self.t0 + float(offsets[i])
            call_at(env, at, lambda _, c=c: c.bulk(self.t1, self.length))
            if self.cwnd_interval:
                call_at(env, self.t0, lambda _, c=c: c.sample_cwnd(self.cwnd_interval, self.t1))
                # ss -ti of both ends over time: the sender's in-flight and send buffer, the receiver's window
                call_at(env, self.t0, lambda _, c=c, s=s: self.windows.append(
                    (c.sample_windows(self.cwnd_interval, self.t1), s.sample_windows(self.cwnd_interval, self.t1))))
        self.retx_omitted = 0       # retransmissions during -O, left out as iperf3 leaves them out
        if self.omit > 0:
            call_at(env, measured_from, self._end_omit)

    def _end_omit(self, _=None) -> None:
        self.retx_omitted = sum(c.sender.retransmits for c, _ in self.streams)

    def metrics(self) -> list[Metric]:
        per = [m.mbit_per_s() for m in self.meters]
        senders = [c.sender for c, _ in self.streams]
        out = [Metric("throughput", float(sum(per)), "Mbit/s"),
               Metric("retransmits", float(sum(s.retransmits for s in senders) - self.retx_omitted), "count"),
               Metric("throughput_min", float(min(per)), "Mbit/s"),
               Metric("throughput_max", float(max(per)), "Mbit/s")]
        if len(per) > 1:
            out.append(Metric("fairness", jain_index(per), "Jain index"))
        # iperf3's max_snd_cwnd (bytes), the largest over the streams
        out.append(Metric("max_snd_cwnd", float(max(max((c for _, c, _ in s.cwnd_log), default=s.cwnd) * s.mss
                                                    for s in senders)), "bytes"))
        for k, v in rtt_summary(senders, self.t0 + self.omit).items():
            out.append(Metric(k.replace("rtt_", "tcp_rtt_"), v, "ms"))
        return out

    def samples(self) -> dict[str, np.ndarray]:
        return {"tcp_rtt": rtt_array_ms([c.sender for c, _ in self.streams]),
                "cwnd": cwnd_array([c.sender for c, _ in self.streams], self.t0),
                "stream_throughput": np.asarray([m.mbit_per_s() for m in self.meters]),
                # sampled every cwnd_interval, all streams: bytes in flight, the receiver's advertised
                # window, sk_sndbuf and sk_rcvbuf (ss -ti's bytes_in_flight, rcv_wnd, tb, rb)
                **{name: np.asarray([r[key] for snd, rcv in self.windows for r in (snd if side == 0 else rcv)])
                   for name, key, side in (("in_flight", "bytes_in_flight", 0), ("rwnd", "rcv_wnd", 1),
                                           ("sndbuf", "tb", 0), ("rcvbuf", "rb", 1))}}
