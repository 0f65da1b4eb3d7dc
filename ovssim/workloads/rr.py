"""Request/response over UDP or TCP: the engine behind netperf UDP_RR, qperf *_lat and sockperf.

One client and one server; the client sends ``request``-byte messages, the server answers
with ``response`` bytes.

* ``closed`` loop (netperf UDP_RR/TCP_RR, qperf ``tcp_lat``/``udp_lat``, sockperf
  ``ping-pong``): one message in flight; the next leaves when the reply is read, but not
  sooner than ``1 / mps`` after the previous one (sockperf's ``--mps``; None = at once).
  A lost UDP message stops the exchange, as it stops netperf and qperf (they wait for the
  answer; ``lost`` counts it).
* ``open`` loop (sockperf ``under-load``): messages leave every ``1 / mps`` whatever comes
  back; every ``reply_every``-th asks the server for an answer (sockperf's
  ``--reply-every``, default 100) and only those give round trips.

UDP messages are single datagrams (``udp_frame_size``, one per message: sizes up to the
MTU); TCP ones are writes on one connection with TCP_NODELAY (as these tools set it),
read whole by the other side.  The round trip is from the client's send() to its reading
the whole reply.

Each message wakes its blocked reader before ``recvmsg`` returns (``sk_data_ready`` =
``sock_def_readable`` -> ``try_to_wake_up``, net/core/sock.c; TCP and UDP alike): the server
answers and the client reads the reply ``app.wakeup`` later (the run's profile, default 0), so a
closed-loop transaction pays two wake-ups, as netperf TCP_RR does (:mod:`.netperf`).

Each end's own system calls lie on its messages' path: the client's send() before its message
leaves and its recv() before it has the reply, the server's recv() and send() between the request
and the answer -- four per transaction, ``app.syscall`` each (the run's profile, default 0: a
user-mode-Linux instance's ptrace round trip), also booked as busy time on the caller's host.
sockperf ping-pong makes exactly these four (strace -c inside UML, TCP and UDP:
data/uml/2026-11-29/uml-rr; it times with the TSC, no clock calls).
"""
from __future__ import annotations

import numpy as np

from ..packet import FlowKey, Packet, udp_frame_size
from ..sched import call_at
from ..tcp import connect
from .base import Metric, RunContext, Workload


class _UdpServer:
    def __init__(self, ex: "Exchange"):
        self.ex = ex

    def put(self, pkt) -> None:
        self.ex._server_got(pkt.seq, pkt.meta, self.ex.env._now if pkt.t <= self.ex.env._now else pkt.t)


class _UdpClient:
    def __init__(self, ex: "Exchange"):
        self.ex = ex

    def put(self, pkt) -> None:
        now = self.ex.env._now
        self.ex._reply(pkt.seq, pkt.t if pkt.t > now else now)


class Exchange(Workload):
    """The request/response engine; the tools are thin classes over it."""

    kind = "rr"

    def __init__(self, *, proto: str = "udp", request: int = 1, response: int | None = None,
                 loop: str = "closed", mps: float | None = None, reply_every: int = 1,
                 length: float | None = None, start: float = 0.0, port: int = 12865,
                 cc: str | None = None, name: str | None = None):
        super().__init__(name)
        self.proto = proto
        self.request = int(request)
        self.response = int(response if response is not None else request)
        self.loop = loop
        self.mps = mps
        self.reply_every = max(1, int(reply_every))
        self.length = length
        self.start_offset = start
        self.port = port
        self.cc = cc
        self.rtts: list[float] = []
        self.sent = 0
        self.replies_expected = 0
        self._sent_at: dict[int, float] = {}
        self.wakeup = 0.0
        self.syscall = 0.0

    # -- set-up --------------------------------------------------------------------
    def start(self, ctx: RunContext) -> None:
        env = self.env = ctx.env
        self.wakeup = ctx.extra.get("app", {}).get("wakeup", 0.0)     # each reader's wake-up per message
        self.syscall = ctx.extra.get("app", {}).get("syscall", 0.0)   # each send() and recv() on the path
        self._cpus = (getattr(ctx.src, "cpu", None), getattr(ctx.dst, "cpu", None))
        self.t0 = max(env.now, ctx.start_at + self.start_offset)
        self.t1 = self.t0 + (self.length if self.length is not None else ctx.duration)
        if self.proto == "udp":
            cport = ctx.src.ephemeral_port()
            self.flow = FlowKey(ctx.src.name, ctx.dst.name, cport, self.port, "udp")
            self.rflow = FlowKey(ctx.dst.name, ctx.src.name, self.port, cport, "udp")
            self.src, self.dst = ctx.src, ctx.dst
            ctx.dst.bind("udp", self.port, _UdpServer(self))
            ctx.src.bind("udp", cport, _UdpClient(self))
        else:
            self.client, self.server = connect(env, ctx.src, ctx.dst, self.port, cc=self.cc, nodelay=True)
            self.client.sender.write_size = self.request
            self.server.sender.write_size = self.response
            self.server.receiver.on_deliver = self._tcp_server_reads
            self.client.receiver.on_deliver = self._tcp_client_reads
            self._srv_have = self._cli_have = 0
            self._srv_seq = 0
            self._awaiting: list[int] = []      # seqs whose replies the client still expects, in order
        call_at(env, self.t0, self._send)

    # -- the client ----------------------------------------------------------------------
    def _wants_reply(self, seq: int) -> bool:
        return self.loop == "closed" or seq % self.reply_every == 0

    def _send(self, _=None) -> None:
        now = self.env._now
        if now >= self.t1:
            return
        seq = self.sent
        self.sent += 1
        self._last_send = now
        want = self._wants_reply(seq)
        if want:
            self._sent_at[seq] = now
            self.replies_expected += 1
        s = self._calls(0, 1)                       # the client's send(): its message leaves at its end
        if self.proto == "udp":
            pkt = Packet(self.flow, udp_frame_size(self.request), now, self.request, seq, kind="request")
            pkt.meta = want
            if s:
                pkt.t = now + s
                call_at(self.env, pkt.t, self.src.send, pkt)
            else:
                self.src.send(pkt)
        else:
            if want:
                self._awaiting.append(seq)
            if s:
                call_at(self.env, now + s, self.client.write, self.request)
            else:
                self.client.write(self.request)
        if self.loop == "open":
            call_at(self.env, now + 1.0 / self.mps, self._send)

    def _reply(self, seq: int, now: float) -> None:
        t = self._sent_at.pop(seq, None)
        if t is None:
            return
        now += self.wakeup + self._calls(0, 1)      # the client woken to read it, its recv() returning
        if now <= self.t1:
            self.rtts.append(now - t)
        if self.loop == "closed":
            nxt = now if self.mps is None else max(now, self._last_send + 1.0 / self.mps)
            # a reply handed over ahead of the clock (lookahead elements) is read at its own time
            if nxt > self.env._now:
                call_at(self.env, nxt, self._send)
            else:
                self._send()

    # -- the server ------------------------------------------------------------------------
    def _server_got(self, seq: int, want, now: float) -> None:
        if not want:
            return
        now += self.wakeup + self._calls(1, 2)      # the server woken to read the request; recv(), send()
        pkt = Packet(self.rflow, udp_frame_size(self.response), now, self.response, seq, kind="response")
        pkt.t = now
        self.dst.send(pkt)

    def _tcp_server_reads(self, nbytes: int, now: float) -> None:
        self._srv_have += nbytes
        while self._srv_have >= self.request:
            self._srv_have -= self.request
            seq = self._srv_seq
            self._srv_seq += 1
            if not self._wants_reply(seq):
                continue
            delay = self.wakeup + self._calls(1, 2)     # the server woken to read the request; recv(), send()
            if delay:
                call_at(self.env, now + delay, self.server.write, self.response)
            else:
                self.server.write(self.response)

    def _tcp_client_reads(self, nbytes: int, now: float) -> None:
        self._cli_have += nbytes
        while self._cli_have >= self.response and self._awaiting:
            self._cli_have -= self.response
            self._reply(self._awaiting.pop(0), now)

    def _calls(self, end: int, n: int) -> float:
        """``n`` system calls of the client (``end`` 0) or the server (1): their time on the message's path,
        booked as busy time on that end's host."""
        if not self.syscall:
            return 0.0
        cpu = self._cpus[end]
        if cpu is not None:
            cpu.account(n * self.syscall)
        return n * self.syscall

    # -- results ---------------------------------------------------------------------------
    def lost_messages(self) -> int:
        """Requests that never got their answer (those sent in the run's last second may still be on their way)."""
        return sum(1 for t in self._sent_at.values() if t < self.t1 - 1.0)

    def rtt_ms(self) -> np.ndarray:
        return np.asarray(self.rtts) * 1e3

    def transactions_per_s(self) -> float:
        span = self.t1 - self.t0
        return len(self.rtts) / span if span > 0 else 0.0

    def metrics(self) -> list[Metric]:
        r = self.rtt_ms()
        tps = self.transactions_per_s()
        return [Metric("transactions", tps, "1/s"),
                Metric("rtt_mean", float(r.mean()) if r.size else float("nan"), "ms"),
                Metric("rtt_p50", float(np.percentile(r, 50)) if r.size else float("nan"), "ms"),
                Metric("rtt_p99", float(np.percentile(r, 99)) if r.size else float("nan"), "ms"),
                Metric("lost", float(self.lost_messages()), "messages")]

    def samples(self) -> dict[str, np.ndarray]:
        return {"rtt": self.rtt_ms()}
