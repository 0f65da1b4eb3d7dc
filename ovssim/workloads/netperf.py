"""netperf TCP_STREAM and TCP_RR over the simulated TCP (:mod:`ovssim.tcp`).

Configured with netperf's flags (netperf(1), "Netperf Manual" section 5/6):

* ``l``  test length (``-l 10``: 10 s; a time like ``"10s"``);
* ``s``  local send *and* receive socket buffer, ``S`` the remote ones
  (``-s``/``-S``, test-specific options); **in bytes**, as netperf takes them.
  The thesis (seed 000, section "NetPerf Tests") wrote its buffers as
  "32768 bits" and its message as "256 bits"; netperf's values are bytes, so
  a thesis run is ``s = "32k", S = "32k", m = "256b"``.  Linux doubles a
  requested buffer for overhead and half of it carries data, so the window
  is about the requested value (:func:`ovssim.tcp.defaults.socket_buffer_payload`);
  without ``s``/``S`` the buffers are autotuned (Linux's maximum);
* ``m``  send size per ``send()`` call (``-m``; netperf's default is the send
  buffer size, 16 KiB when autotuned).  TCP coalesces the writes into full
  segments and a bulk writer keeps the buffer full, so ``m`` changes the
  result only through ``call_cost`` (CPU per ``send()`` call: a segment of
  ``n`` bytes costs ``call_cost * n / m`` on the sender's CPU);
* ``r``  request,response sizes for TCP_RR (``-r 1,1``);
* ``D``  TCP_NODELAY (``-D``): off for TCP_STREAM, and on for TCP_RR by
  default here (one outstanding small request never waits for Nagle anyway);
* ``T``  CPU binding (netperf's global ``-T lcpu,rcpu``; one CPU without a comma binds both): netperf's
  and netserver's work on those cores of their hosts (:meth:`~ovssim.workloads.base.Workload.pinned`);
* ``K``  congestion control (netperf's ``-K``; ``cubic``, ``bbr`` or ``reno``/``newreno``; default: the
  host's ``net.ipv4.tcp_congestion_control``).

TCP_RR's reader is woken for every message (``app.wakeup``, from the run's
profile, default 0: ``sock_def_readable`` -> ``try_to_wake_up`` before the
blocked ``recvmsg`` returns), so each transaction pays two wake-ups -- what an
ICMP echo, answered in softirq (``icmp_echo``, net/ipv4/icmp.c), does not.

ovssim's own keys: ``name``, ``start`` (offset from the scenario start),
``send_cost``/``recv_cost`` (the tool's CPU time per segment sent/received,
charged to the endpoint's CPU), ``call_cost`` (CPU per ``send()`` call; default the profile's ``app.send_per_call``), ``server_cost`` (TCP_RR: server work per
transaction), ``port``.  Costs not given come from the run's profile
(``app.send_per_packet``, ``app.recv_per_packet``, ``app.rr_processing``,
passed in ``RunContext.extra["app"]``), else 0.

Results are netperf's: TCP_STREAM ``throughput`` in 10^6 bit/s (here the
bytes the receiver read during the test, over its length); TCP_RR
``transactions`` per second and, as the thesis derives it,
``rtt_mean = 1 / transactions`` in ms, plus the measured per-transaction
latency percentiles.  Samples: ``tcp_rtt`` (ms, every RTT measurement),
``cwnd`` (segments, every ``cwnd_interval``, default 10 ms), ``rr_latency`` (ms).
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import ConfigError
from ..metrics import DelayStats
from ..sched import call_at
from ..tcp.connection import connect
from ..tcp.spec import (Option, as_bool, as_cc, as_port, as_positive_time, as_size, as_time,
                        parse_table)
from ..tcp.stats import GoodputMeter, cwnd_array, rtt_array_ms, rtt_summary
from .base import Metric, RunContext, Workload
from .rr import Exchange

NETPERF_DATA_PORT = 12866
DEFAULT_SEND_SIZE = 16384


def _rr_sizes(v) -> tuple[int, int]:
    if isinstance(v, str):
        parts = [p.strip() for p in v.split(",")]
        if len(parts) == 1:
            parts = parts * 2
    elif isinstance(v, (list, tuple)):
        parts = list(v)
    else:
        parts = [v, v]
    if len(parts) != 2:
        raise ValueError(f"{v!r} is not 'request,response'")
    req, resp = (as_size(p) for p in parts)
    return req, resp


def _cpu_pair(v) -> tuple[tuple[int] | None, tuple[int] | None]:
    """netperf's ``-T lcpu,rcpu`` (netsh.c, ``break_args``: one value without a comma binds both sides):
    the local (netperf's) and remote (netserver's) CPU, each None where not bound."""
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return (v,), (v,)
    if not isinstance(v, str) or not re.fullmatch(r"\s*\d*\s*(,\s*\d*\s*)?", v) or not v.strip(" ,"):
        raise ValueError(f"{v!r} is not netperf's -T lcpu,rcpu (e.g. \"0,1\", \"2\" or \",1\")")
    local, comma, remote = v.partition(",")
    if not comma:
        remote = local
    side = [(int(x),) if x.strip() else None for x in (local, remote)]
    return side[0], side[1]


_COMMON = [
    Option("length", ("l", "length"), as_positive_time, "the test length, e.g. \"10s\""),
    Option("local_buffer", ("s", "local_buffer"), as_size, "local socket buffer in bytes, e.g. \"32k\""),
    Option("remote_buffer", ("S", "remote_buffer"), as_size, "remote socket buffer in bytes"),
    Option("nodelay", ("D", "nodelay"), as_bool, "true to set TCP_NODELAY"),
    Option("cc", ("K", "congestion"), as_cc, "congestion control: cubic, bbr or reno (default: the host's)"),
    Option("name", ("name",), str, "a name for the results"),
    Option("start", ("start",), as_time, "start offset, e.g. \"1s\""),
    Option("send_cost", ("send_cost",), as_time, "CPU time per segment sent, e.g. \"2us\""),
    Option("recv_cost", ("recv_cost",), as_time, "CPU time per segment received"),
    Option("call_cost", ("call_cost",), as_time, "CPU time per send() call"),
    Option("port", ("port",), as_port, "the data connection's server port"),
    Option("cwnd_interval", ("cwnd_interval",), as_time, "how often to sample cwnd (0: never)"),
    Option("bind", ("T", "bind"), _cpu_pair, "netperf -T: \"lcpu,rcpu\", \"lcpu,\", \",rcpu\" or one "
           "CPU for both"),
]


class _NetperfTcp(Workload):
    test = ""

    def __init__(self, *, length: float | None = None, local_buffer: int | None = None,
                 remote_buffer: int | None = None, nodelay: bool = False, cc: str | None = None,
                 name: str | None = None, start: float = 0.0, send_cost: float | None = None,
                 recv_cost: float | None = None, call_cost: float | None = None,
                 port: int = NETPERF_DATA_PORT, mtu: int | None = None,
                 cwnd_interval: float = 0.01, bind: tuple | None = None):
        super().__init__(name)
        self.bind = bind or (None, None)
        self.length = length
        self.local_buffer = local_buffer
        self.remote_buffer = remote_buffer
        self.nodelay = nodelay
        self.cc = cc
        self.start_offset = start
        self.send_cost = send_cost
        self.recv_cost = recv_cost
        self.call_cost = call_cost
        self.port = port
        self.mtu = mtu
        self.cwnd_interval = cwnd_interval
        self.client = self.server = None
        self.server_cost = getattr(self, "server_cost", 0.0)
        self.wakeup = 0.0
        self.t0 = self.t1 = 0.0

    def _open(self, ctx: RunContext):
        env = ctx.env
        self.t0 = max(env.now, ctx.start_at + self.start_offset)
        self.t1 = self.t0 + (self.length if self.length is not None else ctx.duration)
        app = (ctx.extra or {}).get("app", {})
        send_cost = self.send_cost if self.send_cost is not None else app.get("send_per_packet", 0.0)
        recv_cost = self.recv_cost if self.recv_cost is not None else app.get("recv_per_packet", 0.0)
        call_cost = self.call_cost if self.call_cost is not None else app.get("send_per_call", 0.0)
        if self.server_cost is None:
            self.server_cost = app.get("rr_processing", 0.0)
        # TCP_RR: each message wakes its reader (sock_def_readable -> try_to_wake_up) before recvmsg
        self.wakeup = app.get("wakeup", 0.0)
        common = dict(cc=self.cc, mtu=self.mtu, nodelay=self.nodelay,
                      send_cost=send_cost, recv_cost=recv_cost, call_cost=call_cost,
                      send_byte_cost=app.get("send_per_byte", 0.0), recv_byte_cost=app.get("recv_per_byte", 0.0))
        self.client, self.server = connect(
            env, ctx.src, ctx.dst, self.port,
            client=dict(sndbuf=self.local_buffer, rcvbuf=self.local_buffer, affinity=self.pinned(self.bind[0], ctx, "T")),
            server=dict(sndbuf=self.remote_buffer, rcvbuf=self.remote_buffer,
                        affinity=self.pinned(self.bind[1], ctx, "T")), **common)
        self.client.sender.rtt_from = self.t0          # what the RTT figures cover (and keep once folded)
        if self.cwnd_interval:
            call_at(env, self.t0, lambda _: self.client.sample_cwnd(self.cwnd_interval, self.t1))
        return env

    @classmethod
    def from_spec(cls, table: dict):
        return cls(**parse_table(table, cls.OPTIONS, tool=f"netperf {cls.test}",
                                 fixed={"tool": ("netperf",), "test": (cls.test,)}))

    def _tcp_metrics(self) -> list[Metric]:
        senders = [self.client.sender, self.server.sender]
        out = [Metric("retransmits", float(sum(s.retransmits for s in senders)), "count")]
        for k, v in rtt_summary(senders, self.t0).items():
            out.append(Metric(k.replace("rtt_", "tcp_rtt_"), v, "ms"))
        return out


class NetperfTcpStream(_NetperfTcp):
    """``netperf -t TCP_STREAM -l L -- -s S -S S -m M``: one bulk transfer client -> server."""

    kind = "netperf_tcp_stream"
    test = "TCP_STREAM"
    OPTIONS = _COMMON + [Option("message", ("m", "message"), as_size, "bytes per send() call")]

    def __init__(self, *, message: int | None = None, **kw):
        super().__init__(**kw)
        self.message = message
        self.meter: GoodputMeter | None = None

    def start(self, ctx: RunContext) -> None:
        env = self._open(ctx)
        self.meter = GoodputMeter(self.t0, self.t1)
        self.server.receiver.on_deliver = self.meter
        size = self.message or self.local_buffer or DEFAULT_SEND_SIZE
        if self.t0 > env.now:
            call_at(env, self.t0, lambda _: self.client.bulk(self.t1, size))
        else:
            self.client.bulk(self.t1, size)

    def metrics(self) -> list[Metric]:
        return [Metric("throughput", self.meter.mbit_per_s(), "Mbit/s")] + self._tcp_metrics()

    def samples(self) -> dict[str, np.ndarray]:
        return {"tcp_rtt": rtt_array_ms([self.client.sender]),
                "cwnd": cwnd_array([self.client.sender], self.t0)}


class NetperfTcpRR(_NetperfTcp):
    """``netperf -t TCP_RR -l L -- -r REQ,RESP``: one transaction at a time on one connection.

    The client writes a request, the server reads it whole, spends
    ``server_cost`` and writes the response; the client reads it whole and
    sends the next request at once.
    """

    kind = "netperf_tcp_rr"
    test = "TCP_RR"
    OPTIONS = _COMMON + [
        Option("rr", ("r", "request_response"), _rr_sizes, "request,response bytes, e.g. \"1,1\""),
        Option("server_cost", ("server_cost",), as_time, "server time per transaction"),
    ]

    def __init__(self, *, rr: tuple[int, int] = (1, 1), server_cost: float | None = None,
                 nodelay: bool = True, **kw):
        self.server_cost = server_cost
        super().__init__(nodelay=nodelay, **kw)
        if len(rr) != 2 or min(rr) < 1:
            raise ConfigError(f"TCP_RR sizes must be two sizes >= 1 byte, got {rr!r}", key="r",
                              fix='write r = "1,1"')
        self.request, self.response = int(rr[0]), int(rr[1])
        self.latencies = DelayStats()      # bounded memory however long the run
        self.transactions = 0
        self._req_t = 0.0
        self._srv_have = 0
        self._cli_have = 0

    def start(self, ctx: RunContext) -> None:
        env = self._open(ctx)
        self.env = env
        self.server.receiver.on_deliver = self._server_reads
        self.client.receiver.on_deliver = self._client_reads
        self.client.sender.write_size = self.request      # one send() per message
        self.server.sender.write_size = self.response
        if self.t0 > env.now:
            call_at(env, self.t0, self._send_request)
        else:
            self._send_request()

    def _send_request(self, _=None) -> None:
        self._req_t = self.env._now
        self.client.write(self.request)

    def _server_reads(self, nbytes: int, now: float) -> None:
        self._srv_have += nbytes
        while self._srv_have >= self.request:
            self._srv_have -= self.request
            now_woken = now + self.wakeup       # the blocked reader woken first (try_to_wake_up)
            if self.server_cost:
                cpu = self.server.endpoint.cpu
                # the server process's turnaround, on whichever core the scheduler finds free first
                done = cpu.serve(now_woken, self.server_cost, None) if cpu is not None else None
                call_at(self.env, done if done is not None else now_woken + self.server_cost,
                        self._respond)
            elif self.wakeup:
                call_at(self.env, now_woken, self._respond)
            else:
                self.server.write(self.response)

    def _respond(self, _=None) -> None:
        self.server.write(self.response)

    def _client_reads(self, nbytes: int, now: float) -> None:
        self._cli_have += nbytes
        if self._cli_have >= self.response:
            self._cli_have -= self.response
            if now <= self.t1:
                self.transactions += 1
                lat = self.latencies.values
                lat.append(now + self.wakeup - self._req_t)
                if len(lat) >= DelayStats.CAPACITY:
                    self.latencies.fold()
                if self.wakeup:
                    call_at(self.env, now + self.wakeup, self._send_request)
                else:
                    self._send_request()

    def metrics(self) -> list[Metric]:
        span = self.t1 - self.t0
        tps = self.transactions / span if span > 0 else 0.0
        out = [Metric("transactions", tps, "1/s"),
               Metric("rtt_mean", 1e3 / tps if tps > 0 else float("nan"), "ms")]
        if self.latencies.count:
            lat = self.latencies
            out += [Metric("latency_mean", lat.mean(1e3), "ms"),          # ms, as netperf prints
                    Metric("latency_p50", lat.percentile(50, 1e3), "ms"),
                    Metric("latency_p99", lat.percentile(99, 1e3), "ms")]
        return out + self._tcp_metrics()

    def samples(self) -> dict[str, np.ndarray]:
        return {"rr_latency": self.latencies.sample() * 1e3}


class NetperfUdpRR(Workload):
    """``netperf -t UDP_RR -l L -- -r REQ,RESP``: one datagram request, one datagram answer, one at a time.

    Runs on :class:`~ovssim.workloads.rr.Exchange`; reports as TCP_RR does (transactions per
    second, ``rtt_mean`` = 1 / rate, latency percentiles).  A lost datagram ends the
    exchange, as it stalls netperf (no timeout without ``-- -e``).
    """

    kind = "netperf_udp_rr"
    test = "UDP_RR"
    OPTIONS = [Option("rr", ("r", "request_response"), _rr_sizes, "request,response bytes, e.g. \"1,1\""),
               Option("length", ("l", "length"), as_positive_time, "the test length, e.g. \"10s\""),
               Option("name", ("name",), str, "a name for the results"),
               Option("start", ("start",), as_time, "start offset, e.g. \"1s\""),
               Option("port", ("port",), as_port, "the data port")]

    def __init__(self, *, rr: tuple[int, int] = (1, 1), length: float | None = None, name: str | None = None,
                 start: float = 0.0, port: int = NETPERF_DATA_PORT):
        super().__init__(name)
        self.ex = Exchange(proto="udp", request=rr[0], response=rr[1], loop="closed", length=length,
                           start=start, port=port)

    @classmethod
    def from_spec(cls, table: dict):
        return cls(**parse_table(table, cls.OPTIONS, tool="netperf UDP_RR",
                                 fixed={"tool": ("netperf",), "test": ("UDP_RR",)}))

    def start(self, ctx: RunContext) -> None:
        self.ex.start(ctx)

    def metrics(self) -> list[Metric]:
        tps = self.ex.transactions_per_s()
        lat = self.ex.rtt_ms()
        out = [Metric("transactions", tps, "1/s"),
               Metric("rtt_mean", 1e3 / tps if tps > 0 else float("nan"), "ms")]
        if lat.size:
            out += [Metric("latency_mean", float(lat.mean()), "ms"),
                    Metric("latency_p50", float(np.percentile(lat, 50)), "ms"),
                    Metric("latency_p99", float(np.percentile(lat, 99)), "ms")]
        return out + [Metric("lost", float(self.ex.lost_messages()), "messages")]

    def samples(self) -> dict[str, np.ndarray]:
        return {"rr_latency": self.ex.rtt_ms()}


def netperf_from_spec(table: dict) -> Workload:
    """The netperf workload a table names with ``test`` (default TCP_STREAM, as netperf)."""
    test = str(table.get("test", "TCP_STREAM")).upper()
    classes = {"TCP_STREAM": NetperfTcpStream, "TCP_RR": NetperfTcpRR, "UDP_RR": NetperfUdpRR}
    cls = classes.get(test)
    if cls is None:
        raise ConfigError(f"netperf test {table.get('test')!r} is not simulated", key="test",
                          fix="use test = \"TCP_STREAM\", \"TCP_RR\" or \"UDP_RR\"")
    t = dict(table)
    t["test"] = test
    return cls.from_spec(t)


NetperfTcpRr = NetperfTcpRR     # the spelling ovssim.workloads.registry uses
