"""iperf UDP stream: ``iperf -u -b RATE -l LEN -t SECS`` (the thesis's jitter test).

The client sends ``LEN``-byte datagrams at a constant ``RATE`` of payload bits
(iperf paces one datagram every LEN*8/RATE seconds), each carrying its
sequence number and send timestamp; the server reports what iperf's server
reports: throughput (payload bits over the interval from first to last
datagram received), jitter (RFC 3550 running estimate, see
:class:`~ovssim.metrics.JitterEstimator`), loss (datagrams missing by
sequence number, %) and out-of-order datagrams.  Seed 000 §5.1: 1470-byte
datagrams at 95 Mbit/s for 10 s, 100 iterations.

The server's socket receive buffer (``__udp_enqueue_schedule_skb``, net/ipv4/udp.c): a datagram is
queued on the socket, charged its skb truesize, unless ``sk_rmem_alloc`` already exceeds ``sk_rcvbuf``
(``net.core.rmem_default``, 212992 bytes: iperf and qperf set no SO_RCVBUF by default), in which case it
is dropped (UDP ``RcvbufErrors``, counted as loss); ``recvmsg`` releases the charge.  It fills only when
the reader's ``recv()`` (profile ``app.recv_per_packet``) is slower than the datagrams arrive.  A datagram
that finds the reader blocked (its last ``recv()`` done) first wakes it (``sock_def_readable`` ->
``try_to_wake_up``): the run's reader wake-up (``app.wakeup``, plus ``app.idle_wake`` with the idle share),
drawn per wake-up from a lognormal of shape :data:`READER_WAKE_SHAPE` -- so the wake-ups' spread is part of
the jitter the reader sees, as iperf's server takes its receive time in user space after the read.

A datagram larger than the sender's MTU (``-l``/``-m`` above 1472 bytes at MTU 1500; qperf udp_bw's default
32 KiB) leaves as IP fragments (:func:`~ovssim.workloads.ipfrag.ip_fragments`), each a frame of its own through the path, and counts
as received only when the receiver has reassembled all of them (:class:`~ovssim.workloads.ipfrag.Reassembly`): one fragment dropped
anywhere loses the datagram.

``jitter_mean`` is the steady-state estimate of the jitter iperf reports: J is an
exponentially weighted mean of |D| (gain 1/16), so once the stream is stationary
E[J] = E[|D|], and the mean of |D| over the whole run (after MSER-5 warm-up deletion,
:class:`ovssim.steady.MeanAbsDiff`) estimates it from every datagram instead of the last ~16
that iperf's final J remembers: the same expectation with a far smaller variance
(thesis UDP test: 0.3 % against 21 % between 10-s replications).

``tool = "iperf3"`` (:class:`Iperf3Udp`) sends as iperf3 (3.x, single-threaded
client) does instead: no per-datagram spacing, but a throttle.  After each
datagram the client compares its average rate since the test started with
``-b``; while below it sends the next one at once (back to back, one sendto()
after another), once at or above it stops until its periodic pacing timer
(``--pacing-timer``, default 1000 us) fires and finds it below again
(``iperf_check_throttle``, ``iperf_send`` in esnet/iperf src/iperf_api.c).
The timer wakes the client's select() a timer slack late (50 us, the Linux
default for a normal task, prctl(2) PR_SET_TIMERSLACK).  So a 40 Mbit/s
stream of 1400-byte datagrams leaves as a burst of 3-4 datagrams every
1 ms (measured here: 3.58 every 1000.0 us, validation/iperf3_pacing_check.md): behind a shaper whose bucket holds one packet (tc's HTB default
burst with high-resolution timers) the burst is spread out and the receiver's
jitter is a sizeable fraction of a millisecond, where iperf 2's evenly spaced
datagrams see almost none.
"""
from __future__ import annotations

import math

import numpy as np

from .. import units
from ..distributions import Sampler
from ..errors import ConfigError
from ..metrics import DelayStats, JitterEstimator
from ..steady import MeanAbsDiff
from ..packet import FlowKey, Packet, udp_frame_size
from ..path.afpacket import SockBuf, truesize
from ..path.cpu import conn_key
from ..sched import FIRE, call_at, schedule
from ..tcp.defaults import RMEM_DEFAULT
from .base import Metric, RunContext, Workload
from .ipfrag import Reassembly, ip_fragments
from .udp_sndbuf import UdpSendBuffer

IPERF_PORT = 5001
# the spread of a reader's wake-up on another, idle core: sockperf ping-pong across this machine's two cores
# (28 Nov, idle) took 32.4 us one way at the median and 42.1 at the 90th percentile, against 6.9 / 8.8 us with
# both ends on one core: wake-ups of ~25.5 / 35 us, a lognormal of shape ln(35 / 25.5) / 1.2816 = 0.25
READER_WAKE_SHAPE = 0.25


class _Server:
    def __init__(self, wl: "IperfUdp"):
        self.wl = wl

    def put(self, pkt) -> None:
        self.wl._received(pkt)


class IperfUdp(Workload):
    kind = "iperf-udp"
    KEYS = {"tool", "proto", "name", "from", "to", "b", "l", "t", "start", "tos", "port", "trace_every"}
    LENGTH_FLAG = ("iperf -l", "l")         # the datagram size's flag and key, for its error
    # iperf 2's system calls per datagram at 1 Mbit/s of 1470 B (-e), strace -c inside UML under the
    # uml-schedulers campaign's load (data/uml/2026-11-28/uml-cpucost, results-calls.json): the client's write,
    # clock_nanosleep (its pacing and its reporter thread's) and clock_gettime, 2,212 calls for 599 datagrams;
    # the server's recvmsg and its reporter's clock_nanosleep, 1,047 calls.  Profile app.syscall each
    CLIENT_CALLS = 3.69
    SERVER_CALLS = 1.75

    def __init__(self, rate_bps: float = 1e6, length: int = 1470, duration: float | None = None,
                 start: float = 0.0, tos: int = 0, port: int = IPERF_PORT, name: str | None = None,
                 trace_every: int = 0):
        super().__init__(name)
        if not rate_bps > 0:
            raise ConfigError(f"iperf -b must be > 0, got {rate_bps}", key=f"workload.{self.name}.b",
                              fix='write e.g. b = "95mbit"')
        if not 1 <= length <= 65507:
            flag, key = self.LENGTH_FLAG
            raise ConfigError(f"{flag} {length} is outside 1..65507 bytes", key=f"workload.{self.name}.{key}",
                              fix=f'write e.g. {key} = "1470b"')
        if rate_bps / (length * 8) > 5e6:
            raise ConfigError(f"iperf -b {units.fmt_rate(rate_bps)} with -l {length} is over 5 million "
                              "datagrams/s", key=f"workload.{self.name}.b", fix="lower -b or raise -l")
        self.rate_bps, self.length, self.duration = rate_bps, length, duration
        self.start_at, self.tos, self.port, self.trace_every = start, tos, port, trace_every

    @classmethod
    def from_spec(cls, t: dict) -> "IperfUdp":
        bad = set(t) - cls.KEYS
        if bad:
            raise ConfigError(f"unknown iperf UDP option {sorted(bad)[0]!r}",
                              key=f"workload.{t.get('name')}.{sorted(bad)[0]}",
                              fix="iperf UDP takes: b (rate), l (length), t (time), start, tos, port")
        try:
            return cls(rate_bps=units.link_rate(t.get("b", "1mbit"), "iperf -b"),
                       length=int(units.size(t.get("l", 1470), "iperf -l")),
                       duration=units.duration(t["t"], "iperf -t") if "t" in t else None,
                       start=units.time(t.get("start", 0), "start"), tos=units.whole(t.get("tos", 0), "iperf -S (tos)", 0, 255),
                       port=units.whole(t.get("port", IPERF_PORT), "iperf -p (port)", 1, 65535), name=t.get("name"),
                       trace_every=units.whole(t.get("trace_every", 0), "trace_every", 0))
        except ConfigError:
            raise
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"bad iperf UDP option: {exc}", key=f"workload.{t.get('name')}",
                              fix='e.g. b = "95mbit", l = "1470b", t = "10s"') from None

    # -- running -----------------------------------------------------------------
    def start(self, ctx: RunContext) -> None:
        self.env = ctx.env
        self.src, self.dst = ctx.src, ctx.dst
        self.flow = FlowKey(ctx.src.name, ctx.dst.name, ctx.src.ephemeral_port(), self.port, "udp")
        ctx.dst.bind("udp", self.port, _Server(self))
        dur = self.duration if self.duration is not None else ctx.duration
        self.t0 = ctx.start_at + self.start_at
        self.t_end = self.t0 + dur
        self.gap = self.length * 8.0 / self.rate_bps
        self.send_key = conn_key(self.flow)            # the client's core: its connection's (run to completion)
        self.size = udp_frame_size(self.length)
        # a datagram above the sender's MTU leaves as IP fragments, reassembled by the receiver (or None)
        frags = ip_fragments(self.length, getattr(ctx.src, "mtu", 1500) or 1500)
        self._frag = None if frags is None else (frags, Reassembly(frags))
        self.sent = 0
        self.rx = 0
        self.rx_bytes = 0
        self.first_rx = self.last_rx = None
        self.max_seq = -1
        self.out_of_order = 0
        self.jitter = JitterEstimator()
        self.delays = DelayStats()     # bounded memory however long the run (DelayStats.fold)
        self.abs_diff = MeanAbsDiff()  # |D| block means for jitter_mean, bounded too
        self.stage_samples: dict[str, list] = {}
        # run to completion (the source shares the host's kernel: Endpoint.inline_tx): the next sendto()
        # waits for this datagram's own softirq work (see _carry) -- the open context [key, done], or None
        cpu = ctx.src.cpu
        self._rtc = [self.send_key, 0.0] if getattr(ctx.src, "inline_tx", False) else None
        if self._rtc is not None:
            cpu.add_sender(self.send_key % cpu.cores)
        self.send_cost = ctx.extra.get("app", {}).get("send_per_packet", 0.0)
        # on a host that schedules threads, the sending tool is one (ovssim.cpu), first on its flow's core
        self.send_thread = cpu.app_thread("udp-send", self.send_key) if cpu is not None else None
        # the server's recv() per datagram and when its last one ended, one attribute (an instance with more
        # than 30 attributes loses CPython's fast attribute access; this one is on every datagram's path):
        # one thread, so one recv() at a time, on whichever core the scheduler finds free first; and its
        # socket's receive buffer: SockBuf refuses at alloc >= limit, udp.c at sk_rmem_alloc > sk_rcvbuf
        # and the reader's wake-up when a datagram finds it blocked in select()/recvfrom() (its mean the run's
        # app wake-up, drawn per wake-up: READER_WAKE_SHAPE)
        wake = ctx.extra.get("app", {}).get("wakeup", 0.0)
        self._recv = [ctx.extra.get("app", {}).get("recv_per_packet", 0.0), 0.0,
                      SockBuf(RMEM_DEFAULT + 1, f"{self.name}.rcvbuf"),
                      Sampler({"dist": "lognorm", "s": READER_WAKE_SHAPE,
                               "scale": wake / math.exp(READER_WAKE_SHAPE ** 2 / 2)}, ctx.rng("reader-wake"))
                      if wake > 0.0 else None]
        # and the host CPU of the server's and the client's system calls per datagram (app.syscall; 0: none)
        syscall = ctx.extra.get("app", {}).get("syscall", 0.0)
        self._recv += [self.SERVER_CALLS * syscall, self.CLIENT_CALLS * syscall]
        # a path that keeps the skbs charged fills the socket's send buffer and blocks sendmsg (UdpSendBuffer)
        self.sndbuf = UdpSendBuffer(self.env) if getattr(ctx.src, "tsq", False) else None
        # the timer's Call is its own argument, so _send can re-arm it (no new object per
        # datagram, and no extra attribute: 30 would cost CPython's fast attribute access)
        timer = call_at(self.env, self.t0, self._send)
        timer.arg = timer

    def _send(self, timer=None) -> None:
        env = self.env
        now = env._now
        if now >= self.t_end - 1e-12:
            return
        buf = self.sndbuf
        if buf is not None and buf.alloc >= buf.limit:
            buf.wait(timer)                # sendmsg blocks until the charge has fallen to half
            return
        seq = self.sent
        pkt = Packet(self.flow, self.size, now, self.length, seq, None, 0, self.tos)
        if buf is not None:
            buf.charge(pkt)
        if self.trace_every and seq % self.trace_every == 0:
            pkt.stamps = {"app.send": now}
        src = self.src
        cpu = src.cpu
        nxt = now + self.gap
        if self._recv[5] and cpu is not None:
            cpu.account(self._recv[5], self.send_key, self.send_thread)
        if self.send_cost and cpu is not None:
            # the sendto() runs on the sender's CPU: the tool cannot send the next
            # datagram before this one's system call is done (a CPU-bound iperf
            # falls behind its -b target, as the real one does)
            done = (cpu.serve(now, self.send_cost, self.send_key) if self.send_thread is None else
                    cpu.run(self.send_thread, now, self.send_cost))
            if done is None:
                done = now + self.send_cost
            pkt.t = done
            if done > nxt:
                nxt = done
        self.sent = seq + 1
        src.sent += 1                  # src.send(pkt), inlined
        rtc = self._rtc
        if self._frag is not None:
            soft = self._carry(pkt)
            if soft > nxt:
                nxt = soft
        elif rtc is None:
            src.out.put(pkt)
        else:                          # _carry(pkt), inlined: the datagram's softirq work on this task's CPU
            rtc[1] = 0.0
            cpu.tx_ctx = rtc
            src.out.put(pkt)
            cpu.tx_ctx = None
            if rtc[1] > nxt:
                nxt = rtc[1]
        # call_at(env, nxt, self._send) with the timer's own Call, which has just fired:
        # the same heap entry SimPy would get, without a new object per datagram
        if timer is None:
            timer = call_at(env, nxt, self._send)
            timer.arg = timer
        else:
            timer.callbacks = FIRE
            schedule(env, nxt, timer)

    def _carry(self, pkt) -> float:
        """Hand ``pkt`` to the endpoint's device; return when the sending task's CPU is done with it.

        An endpoint sharing the host's kernel (``inline_tx``: a container's veth, bare metal) carries its
        datagram through softirq work on the sending task's own CPU before ``sendto()`` returns:
        ``udp_sendmsg`` -> ``ip_finish_output2`` -> ``__dev_queue_xmit`` (net/core/dev.c) -> ``veth_xmit``
        (drivers/net/veth.c), which orphans the skb (``__dev_forward_skb`` -> ``skb_scrub_packet``: the
        socket's ``sk_wmem_alloc`` charge ends there, so a UDP socket's send buffer never fills behind a
        veth) and queues it on this CPU's backlog (``__netif_rx`` -> ``enqueue_to_backlog``, dropped past
        ``netdev_max_backlog``) -- or, with an XDP program on the peer, its ``ptr_ring`` and NAPI; the
        ``local_bh_enable`` that ends ``__dev_queue_xmit`` runs the backlog at once (``net_rx_action`` ->
        ``process_backlog`` -> ``__netif_receive_skb``).  That softirq pass goes as far as the first
        queue another task drains: an AF_PACKET socket (``packet_rcv``, net/packet/af_packet.c: OVS's
        userspace datapath reads it; dropped when ``sk_rcvbuf`` is full), an AF_XDP rx ring (the PMD
        polls it; dropped when full), or through the kernel datapath or a Linux bridge and the peer veth
        to the receiving socket (``udp_rcv`` -> ``__udp_enqueue_schedule_skb``, net/ipv4/udp.c; dropped
        when its ``sk_rcvbuf`` is full).  Nothing in it waits for the path: ``sendto()`` returns whether
        the datagram was queued or dropped, so the sender is paced by its own CPU alone, never by what
        the path delivers.

        Here: the work that the packet's elements charge, synchronously, to this flow's key on the
        host's :class:`~ovssim.cpu.pool.CpuPool` while the context is open (``CpuPool.tx_ctx``); an element
        that hands the packet to another thread closes it (OVS's netdev datapath, whose thread reads
        the AF_PACKET socket; an AF_XDP ring is polled later, from an event of its own).  The work of
        other tasks on the same core (the receiver's ``recvmsg``, ovs-vswitchd's pass) does not hold the
        next ``sendto()`` back unless it occupies the core when that ``sendto()`` needs it.
        """
        src = self.src
        rtc = self._rtc
        if rtc is None:
            self._put(pkt)
            return 0.0
        cpu = src.cpu
        rtc[1] = 0.0
        cpu.tx_ctx = rtc
        try:
            self._put(pkt)
        finally:
            cpu.tx_ctx = None
        return rtc[1]

    def _put(self, pkt) -> None:
        """The datagram onto the wire: one frame, or its IP fragments one after another (each through
        ``ip_finish_output2`` and the device on its own, the sender's softirq work repeated per fragment),
        all with the datagram's sequence number and payload size (the receiver counts a reassembled one)."""
        frag = self._frag
        out = self.src.out
        if frag is None:
            out.put(pkt)
            return
        t, created, seq, flow, length, tos, stamps = (pkt.t, pkt.created, pkt.seq, pkt.flow, pkt.payload, pkt.tos,
                                                      pkt.stamps)
        owner = pkt.owner
        frags = []
        for size in frag[0]:
            f = Packet(flow, size, created, length, seq, None, 0, tos)
            f.t = t
            f.stamps = None if stamps is None else dict(stamps)
            if owner is not None:
                f.owner, f.wmem = owner, truesize(size)
            frags.append(f)
        if owner is not None:              # the datagram's charge passes to its fragments' skbs, as gso.segment
            owner.tsq_charge(sum(f.wmem for f in frags) - pkt.wmem)      # passes a GSO skb's to its segments
            pkt.owner = None
        for f in frags:
            out.put(f)

    def _received(self, pkt) -> None:
        now = self.env._now
        t = pkt.t if pkt.t > now else now
        frag = self._frag
        if frag is not None and not frag[1].add(pkt, t):
            return                         # a fragment queued for reassembly (or dropped there)
        cpu = self.dst.cpu
        recv = self._recv
        if recv[0] and cpu is not None:
            sock = recv[2]
            size = truesize(pkt.size) if frag is None else frag[1].truesize
            if not sock.charge(t, size):
                return                     # the socket's receive buffer is full: a drop
            start = recv[1]
            if t > start:                  # the reader was blocked: woken first (try_to_wake_up)
                start = t if recv[3] is None else t + recv[3].next()
            done = cpu.serve(start, recv[0], None)
            if done is None:
                sock.release(size)
                return                     # socket receive path refused: a drop
            sock.release_at(done, size)    # recvmsg has dequeued it (udp_rmem_release)
            t = recv[1] = done
        if recv[4] and cpu is not None:
            cpu.account(recv[4])
        self.rx += 1
        self.rx_bytes += pkt.payload
        if self.first_rx is None:
            self.first_rx = t
        self.last_rx = t
        if pkt.seq < self.max_seq:
            self.out_of_order += 1
        else:
            self.max_seq = pkt.seq
        self.jitter.update(pkt.created, t)
        delays = self.delays.values
        delays.append(t - pkt.created)
        if len(delays) >= DelayStats.CAPACITY:
            self.abs_diff.add(delays)            # before the raw values are folded away
            self.delays.fold()
        if pkt.stamps is not None:
            stamps = sorted(pkt.stamps.items(), key=lambda kv: kv[1])
            stamps.append(("app.recv", t))
            for (a, ta), (b, tb) in zip(stamps, stamps[1:]):
                self.stage_samples.setdefault(f"{a}->{b}", []).append(tb - ta)

    # -- results -------------------------------------------------------------------
    def metrics(self) -> list[Metric]:
        span = (self.last_rx - self.first_rx) if self.rx > 1 else 0.0
        thr = (self.rx_bytes * 8 / span / 1e6) if span > 0 else 0.0
        lost = max(0, self.sent - self.rx)
        d = self.delays
        jitter_mean = self.abs_diff.mean(tail=d.values) * 1e3 if self.rx >= 3 else float("nan")   # before d folds
        return [Metric("throughput", thr, "Mbit/s"),
                # undefined until two datagrams arrived (iperf prints none for an empty interval)
                Metric("jitter", self.jitter.jitter * 1e3 if self.rx >= 2 else float("nan"), "ms"),
                Metric("jitter_mean", jitter_mean, "ms"),
                Metric("loss", 100.0 * lost / self.sent if self.sent else 0.0, "%"),
                Metric("out_of_order", float(self.out_of_order), "datagrams"),
                Metric("delay_mean", d.mean() * 1e3, "ms"),
                Metric("delay_p99", d.percentile(99) * 1e3, "ms")]

    def samples(self) -> dict[str, np.ndarray]:
        out = {"one_way_delay": self.delays.sample()}
        for k, v in self.stage_samples.items():
            out[f"stage:{k}"] = np.asarray(v)
        return out


class Iperf3Udp(IperfUdp):
    """``iperf3 -u -b RATE -l LEN``: the throttled, bursty sender (see the module docstring).

    Extra keys: ``pacing_timer`` (iperf3 ``--pacing-timer``, default 1000 us) and
    ``timer_slack`` (how late the timer wakes the client, default 50 us)."""

    kind = "iperf3-udp"
    KEYS = IperfUdp.KEYS | {"pacing_timer", "timer_slack"}
    PACING_TIMER = 1000e-6      # iperf3 --pacing-timer default (iperf3(1))
    CLIENT_CALLS = SERVER_CALLS = 0.0     # not counted: iperf3's UDP ends' calls were not measured
    TIMER_SLACK = 50e-6         # Linux default timer slack of a SCHED_OTHER task (prctl(2))

    def __init__(self, *args, pacing_timer: float = PACING_TIMER, timer_slack: float = TIMER_SLACK, **kw):
        super().__init__(*args, **kw)
        if not pacing_timer > 0:
            raise ConfigError(f"iperf3 --pacing-timer must be > 0, got {pacing_timer}",
                              key=f"workload.{self.name}.pacing_timer", fix='write e.g. pacing_timer = "1ms"')
        if not timer_slack >= 0:
            raise ConfigError(f"timer_slack must be >= 0, got {timer_slack}",
                              key=f"workload.{self.name}.timer_slack", fix='write e.g. timer_slack = "50us"')
        self.pacing_timer, self.timer_slack = pacing_timer, timer_slack

    @classmethod
    def from_spec(cls, t: dict) -> "Iperf3Udp":
        extra = {k: t[k] for k in ("pacing_timer", "timer_slack") if k in t}
        base = IperfUdp.from_spec({k: v for k, v in t.items() if k not in extra})
        try:
            kw = {k: units.time(v) for k, v in extra.items()}
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"bad iperf3 UDP option: {exc}", key=f"workload.{t.get('name')}",
                              fix='e.g. pacing_timer = "1ms", timer_slack = "50us"') from None
        return cls(rate_bps=base.rate_bps, length=base.length, duration=base.duration, start=base.start_at,
                   tos=base.tos, port=base.port, name=base.name, trace_every=base.trace_every, **kw)

    def start(self, ctx: RunContext) -> None:
        self.at_tick = False          # the first datagram goes at once (iperf3 starts green)
        super().start(ctx)            # its timer calls self._send at t0

    def _send(self, timer=None) -> None:
        """The client's wake-up at ``now``.  At a pacing tick it first checks the throttle
        (red: sleep to the next tick).  Then one sendto() (the datagram carries ``now``, read
        before it) and the throttle check with the bytes sent so far: green, the next
        datagram follows when this send is done; red, at the timer's next wake-up."""
        env = self.env
        now = env._now
        if now >= self.t_end - 1e-12:
            return
        t0 = self.t0
        if self.at_tick and not self.sent * self.length * 8 < self.rate_bps * (now - t0):
            self._arm(timer, self._next_tick(now))
            return
        buf = self.sndbuf
        if buf is not None and buf.alloc >= buf.limit:
            buf.wait(timer)                # sendmsg blocks (UdpSendBuffer); the write goes on at the wake-up
            self.at_tick = False
            return
        # the datagram and its sendto(), as IperfUdp._send does them (kept inline in both: shared
        # helpers cost the core benchmark, whose hot path IperfUdp._send is, ~1,200 instructions
        # per datagram, measured with callgrind)
        seq = self.sent
        pkt = Packet(self.flow, self.size, now, self.length, seq, None, 0, self.tos)
        if buf is not None:
            buf.charge(pkt)
        if self.trace_every and seq % self.trace_every == 0:
            pkt.stamps = {"app.send": now}
        src = self.src
        cpu = src.cpu
        done = now
        if self.send_cost and cpu is not None:
            # the sendto() runs on the sender's CPU; the next one cannot start before it ends
            done = (cpu.serve(now, self.send_cost, self.send_key) if self.send_thread is None else
                    cpu.run(self.send_thread, now, self.send_cost))
            if done is None:
                done = now + self.send_cost
            pkt.t = done
        self.sent = seq + 1
        src.sent += 1
        soft = self._carry(pkt)
        green = now > t0 and (seq + 1) * self.length * 8 < self.rate_bps * (now - t0)
        self.at_tick = not green          # green light: the next sendto() right away
        at = done if green else self._next_tick(now)
        if soft > at:
            at = soft                     # run to completion: this datagram's softirq work first
        self._arm(timer, at)

    def _next_tick(self, now: float) -> float:
        """When the pacing timer next wakes the client: its first tick after ``now`` (ticks at
        t0 + k * pacing_timer, iperf3's periodic timer) plus the timer slack."""
        p = self.pacing_timer
        k = max(1, int((now - self.timer_slack - self.t0) // p) + 1)
        at = self.t0 + k * p + self.timer_slack
        return at if at > now else at + p     # rounding must not give this wake-up again

    def _arm(self, timer, at: float) -> None:
        env = self.env
        if timer is None:
            timer = call_at(env, at, self._send)
            timer.arg = timer
        else:                             # the Call that has just fired, re-armed
            timer.callbacks = FIRE
            schedule(env, at, timer)

