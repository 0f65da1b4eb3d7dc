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
default false: a thread per stream, as iperf 2 and iperf3 3.16+).  ``control``: iperf3's control
connection (default: true for ``tool = "iperf3"``, false for ``iperf``/``iperf2``, which have none).
``cpus``: ``taskset -c LIST`` around client and server, as the collector's campaign key ``cpus`` runs
them (a string such as ``"0"`` or ``"0-1"``, or a list of core numbers): every stream's sending and receiving
work on those cores of its host (:meth:`~ovssim.workloads.base.Workload.pinned`).
``cc_after_connect``: ``-C`` is set on the established stream (default: true for ``tool = "iperf3"``:
``iperf_create_streams`` calls ``setsockopt(TCP_CONGESTION)`` after ``protocol->connect()``, the server
on the accepted socket), so the connection starts under the host's default congestion control and a
BBR default leaves the stream paced whatever ``-C`` names (see :mod:`ovssim.tcp.socket`).

``control`` is iperf3's set-up (src/iperf_client_api.c, iperf_server_api.c, iperf_api.c): the client
connects a control connection to the server's port (``iperf_connect``; TCP_NODELAY on both ends) and
writes its 37-byte cookie; the server answers PARAM_EXCHANGE (``iperf_accept``; a state byte per
``iperf_set_send_state``); the client writes the parameters (``send_parameters`` -> ``JSON_write``: a
4-byte length, then ~150 bytes of JSON); the server, having read them (``get_parameters``), answers
CREATE_STREAMS; the client connects the streams one after another, each a blocking connect and then its
cookie (``iperf_create_streams`` -> ``iperf_tcp_connect``); once the server has read every stream's
cookie it writes TEST_START and TEST_RUNNING (``iperf_run_server``), and the ``-O`` + ``-t`` seconds and
the writes start when the client reads TEST_RUNNING (``iperf_handle_message_client``,
``iperf_run_client``).  Each read costs its reader ``app.wakeup``; an unanswered SYN is resent after
1, 2, 4 ... s.  The control connection's packets come first, so a cold OVS cache installs its
megaflows on them (NORMAL wildcards the ports) and the streams' handshakes find them; it then stays
idle (the end-of-test exchange, after the ``-t`` seconds, is not simulated).  ``launched_at``: the
client's start; ``t0``: TEST_RUNNING; ``control_log``: (step, time) pairs.

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
from ..tcp.spec import (Option, as_bool, as_cc, as_count, as_cpu_list, as_port, as_positive_time, as_size,
                        as_time, parse_table)
from ..tcp.stats import GoodputMeter, cwnd_array, jain_index, rtt_array_ms, rtt_summary
from .base import Metric, RunContext, Workload

IPERF3_PORT = 5201
IPERF3_TCP_LENGTH = 128 * 1024
IPERF3_DEFAULT_TIME = 10.0
COOKIE_SIZE = 37          # iperf.h COOKIE_SIZE: make_cookie's 36 characters and a NUL
JSON_LENGTH = 4           # JSON_write: the JSON's length, 32 bits, written before it
# send_parameters' unformatted JSON for a TCP test (tcp, omit, time, num, blockcount, parallel, len,
# pacing_timer, congestion, client_version): about 150 bytes
PARAMS_SIZE = 150
# the state bytes the client reads, in order (iperf_handle_message_client)
CLIENT_STATES = ("PARAM_EXCHANGE", "CREATE_STREAMS", "TEST_START", "TEST_RUNNING")
SYN_TIMEOUT = 1.0         # TCP_TIMEOUT_INIT: a SYN without answer is sent again, the wait doubling
SYN_RETRIES = 6           # net.ipv4.tcp_syn_retries
# iperf3's server loop (iperf_run_server): select() (pselect6), two clock reads for its timers (a system call
# each where there is no vDSO clock, as in UML: arch/x86/um/vdso/um_vdso.c), and per readable stream Nread's
# read()s until one returns EAGAIN -- per wake-up by one segment: 5 system calls.  Measured inside UML under
# the uml-schedulers campaign's load (data/uml/2026-11-28/uml-cpucost): strace -c 2.02 clock_gettime per
# pselect6 (results-strace.json), and without strace 2.006 read()s per wake-up (results-calls.json: syscr /
# voluntary_ctxt_switches of the server, 15,788 / 7,872 in 5.5 s, 0.93 wake-ups per segment)
IPERF3_SERVER_WAKE_CALLS = 5


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
        Option("cc_after_connect", ("cc_after_connect",), as_bool, "true: -C is set on the established "
               "socket, after the host's default congestion control started it (default: true for tool iperf3)"),
        Option("cpus", ("cpus",), as_cpu_list, "taskset -c LIST for client and server, e.g. \"0\" or \"0-1\""),
        Option("control", ("control",), as_bool, "true: iperf3's control connection and parameter exchange "
               "before the streams connect (default: true for tool iperf3)"),
    ]

    def __init__(self, *, parallel: int = 1, window: int | None = None, time: float | None = None,
                 cc: str | None = None, length: int = IPERF3_TCP_LENGTH, mss: int | None = None,
                 nodelay: bool = False, name: str | None = None, start: float = 0.0,
                 send_cost: float | None = None, recv_cost: float | None = None,
                 call_cost: float | None = None, port: int = IPERF3_PORT,
                 stagger: float = 1e-3, mtu: int | None = None, cwnd_interval: float = 0.01,
                 omit: float = 0.0, one_thread: bool = False, control: bool = False,
                 cc_after_connect: bool = False, cpus: tuple[int, ...] | None = None):
        super().__init__(name)
        if parallel < 1:
            raise ConfigError(f"iperf -P must be >= 1, got {parallel}", key="P", fix="use P = 1 or more")
        if omit < 0:
            raise ConfigError(f"iperf -O must be >= 0, got {omit}", key="O", fix='e.g. O = "1s"')
        self.omit = omit
        self.one_thread = one_thread
        self.control = control
        self.cc_after_connect = cc_after_connect
        self.cpus = cpus
        self.control_conn = None          # (client, server) sockets of iperf3's control connection
        self.server_wake_calls = 0        # the server's system calls per wake-up (iperf3's: from_spec), app.syscall each
        self.control_log: list[tuple[str, float]] = []
        self.launched_at = 0.0
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
        kw = parse_table(table, cls.OPTIONS, tool="iperf TCP",
                         fixed={"tool": ("iperf", "iperf2", "iperf3"), "proto": ("tcp",)})
        kw.setdefault("control", str(table.get("tool", "")).lower() == "iperf3")
        kw.setdefault("cc_after_connect", str(table.get("tool", "")).lower() == "iperf3")
        wl = cls(**kw)
        if str(table.get("tool", "")).lower() == "iperf3":
            wl.server_wake_calls = IPERF3_SERVER_WAKE_CALLS
        return wl

    def start(self, ctx: RunContext) -> None:
        env = self.env = ctx.env
        self._src, self._dst = ctx.src, ctx.dst
        self.launched_at = self.t0 = max(env.now, ctx.start_at + self.start_offset)
        self._length = self.time if self.time is not None else (ctx.duration or IPERF3_DEFAULT_TIME)
        self.t1 = self.t0 + self.omit + self._length
        measured_from = self.t0 + self.omit
        app = (ctx.extra or {}).get("app", {})
        send_cost = self.send_cost if self.send_cost is not None else app.get("send_per_packet", 0.0)
        recv_cost = self.recv_cost if self.recv_cost is not None else app.get("recv_per_packet", 0.0)
        call_cost = self.call_cost if self.call_cost is not None else app.get("send_per_call", 0.0)
        costs = dict(send_cost=send_cost, recv_cost=recv_cost, call_cost=call_cost,
                     send_byte_cost=app.get("send_per_byte", 0.0), recv_byte_cost=app.get("recv_per_byte", 0.0))
        cpus = self.pinned(self.cpus, ctx)
        self._stream_opts = dict(cc=self.cc, mtu=self.mtu, mss=self.mss, nodelay=self.nodelay,
                                 sndbuf=self.window, rcvbuf=self.window, cc_after_connect=self.cc_after_connect,
                                 affinity=cpus, **costs)
        self._control_opts = dict(mtu=self.mtu, nodelay=True, affinity=cpus, **costs)   # -C, -M, -w, -N: the streams'
        self._wakeup = app.get("wakeup", 0.0)
        self._syscall = app.get("syscall", 0.0)
        offsets = np.zeros(self.parallel)
        if self.stagger > 0 and self.parallel > 1 and ctx.rng is not None:
            offsets = ctx.rng("iperf").uniform(0.0, self.stagger, self.parallel)
        self._offsets = offsets
        self.retx_omitted = 0       # retransmissions during -O, left out as iperf3 leaves them out
        if self.control:
            # the -t clock starts at TEST_RUNNING, after the control connection's exchange
            self.t0 = self.t1 = float("inf")
            call_at(env, self.launched_at, self._control_connect)
            return
        for i in range(self.parallel):
            c, s = self._open_stream(measured_from, self.t1)
            self._schedule_stream(i, c, s)
        if self.omit > 0:
            call_at(env, measured_from, self._end_omit)

    def _open_stream(self, measured_from: float, until: float):
        """Connect one stream (its SYN leaves now); its goodput counts from ``measured_from`` to ``until``."""
        c, s = connect(self.env, self._src, self._dst, self.port, **self._stream_opts)
        c.sender.rtt_from = measured_from       # what the RTT figures cover (and keep once folded)
        if self.one_thread and self.streams:
            c.sender.share_core(self.streams[0][0].sender)
        meter = GoodputMeter(measured_from, until)
        s.receiver.on_deliver = meter
        if self._syscall and self.server_wake_calls:      # the server's reads: its system calls' host CPU
            s.receiver.syscall, s.receiver.wake_calls = self._syscall, self.server_wake_calls
        self.streams.append((c, s))
        self.meters.append(meter)
        return c, s

    def _schedule_stream(self, i: int, c, s) -> None:
        """Stream ``i`` writes from ``t0`` (+ its stagger) to ``t1``; its cwnd and windows sampled from ``t0``."""
        env = self.env
        call_at(env, self.t0 + float(self._offsets[i]), lambda _, c=c: c.bulk(self.t1, self.length))
        if self.cwnd_interval:
            call_at(env, self.t0, lambda _, c=c: c.sample_cwnd(self.cwnd_interval, self.t1))
            # ss -ti of both ends over time: the sender's in-flight and send buffer, the receiver's window
            call_at(env, self.t0, lambda _, c=c, s=s: self.windows.append(
                (c.sample_windows(self.cwnd_interval, self.t1), s.sample_windows(self.cwnd_interval, self.t1))))

    def _end_omit(self, _=None) -> None:
        self.retx_omitted = sum(c.sender.retransmits for c, _ in self.streams)

    @property
    def late_start(self) -> float:
        """How much later than launched the ``-t`` clock started (the control exchange; 0 without one):
        the runner runs that much longer, so the test's seconds are simulated whole."""
        return self.t0 - self.launched_at if self.control and self.t0 < float("inf") else 0.0

    # -- iperf3's control connection ------------------------------------------------------------
    def _log(self, what: str) -> None:
        self.control_log.append((what, self.env._now))

    def _read_then(self, now: float, fn) -> None:
        """A reader blocked in select() runs ``fn`` once woken (``app.wakeup``) for the message read at ``now``."""
        if self._wakeup > 0.0:
            call_at(self.env, now + self._wakeup, fn)
        else:
            fn(None)

    def _when_connected(self, sock, fn, wait: float = SYN_TIMEOUT, tries: int = SYN_RETRIES) -> None:
        """Run ``fn(now)`` when ``sock``'s SYN-ACK arrives; resend the SYN while none does."""
        sock.on_established = fn

        def retry(_):
            if sock.on_established is fn and tries > 0:
                sock.syn()
                self._when_connected(sock, fn, 2 * wait, tries - 1)
        call_at(self.env, self.env._now + wait, retry)

    def _control_connect(self, _=None) -> None:
        """``iperf_connect``: the control connection, then the cookie on it."""
        c, s = connect(self.env, self._src, self._dst, self.port, **self._control_opts)
        self.control_conn = (c, s)
        self._srv_have = self._srv_step = self._cli_states = 0
        c.receiver.on_deliver = self._client_reads
        s.receiver.on_deliver = self._server_reads
        self._log("control_syn")

        def established(now):
            self._log("cookie")
            c.write(COOKIE_SIZE)
        self._when_connected(c, established)

    def _server_reads(self, nbytes: int, now: float) -> None:
        """The server's side: the cookie -> PARAM_EXCHANGE; the parameters -> CREATE_STREAMS."""
        self._srv_have += nbytes
        need = (COOKIE_SIZE, JSON_LENGTH + PARAMS_SIZE)
        while self._srv_step < 2 and self._srv_have >= need[self._srv_step]:
            self._srv_have -= need[self._srv_step]
            state = CLIENT_STATES[self._srv_step]
            self._srv_step += 1
            self._read_then(now, lambda _, st=state: (self._log(st), self.control_conn[1].write(1)))

    def _client_reads(self, nbytes: int, now: float) -> None:
        """The client reads state bytes; each moves the test on (iperf_handle_message_client)."""
        first = self._cli_states
        self._cli_states += nbytes
        self._read_then(now, lambda _, a=first, b=self._cli_states: self._client_handle(a, b))

    def _client_handle(self, first: int, last: int) -> None:
        for k in range(first, min(last, len(CLIENT_STATES))):
            state = CLIENT_STATES[k]
            if state == "PARAM_EXCHANGE":              # send_parameters: JSON_write's two writes
                self._log("params")
                self.control_conn[0].write(JSON_LENGTH)
                self.control_conn[0].write(PARAMS_SIZE)
            elif state == "CREATE_STREAMS":
                self._streams_accepted = 0
                self._connect_stream(0)
            elif state == "TEST_RUNNING":              # TEST_START came with it: the clock starts
                self._test_running()

    def _connect_stream(self, i: int) -> None:
        """``iperf_create_streams``: stream ``i``'s blocking connect, its cookie, then the next stream."""
        c, s = self._open_stream(float("inf"), float("inf"))    # nothing counts before TEST_RUNNING
        self._log(f"stream{i}_syn")
        have = [0]

        def server_reads(nbytes, now):                 # iperf_tcp_accept reads the stream's cookie
            have[0] += nbytes
            if have[0] >= COOKIE_SIZE:
                self.meters[i].chain = None
                self._read_then(now, self._stream_accepted)

        self.meters[i].chain = server_reads

        def established(now):
            # iperf_tcp_connect writes the cookie; iperf_create_streams then sets -C (TCP_CONGESTION)
            c.write(COOKIE_SIZE, before_setsockopt=True)
            c.set_congestion_control_once_acked()
            if i + 1 < self.parallel:
                self._connect_stream(i + 1)
        self._when_connected(c, established)

    def _stream_accepted(self, _=None) -> None:
        """The server's accept loop: once every stream is in, TEST_START and TEST_RUNNING (two writes)."""
        self._streams_accepted += 1
        if self._streams_accepted == self.parallel:
            self._log("TEST_START")
            srv = self.control_conn[1]
            srv.write(1)
            srv.write(1)

    def _test_running(self) -> None:
        """The client's TEST_RUNNING: the ``-O`` + ``-t`` seconds start now, and the streams' writes."""
        now = self.env._now
        self._log("TEST_RUNNING")
        self.t0 = now
        self.t1 = now + self.omit + self._length
        for i, ((c, s), meter) in enumerate(zip(self.streams, self.meters)):
            c.sender.rtt_from = meter.start = meter.last_t = now + self.omit
            meter.end = self.t1
            self._schedule_stream(i, c, s)
        if self.omit > 0:
            call_at(self.env, now + self.omit, self._end_omit)

    def metrics(self) -> list[Metric]:
        if not self.streams:             # the control exchange never got to CREATE_STREAMS
            return [Metric("throughput", 0.0, "Mbit/s"), Metric("retransmits", 0.0, "count")]
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
